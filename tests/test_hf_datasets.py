"""Hugging Face ``datasets`` tables in the dtype flow (facts/flow/hf_datasets.py): rows come back
as Python objects, so a float column read with ``torch.tensor`` is the default float dtype and
with ``np.array`` float64; columns of unknown type, and tables whose format is changed, stay
unknown. Also: slices of a list whose items are known (``text_encoders[:2]``)."""

from test_flow import Probe

HEADER = """
import functools
import numpy as np
import torch
from datasets import load_dataset
from transformers import CLIPTextModel
encoder = CLIPTextModel.from_pretrained("clip").to("cuda", dtype=torch.float16)
def embed(batch, model):
    return {"embeds": model(batch["input_ids"])[0], "ids": batch["input_ids"]}
"""


def test_float_column_read_back_is_default_float_and_numpy_float64():
    p = Probe(HEADER + """
def collate(rows):
    a = torch.tensor(rows[0]["embeds"])
    b = np.array([r["embeds"] for r in rows])
    c = torch.tensor(rows[0]["ids"])
    return {"a": a, "b": b, "c": c}
table = load_dataset("x")["train"].map(functools.partial(embed, model=encoder), batched=True)
for batch in torch.utils.data.DataLoader(table, collate_fn=collate):
    x = batch["a"]
    y = batch["b"]
    z = batch["c"]
""")
    assert p.value("x").dtype == "fp32" and "torch.tensor" in p.value("x").origin.text
    assert p.value("y").dtype == "fp64"
    assert p.value("z") is None  # token ids: an integer column, not followed


def test_transform_that_rewrites_a_column_and_set_format_leave_it_unknown():
    p = Probe(HEADER + """
def to_tensors(examples):
    examples["embeds"] = [torch.tensor(e, dtype=torch.float16) for e in examples["embeds"]]
    return examples
def collate(rows):
    return {"a": torch.tensor(rows[0]["embeds"])}
table = load_dataset("x")["train"].map(functools.partial(embed, model=encoder)).with_transform(to_tensors)
for batch in torch.utils.data.DataLoader(table, collate_fn=collate):
    x = batch["a"]
""")
    assert p.value("x") is None or not p.value("x").dtypes
    p = Probe(HEADER + """
def collate(rows):
    return {"a": torch.tensor(rows[0]["embeds"])}
table = load_dataset("x")["train"].map(functools.partial(embed, model=encoder))
table.set_format("torch")
for batch in torch.utils.data.DataLoader(table, collate_fn=collate):
    x = batch["a"]
""")
    assert p.value("x") is None or not p.value("x").dtypes


def test_default_collate_of_a_table_is_not_guessed():
    p = Probe(HEADER + """
table = load_dataset("x")["train"].map(functools.partial(embed, model=encoder))
for batch in torch.utils.data.DataLoader(table, batch_size=4):
    x = batch["embeds"]
""")
    assert p.value("x") is None or not p.value("x").dtypes


def test_slice_of_a_list_keeps_its_items():
    p = Probe("""
import torch
a = torch.nn.Linear(2, 2).half()
b = torch.nn.Linear(2, 2)
c = torch.nn.Linear(2, 2).bfloat16()
layers = [a, b, c]
head = layers[:2]
tail = layers[-1:]
stepped = layers[::2]
for layer in head:
    y = layer
""")
    assert [i.dtype for i in p.value("head", 7).items] == ["fp16", "fp32"]
    assert [i.dtype for i in p.value("tail", 8).items] == ["bf16"]
    assert p.value("stepped", 9) is None
    assert p.value("layer", 11).dtypes == {"fp16", "fp32"}


def test_columns_removed_renamed_or_selected_by_literal_names():
    p = Probe((HEADER + """
def both(batch):
    return {"embeds": encoder(batch["input_ids"])[0], "pooled": encoder(batch["input_ids"])[1]}
def collate(rows):
    return {"e": torch.tensor(rows[0]["embeds"]), "p": torch.tensor(rows[0]["pooled"]), "q": torch.tensor(rows[0]["pool"])}
base = load_dataset("x")["train"].map(both)
kept = concatenate_datasets([base.remove_columns(["image", "pooled"]), base.select_columns("pooled")], axis=1)
renamed = base.rename_column("pooled", "pool")
unknown = base.remove_columns(names)
for batch in torch.utils.data.DataLoader(kept, collate_fn=collate):
    e = batch["e"]
    p = batch["p"]
for batch in torch.utils.data.DataLoader(renamed, collate_fn=collate):
    q = batch["q"]
    p2 = batch["p"]
for batch in torch.utils.data.DataLoader(unknown, collate_fn=collate):
    e2 = batch["e"]
""").replace("from datasets import load_dataset", "from datasets import concatenate_datasets, load_dataset"))
    assert p.value("e").dtype == "fp32" and p.value("p").dtype == "fp32"
    assert p.value("q").dtype == "fp32" and p.value("p2") is None
    assert p.value("e2") is None


def test_rows_read_by_index_or_iteration():
    p = Probe(HEADER + """
table = load_dataset("x")["train"].map(functools.partial(embed, model=encoder))
first = torch.tensor(table[0]["embeds"])
for example in table:
    each = torch.tensor(example["embeds"])
for i, example in enumerate(table):
    counted = np.asarray(example["embeds"])
column = torch.tensor(table["embeds"])
""")
    assert p.value("first").dtype == "fp32"
    assert p.value("each").dtype == "fp32"
    assert p.value("counted").dtype == "fp64"
    assert p.value("column").dtype == "fp32"  # a float column's values, all rows
