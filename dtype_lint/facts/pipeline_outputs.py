"""A library object's component output, in the library's low dtype, converted to NumPy.

A diffusers pipeline loaded with ``torch_dtype=torch.bfloat16`` (a documented setting) runs its
components in bfloat16: ``self.vocoder(mel)`` gives a bfloat16 waveform, ``self.vae.decode(z)`` a
bfloat16 image (facts/lowp_contract.py, ``Contract.output_calls`` / ``output_methods``). NumPy has no
bfloat16, so ``.numpy()`` of such a tensor raises "Got unsupported ScalarType BFloat16"; the
pipelines convert with ``.float()`` first (huggingface/diffusers 90eac14):

    def mel_spectrogram_to_waveform(self, mel_spectrogram):
        waveform = self.vocoder(mel_spectrogram)
        waveform = waveform.cpu()
        return waveform                       # returned in the pipeline's dtype
    ...
    audio = self.mel_spectrogram_to_waveform(mel_spectrogram)
    audio = audio[:, :original_waveform_length]
    audio = audio.numpy()                     # fails for bfloat16

Decided syntactically, in the methods of one class under the contract: the component's output is
followed through the assignments that keep its dtype (``.cpu()``, slicing, ``.permute``,
arithmetic with numbers, ``.clamp``) to a ``.numpy()`` / ``np.asarray`` in the same method, or
to a ``return`` whose callers in the class convert what they get. Any cast on the way (``.float()``,
``.to(...)``), a rebinding from something else, or a value passed elsewhere ends the trail: silent.
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.own_dtype_components import class_contract
from dtype_lint.facts.training import walk

# Tensor methods that keep the dtype (a waveform or image on its way to NumPy).
KEEPING = frozenset(
    "cpu cuda detach contiguous clone squeeze unsqueeze permute reshape view flatten transpose clamp clamp_"
    " flip chunk repeat expand".split()
)
NUMPY_CONVERTERS = ("numpy.asarray", "numpy.array", "numpy.asanyarray")
OUTPUT_FIELDS = frozenset({"sample", "audios", "waveform"})


@dataclasses.dataclass(frozen=True)
class NumpyExport:
    at: cst.CSTNode  # where it is reported: the conversion, or the return that hands the tensor out
    source: cst.Call  # ``self.vocoder(mel_spectrogram)``
    conversion: cst.Call  # ``audio.numpy()``
    returned_by: str | None  # the method whose return hands it to the conversion's function
    why: str


def exports_in(ctx, cls: cst.ClassDef) -> list[NumpyExport]:
    contract = class_contract(ctx, cls)
    if contract is None or not (contract.output_calls or contract.output_methods):
        return []
    methods = {d.name.value: d for d in cls.body.body if isinstance(d, cst.FunctionDef)}
    found = []
    for method in methods.values():
        for source, sink, returned in _trails(ctx, method, lambda value: _component_output(value, contract)):
            if sink is not None:
                found.append(NumpyExport(sink, source, sink, None, contract.why))
                continue
            # returned: follow the value into the callers of this method in the class
            for caller in methods.values():
                calls = lambda value, name=method.name.value: _calls_method(value, name)
                for _, conversion, _ in _trails(ctx, caller, calls):
                    if conversion is not None:
                        found.append(NumpyExport(returned, source, conversion, method.name.value, contract.why))
                        break
                else:
                    continue
                break
    return found


def _component_output(value: cst.BaseExpression, contract) -> bool:
    """``self.vocoder(x)``, ``self.vae.decode(z).sample``, ``self.vae.decode(z, return_dict=False)[0]``."""
    node = value
    if isinstance(node, cst.Attribute) and node.attr.value in OUTPUT_FIELDS:
        node = node.value
    elif isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index) \
            and isinstance(node.slice[0].slice.value, cst.Integer) and node.slice[0].slice.value.value == "0":
        node = node.value
    if not isinstance(node, cst.Call):
        return False
    func = dotted_name(node.func) or ""
    parts = func.split(".")
    if len(parts) == 2 and parts[0] == "self" and parts[1] in contract.output_calls:
        return True
    return len(parts) == 3 and parts[0] == "self" and (parts[1], parts[2]) in contract.output_methods


def _calls_method(value: cst.BaseExpression, name: str) -> bool:
    return isinstance(value, cst.Call) and dotted_name(value.func) == f"self.{name}"


def _carried(node: cst.BaseExpression) -> str | None:
    """The name whose tensor ``node`` is, dtype unchanged, else None (a cast ends the trail)."""
    for _ in range(16):
        if isinstance(node, cst.Name):
            return node.value
        if isinstance(node, cst.Subscript):
            node = node.value
        elif isinstance(node, cst.BinaryOperation):
            left, right = node.left, node.right
            numeric = (cst.Integer, cst.Float)
            if isinstance(right, numeric) or isinstance(right, cst.UnaryOperation) and isinstance(right.expression, numeric):
                node = left
            elif isinstance(left, numeric):
                node = right
            else:
                return None
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in KEEPING:
            node = node.func.value
        else:
            return None
    return None


def _trails(ctx, method: cst.FunctionDef, starts):
    """(source, conversion or None, return node or None) for each value ``starts`` accepts that
    is assigned to a name in ``method`` and reaches a NumPy conversion or a ``return``."""
    order = ctx.source_order
    nodes = sorted((n for n in walk(method.body) if isinstance(n, (cst.Assign, cst.Call, cst.Return))),
                   key=lambda n: order(n)[0])
    results = []
    for start in nodes:
        if not (isinstance(start, cst.Assign) and len(start.targets) == 1 and isinstance(start.targets[0].target, cst.Name)
                and starts(start.value)):
            continue
        tracked = {start.targets[0].target.value}
        for node in nodes:
            if order(node)[0] <= order(start)[1]:
                continue
            if isinstance(node, cst.Assign):
                conversion = next((c for c in walk(node.value) if isinstance(c, cst.Call) and _converts(ctx, c, tracked)), None)
                if conversion is not None:  # ``audio = audio.numpy()``: read before it is rebound
                    results.append((start.value, conversion, None))
                    break
            if isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
                target = node.targets[0].target.value
                carried = _carried(node.value)
                if carried in tracked:
                    tracked.add(target)
                elif target in tracked:
                    tracked.discard(target)
                    if not tracked:
                        break
            elif isinstance(node, cst.Call) and _converts(ctx, node, tracked):
                results.append((start.value, node, None))
                break
            elif isinstance(node, cst.Return) and node.value is not None and _carried(node.value) in tracked:
                results.append((start.value, None, node.value))
                break
    return results


def _converts(ctx, call: cst.Call, tracked: set) -> bool:
    if isinstance(call.func, cst.Attribute) and call.func.attr.value == "numpy" and not call.args:
        return _carried(call.func.value) in tracked
    if call.args and ctx.names.matches(call.func, *NUMPY_CONVERTERS):
        return _carried(call.args[0].value) in tracked
    return False
