"""The runtime message table (runtime/dtype_errors.toml): each dtype error PyTorch raises, raised
for real on the installed torch, must read as recorded and map to its rule family.

A family that stops matching means confirm reports "nothing seen" after the very crash the
linter predicted (issue: the fp16 conv input's ``c10::Half`` message once matched nothing).
"""

import warnings

import pytest

from dtype_lint.runtime import messages

from conftest import ROOT

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

import torch  # noqa: E402  (the test extra installs it: fail loudly when absent)

TABLE = tomllib.loads((ROOT / "runtime" / "dtype_errors.toml").read_text())["error"]
ON_CPU = [entry for entry in TABLE if entry.get("cpu", True)]
KNOWN = {family.name for family in messages.FAMILIES}


def _raise(expression: str) -> str:
    """The first line of the error ``expression`` raises on this torch."""
    namespace = {
        "torch": torch,
        "nn": torch.nn,
        "F": torch.nn.functional,
        "f": torch.randn(2, 4),
        "h": torch.randn(2, 4).half(),
        "b": torch.randn(2, 4).bfloat16(),
    }
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            eval(expression, namespace)  # noqa: S307 - the table's own expressions
    except Exception as error:  # noqa: BLE001 - any exception type: the text is what is matched
        return str(error).splitlines()[0]
    finally:
        torch.autograd.set_detect_anomaly(False)
    pytest.fail(f"{expression} raised nothing on torch {torch.__version__}")


@pytest.mark.parametrize("entry", ON_CPU, ids=[entry["raise"][:60] for entry in ON_CPU])
def test_the_real_message_reads_as_recorded_and_maps_to_its_family(entry):
    message = _raise(entry["raise"])
    # `also`: the same call's message on another CPU backend (machine-dependent dispatch)
    assert message in [entry["message"], *entry.get("also", [])]
    family = messages.classify(message)
    assert family is not None and family.name == entry["family"], message


@pytest.mark.parametrize("entry", TABLE, ids=[entry["message"][:60] for entry in TABLE])
def test_every_recorded_message_maps_to_its_family(entry):
    assert entry["family"] in KNOWN
    for message in [entry["message"], *entry.get("also", [])]:
        family = messages.classify(message)
        assert family is not None and family.name == entry["family"], message
        assert family.codes  # a family with no rule can confirm nothing


def test_the_table_covers_every_family_and_mostly_on_the_cpu():
    assert {entry["family"] for entry in TABLE} == KNOWN
    assert len(ON_CPU) >= 50
