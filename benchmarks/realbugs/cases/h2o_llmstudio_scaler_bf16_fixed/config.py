from types import SimpleNamespace

cfg = SimpleNamespace(
    architecture=SimpleNamespace(backbone_dtype="bfloat16"),
    environment=SimpleNamespace(mixed_precision=True),
)
