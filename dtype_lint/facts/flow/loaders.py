"""What iterating a ``torch.utils.data.DataLoader`` gives: the dataset's ``__getitem__`` result,
collated the way the default ``collate_fn`` does (NumPy arrays become tensors of the same dtype,
tuples and dicts keep their shape). Real bugs this carries: a Dataset that returns float64
NumPy features (``np.loadtxt``, ``np.random.normal``) meets float32 weights in the training loop
("expected scalar type Double but found Float"; d2l-ai/d2l-en, HumanGaussian#18)."""

from __future__ import annotations

from dtype_lint.facts.flow.values import MAPPING, NUMPY, TENSOR, TUPLE, Value

DATA_LOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
# Wrappers that iterate like what they wrap (``for x, y in tqdm(loader)``).
PROGRESS_BARS = frozenset({"tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "tqdm.std.tqdm"})
LOADER = "loader"  # the ``info`` of a loader's value (a TUPLE whose ``element`` is one batch)


def collate(sample: Value | None) -> Value | None:
    """The batch the default collate makes of one ``__getitem__`` result (None: unknown)."""
    if sample is None:
        return None
    if sample.kind == NUMPY:
        return sample.replace(kind=TENSOR, info=None)  # same dtype and origins: ``from_numpy``
    if sample.kind == TENSOR:
        return sample
    if sample.kind == TUPLE and sample.items is not None and sample.info in (None, "list"):
        return sample.replace(items=tuple(collate(item) for item in sample.items), info=None)
    if sample.kind == MAPPING and sample.element is not None:
        items = tuple(collate(item) for item in sample.items) if sample.items is not None else None
        return sample.replace(element=collate(sample.element), items=items)
    return None
