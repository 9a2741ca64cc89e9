"""Plain dtype facts (issue 11 family 3, issue 13 shapes 2 and 6): DataLoader batches carry what
a Dataset's ``__getitem__`` returns, a ``dtype=`` parameter's default is one reachable
configuration, a name bound to a list indexes like a tensor, and 8-bit integer tensors are told
apart by where their dtype came from."""

from dtype_lint.facts.flow.loaders import collate
from dtype_lint.facts.flow.values import FP32, FP64, INT, NUMPY, TENSOR, TUPLE, make
from dtype_lint.rules.integer_overflow import narrow_int
from test_flow import Probe


def test_collate_turns_arrays_into_tensors_of_the_same_dtype():
    array = make(NUMPY, (FP64,))
    batch = collate(make(TUPLE, items=(array, make(TENSOR, (INT,)), None)))
    assert batch.kind == TUPLE
    assert [item.kind if item else None for item in batch.items] == [TENSOR, TENSOR, None]
    assert batch.items[0].dtype == FP64
    assert collate(None) is None
    assert collate(make(NUMPY, info="rng").replace(kind="module")) is None


def test_loader_batches_follow_getitem():
    p = Probe(
        """
        import numpy as np
        import torch
        from torch.utils.data import DataLoader, Dataset
        class Rows(Dataset):
            def __init__(self):
                self.x = np.random.normal(0, 1, (10, 4))
            def __getitem__(self, i):
                return self.x[i], torch.tensor(self.x[i], dtype=torch.float32)
        for raw, cast in DataLoader(Rows(), batch_size=2):
            pass
        for batch in DataLoader(Rows(), collate_fn=lambda rows: rows):
            pass
        """
    )
    assert p.value("raw", 10).dtype == FP64 and p.value("raw", 10).kind == TENSOR
    assert p.value("cast", 10).dtype == FP32
    assert p.value("batch", 12) is None  # a custom collate_fn: unknown


def test_constructor_dtype_default_is_a_partial_world_when_nobody_builds_it():
    p = Probe(
        """
        import torch
        class Whitening:
            def __init__(self, dtype=torch.float16, scale=2.0):
                self.dtype = dtype
            def __call__(self, x):
                y = x.to(self.dtype)
                return y
        def whiten(x, dtype=torch.float16):
            z = x.to(dtype)
            return z
        """
    )
    value = p.value("y", 7)
    assert value.dtypes == {"fp16"} and value.partial
    assert p.value("z", 10) is None  # a plain function's default stays unknown


def test_a_list_bound_to_a_name_is_marked_as_a_list():
    p = Probe(
        """
        rows = [0, 2]
        cell = (0, 2)
        """
    )
    assert p.value("rows", 2).info == "list"
    assert p.value("cell", 3).info is None


def test_narrow_int_reads_the_spelling_of_the_integer_dtype():
    p = Probe(
        """
        import torch
        a = torch.ones(3, dtype=torch.uint8)
        b = torch.rand(3).gt(0.5).to(torch.int8)
        c = torch.rand(3).gt(0.5).byte()
        d = torch.ones(3, dtype=torch.long)
        e = torch.ones(3, dtype=torch.uint8).float()
        """
    )
    assert narrow_int(p.ctx, p.value("a", 3)) == "uint8"
    assert narrow_int(p.ctx, p.value("b", 4)) == "int8"
    assert narrow_int(p.ctx, p.value("c", 5)) == "uint8"
    assert narrow_int(p.ctx, p.value("d", 6)) is None
    assert narrow_int(p.ctx, p.value("e", 7)) is None


def test_loader_through_tqdm_and_next_iter():
    p = Probe(
        """
        import numpy as np
        from torch.utils.data import DataLoader, Dataset
        from tqdm import tqdm
        class Rows(Dataset):
            def __getitem__(self, i):
                return np.random.normal(0, 1, 4)
        loader = DataLoader(Rows(), batch_size=2)
        for shown in tqdm(loader):
            pass
        first = next(iter(loader))
        """
    )
    assert p.value("shown", 9).dtype == FP64
    assert p.value("first", 11).dtype == FP64
