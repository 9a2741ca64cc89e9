"""Helpers of another file that cast, in place, a module (or a pipeline) they are given.

``Module.half()`` and ``.to(dtype)`` (and a diffusers pipeline's ``.to(device, dtype=...)``) change
the caller's object: an evaluator whose ``evaluate(self, model, half=False)`` does
``model = model.half()`` under ``if half`` halves the very model a ``Trainer`` goes on training
(YOLOX), and a ``log_validation(pipeline, ..., torch_dtype)`` that does
``pipeline.to(device, dtype=torch_dtype)`` recasts the module being trained that the pipeline
holds (diffusers#9565). Within one file the flow follows such calls (facts/passed_models.py,
facts/pipelines.py); across files the summaries' casts of a parameter (``param:model``) are
joined here with the calls other files make of those functions and methods, and the caller's
file is re-checked knowing what the call does (``Helper``). Whether the caller passes the model
it trains, from a training loop, is then judged by the caller's own flow.
"""

from __future__ import annotations

import dataclasses
import posixpath


@dataclasses.dataclass(frozen=True)
class Helper:
    """``function`` casts its parameter ``param`` (argument ``position`` as callers write it) to
    ``dtype``, or to the dtype its parameter ``dtype_param`` receives, when ``flag`` (a
    parameter of it) is true, or always when ``flag`` is None."""

    function: str
    param: str
    position: int
    dtype: str | None
    dtype_param: str | None
    dtype_position: int | None
    flag: str | None
    flag_position: int | None
    flag_default: bool  # the flag defaults to True: a caller that leaves it out switches it on
    path: str
    line: int
    text: str

    def where(self, base: str = "") -> str:
        from dtype_lint.project.worlds import World

        return World("fp16", False, None, self.path, self.line, self.text).where(base)

    def describe(self, base: str = "") -> str:
        """```COCOEvaluator.evaluate` (evaluator.py:13, `model.half()`)```."""
        return f"`{self.function}` ({self.where(base)}, `{self.text}`)"

    def sort_key(self) -> tuple:
        return (self.path, self.line, self.function, self.param, self.text)


def _helper(path: str, owner: str, info: dict, cast: dict) -> Helper | None:
    refs = [f"param:{cast['param_at_cast']}"] if cast.get("param_at_cast") else cast["refs"]
    if cast.get("rebound") or len(refs) != 1 or not refs[0].startswith("param:"):
        return None
    params = list(info["params"])
    shift = 1 if cast.get("class") and params and params[0] in ("self", "cls") else 0
    param = refs[0][len("param:"):]
    if param not in params or params.index(param) < shift or param in info.get("restored", ()):
        return None  # not a caller's argument, or cast back before returning
    dtype, dtype_param = cast.get("dtype"), None
    if not isinstance(dtype, str):
        return None  # a cast whose dtype the summary does not know (a framework hand-off, say)
    if dtype.startswith("param:"):
        dtype, dtype_param = None, dtype[len("param:"):]
        if dtype_param not in params:
            return None
    flag = cast.get("condition")
    if flag is not None and flag not in params:
        if not cast.get("precision_flag"):
            return None  # a condition of the helper's own state: not the caller's to decide
        flag = None  # its own precision switch (``half = device.type != 'cpu'``): on where it is meant to be
    position = {name: index - shift for index, name in enumerate(params)}
    return Helper(
        function=owner, param=param, position=position[param], dtype=dtype, dtype_param=dtype_param,
        dtype_position=position.get(dtype_param) if dtype_param else None, flag=flag,
        flag_position=position.get(flag) if flag else None, flag_default=bool(flag) and flag in info.get("true_defaults", ()),
        path=path, line=cast["line"], text=cast["text"],
    )


def project_helpers(project) -> dict[str, dict[str, list[Helper]]]:
    """path -> the dotted name a call of that file spells -> the helpers of other files it runs."""
    by_function: dict[tuple[str, str], list[Helper]] = {}
    for path, summary in project.summaries.items():
        for cast in summary["casts"]:
            owner = cast.get("owner")
            info = summary["functions"].get(owner) if owner else None
            helper = _helper(path, owner, info, cast) if info is not None else None
            if helper is not None:
                by_function.setdefault((path, owner), []).append(helper)
    if not by_function:
        return {}
    found: dict[str, dict[str, set[Helper]]] = {}
    for path, summary in project.summaries.items():
        for name in summary.get("calls", ()):
            for kind, where, function in project.resolve(path, name):
                if kind == "function" and where != path:
                    found.setdefault(path, {}).setdefault(name, set()).update(by_function.get((where, function), ()))
        for call in summary.get("method_calls", ()):
            for where, cls in sorted(project.classes_of(path, call["refs"])):
                if where != path:
                    helpers = by_function.get((where, f"{cls}.{call['method']}"), ())
                    found.setdefault(path, {}).setdefault(call["name"], set()).update(helpers)
    return {path: {name: sorted(items, key=Helper.sort_key) for name, items in sorted(calls.items()) if items}
            for path, calls in sorted(found.items()) if any(calls.values())}


HELPER_CAST_RULE = "DTL405"


def at_the_casts(reports: list, helpers: dict[str, dict[str, list[Helper]]], work: list) -> list:
    """``reports`` with each helper's cast reported in its own file too, where a caller's finding
    (DTL405 at the training step that goes on with the cast model) names it: the fix belongs in
    the helper (cast the model back before returning, or cast a copy), and a reader of the helper
    sees why its ``model.half()`` is wrong. One finding per cast, naming its first caller."""
    import dataclasses

    from dtype_lint.findings import Confidence, Finding
    from dtype_lint.source import UndecodableSource, decode
    from dtype_lint.suppress import FileSuppressions

    wanted: dict[tuple[str, int], tuple[Helper, str, object]] = {}
    for report in reports:
        handed = helpers.get(report.path)
        if not handed:
            continue
        base = posixpath.dirname(report.path)
        for finding in report.findings:
            if finding.code != HELPER_CAST_RULE:
                continue
            for helper in sorted({h for items in handed.values() for h in items}, key=Helper.sort_key):
                if helper.describe(base) in finding.message:
                    wanted.setdefault((helper.path, helper.line), (helper, report.path, finding))
    if not wanted:
        return reports
    reports = list(reports)
    for index, report in enumerate(reports):
        mine = sorted((key, value) for key, value in wanted.items() if key[0] == report.path)
        if not mine or report.internal_errors:
            continue
        settings, fs_path = work[index][2], work[index][1]
        if not settings.is_selected(HELPER_CAST_RULE, report.path) or Confidence.MEDIUM < settings.min_confidence:
            continue
        try:
            with open(fs_path, "rb") as handle:
                text = decode(handle.read()).text
        except (OSError, UndecodableSource):
            continue
        lines = text.splitlines()
        suppressions = FileSuppressions(text, lines)
        added = []
        for (_, line), (helper, caller, finding) in mine:
            if not 1 <= line <= len(lines) or any(f.code == HELPER_CAST_RULE and f.line == line for f in report.findings):
                continue
            column = lines[line - 1].find(helper.text)
            if column < 0 or suppressions.suppresses(HELPER_CAST_RULE, line, line):
                continue
            caller_where = posixpath.relpath(caller, posixpath.dirname(report.path) or ".")
            added.append(Finding(
                code=HELPER_CAST_RULE, name="eval-dtype-flip",
                message=(f"`{helper.function}` casts the `{helper.param}` it is given with `{helper.text}` and never casts"
                         f" it back, but {caller_where}:{finding.line} goes on training with the module it passes"
                         f" (the same object: the cast works in place). Cast it back before returning, or cast a copy"),
                line=line, column=column + 1, end_line=line, end_column=column + 1 + len(helper.text),
                confidence=Confidence.MEDIUM, path=report.path,
            ))
        if added:
            from dtype_lint.findings import sort_findings

            reports[index] = dataclasses.replace(report, findings=sort_findings([*report.findings, *added]),
                                                 lines=report.lines if report.lines is not None else lines)
    return reports
