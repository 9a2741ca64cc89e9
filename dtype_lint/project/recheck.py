"""The project pass in the check pipeline: summaries -> worlds -> files re-checked under them.

After every file has been checked on its own (each report carrying its summary), the summaries
are joined (``worlds.py``); each file that defines a class some other unit casts to low precision
is checked once more with those worlds seeded into its dtype flow (facts/flow/seeding.py). What that
second check finds beyond the first, from the rules that judge numerics and dtype mismatches,
and inside a class that has a world, is added to the file's report, its message naming the world.
A world a framework trains in (Lightning's "16-true": no float32 master weights) also brings the
training rules into the class; a helper given a cast-built instance by a caller in another file
(``make_optimizer(args, Model(args))``) gets the training rules, and the numerics ones when the
whole instance is cast.
A file that calls project functions of other files is checked again with what they return
(their summaries' ``results``) at those calls, and a class whose constructor callers pass such a
result with it inside ``__init__``; what the value and mismatch rules (VALUE_RULES) then find,
naming the function in the value's origin, is added too.
Results are cached per file under a key of its bytes and its worlds: editing a file re-checks
it, and the files whose worlds its edit changes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import posixpath
import re

from dtype_lint.facts.config_values import Setting
from dtype_lint.facts.flow import checkpoint_loads
from dtype_lint.facts.flow.seeding import (
    RETURNED_BY, AutocastWorld, ClassWorld, FileWorlds, PartWorld, ReturnedResult, ReturnedWorld, relative,
)
from dtype_lint.findings import Confidence, Finding, sort_findings
from dtype_lint.project import checkpoints
from dtype_lint.project.contexts import call_contexts
from dtype_lint.project.helpers import at_the_casts, project_helpers
from dtype_lint.project.data_files import merge_indexes, read_data_file
from dtype_lint.project.worlds import Entered, Project, Returned, ReturnedValue, World
from dtype_lint.unused_noqa import CODE as UNUSED_NOQA

# Rules whose verdict depends on the dtype a class runs in: numerics, operand and input mismatches.
# (DTL107 is left out: under a world, operands the flow only knows as unions, such as a router's
# float32-or-bfloat16 scores, gave false mismatches on unseen code.)
WORLD_RULES = frozenset({
    "DTL101", "DTL501", "DTL502", "DTL503", "DTL504", "DTL506", "DTL508", "DTL509",
})
# DTL503 ops a half model runs in float16 by design (torch's kernels accumulate them in float32):
# only the overflowing ones (exp, pow, var, norm, prod) are reported under a world.
BY_DESIGN_OPS = ("softmax", "log_softmax", "cumsum", "cumprod")
LOW_ORDER = ("fp16", "bf16")
ASSIGNED = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=[^=]")  # ``name = ...`` (for messages)
# Rules about training a model in low precision: a model a helper returns cast is trained here.
# Rules that judge a value against where it goes: a tensor a project function returns, or one a
# caller passes to a constructor, meets a module, a loss or an op of another dtype.
VALUE_RULES = frozenset({"DTL101", "DTL105", "DTL107", "DTL108", "DTL114"})
TRAINING_RULES = frozenset({"DTL302", "DTL401", "DTL403", "DTL404", "DTL405"})
# Rules that judge what a loaded checkpoint holds (project/checkpoints.py): a half module run on
# float inputs or on the CPU, half tensors assigned into float32 parameters.
CHECKPOINT_RULES = frozenset({"DTL101", "DTL602", "DTL709"})
# Rules about a helper of another file casting the trained model or pipeline it is given (helpers.py).
HELPER_RULES = frozenset({"DTL403", "DTL405"})
# Rules whose verdict inside a function depends on the dtypes its callers pass (contexts.py):
# operand, index, input and kernel mismatches.
CONTEXT_RULES = frozenset({"DTL101", "DTL104", "DTL107", "DTL108", "DTL109", "DTL508", "DTL509"})
MAX_SAVES = 64  # low-precision checkpoint entries handed to each loading file (keeps the pass linear)  # float16 first: it overflows, so it is the riskier world
# Rules that judge where a part of a model, cast apart from the rest, meets it (module inputs,
# operands of one op).
PART_RULES = frozenset({"DTL101", "DTL107", "DTL108"})


def class_world(worlds: list[World], base: str = "") -> ClassWorld:
    """One world to check a class under: float16 if any world is, described by its first cast."""
    dtype = next(d for d in LOW_ORDER if any(w.dtype == d for w in worlds))
    chosen = [w for w in worlds if w.dtype == dtype]
    certain = all(w.dtype == dtype and not w.conditional for w in worlds)
    first = chosen[0]
    more = len({(w.path, w.line) for w in worlds}) - 1
    description = first.describe(base) + (f" and {more} other cast{'s' if more > 1 else ''}" if more else "")
    # a callback world only when every world is one (a class also cast whole runs all its methods so)
    methods = tuple(sorted({m for w in worlds for m in w.methods})) if all(w.methods for w in worlds) else ()
    return ClassWorld(dtype=dtype, certain=certain, description=description, cast=first.where(base),
                      trains=any(w.trains for w in chosen), methods=methods)


def autocast_world(items: list[Entered], base: str = "") -> AutocastWorld:
    """One autocast region to check a class (or function) under: float16 if any is, described by
    the first; the methods any of them runs (all, when one reaches it as a submodule)."""
    dtype = next(d for d in LOW_ORDER if any(i.world.dtype == d for i in items))
    chosen = [i for i in items if i.world.dtype == dtype]
    first = chosen[0]
    certain = all(i.world.dtype == dtype and not i.world.conditional for i in items)
    more = len({(i.world.path, i.world.line) for i in items}) - 1
    description = first.world.describe(base) + (f" and {more} other region{'s' if more > 1 else ''}" if more else "")
    entries = () if any(not i.entries for i in items) else tuple(sorted({m for i in items for m in i.entries}))
    return AutocastWorld(dtype=dtype, device=first.device, certain=certain, description=description,
                         entries=entries, activations=any(i.activations for i in chosen))


def argument_world(worlds: list[World], base: str = "") -> ClassWorld:
    """The low dtype a constructor keyword is given (float16 first), and where."""
    first = next(w for d in LOW_ORDER for w in worlds if w.dtype == d)
    return ClassWorld(dtype=first.dtype, certain=False, description=first.describe(base), cast=first.where(base))


def returned_world(items: list[Returned], call: str, base: str = "") -> ReturnedWorld:
    """One returned model per call: float16 if any cast is, described by its first cast."""
    dtype = next(d for d in LOW_ORDER if any(r.world.dtype == d for r in items))
    first = next(r for r in items if r.world.dtype == dtype)
    certain = all(r.world.dtype == dtype and not r.world.conditional and not r.partial for r in items)
    what = "a model" if first.position < 0 else f"a model (item {first.position})"
    if first.partial:
        what += " in part"
    description = f"`{call}()` {'builds' if first.built else 'returns'} {what} in {first.world.describe(base)}"
    return ReturnedWorld(dtype=dtype, certain=certain, position=first.position, length=first.length,
                         description=description, cast=first.world.where(base), partial=first.partial)


def part_world(worlds: list[World], base: str = "") -> PartWorld:
    """One dtype for a submodule cast apart, chosen as ``class_world`` chooses one for a class."""
    world = class_world(worlds, base)
    first = next(w for w in worlds if w.dtype == world.dtype)
    return PartWorld(dtype=world.dtype, certain=world.certain, description=world.description,
                     origin=f"{first.where(base)} (`{first.text}`)")


def built_world(worlds: list[World], call: str, base: str = "") -> PartWorld:
    """A project class of another file whose model keeps low parts (``Project.built``)."""
    world = part_world(worlds, base)
    return dataclasses.replace(world, description=f"`{call}()` builds a model with a part in {world.description}")


def apply_worlds(reports: list, work: list, jobs: int, data: list = ()) -> list:
    """``reports`` with the findings of each file under its project worlds added. ``data``: the
    config data files checked with them (``(display, fs_path)``), read for their settings."""
    from dtype_lint.pool import run_pool

    summaries = {report.path: report.summary for report in reports if report.summary}
    # where each checked file is on disk: configuration files are named relative to it
    files = {report.path: work[index][1] for index, report in enumerate(reports)}
    project = Project(summaries, files)
    config = project.config_values(merge_indexes(read_data_file(fs_path, display) for display, fs_path in data))
    by_file: dict[str, dict] = {}
    for (path, name), worlds in project.worlds().items():
        by_file.setdefault(path, {})[name] = worlds
    returned = project.returned()
    arguments: dict[str, dict] = {}
    for (path, name), by_keyword in project.arguments().items():
        arguments.setdefault(path, {})[name] = by_keyword
    saves = checkpoints.project_saves(summaries)[:MAX_SAVES]
    helpers = project_helpers(project)
    parameters = project.parameters()
    values = project.values()
    weighted = project.weighted()
    argument_values: dict[str, dict] = {}
    for (path, name), by_keyword in project.argument_values().items():
        argument_values.setdefault(path, {})[name] = by_keyword
    parts: dict[str, dict] = {}
    for (path, name), by_attr in project.parts().items():
        if (path, name) not in project_worlds_of(by_file, path, name):
            parts.setdefault(path, {})[name] = by_attr
    built = project.built()
    bound: dict[str, dict] = {}
    for (path, name), worlds in project.bound().items():
        bound.setdefault(path, {})[name] = worlds
    contexts: dict[str, dict[str, list]] = {}
    for (path, function), found in call_contexts(project).items():
        contexts.setdefault(path, {})[function] = found
    under_autocast: dict[str, dict] = {}
    functions_under: dict[str, dict] = {}
    class_regions = project.autocast_worlds()
    for (path, name), items in class_regions.items():
        under_autocast.setdefault(path, {})[name] = items
    for (path, name), items in project.autocast_functions(class_regions).items():
        functions_under.setdefault(path, {})[name] = items
    if not (by_file or returned or arguments or saves or helpers or parameters or config or values or argument_values
            or parts or built or bound or contexts or under_autocast):
        return reports
    tasks = []
    for index, report in enumerate(reports):
        worlds, calls = by_file.get(report.path, {}), returned.get(report.path, {})
        given = arguments.get(report.path, {})
        base = posixpath.dirname(report.path)
        loads = None
        if saves and report.summary and checkpoints.loads_checkpoints(report.summary):
            loads = checkpoint_loads.CheckpointWorld(tuple((saved, saved.describe(base)) for saved in saves))
        handed = helpers.get(report.path, {})
        settings_read = config.get(report.path, {})
        passed = parameters.get(report.path, {})
        results, given_results = values.get(report.path, {}), argument_values.get(report.path, {})
        cast_apart, builds = parts.get(report.path, {}), built.get(report.path, {})
        forwards = bound.get(report.path, {})
        called = contexts.get(report.path, {})
        regions, under_functions = under_autocast.get(report.path, {}), functions_under.get(report.path, {})
        if not (worlds or calls or given or loads or handed or passed or settings_read or results or given_results
                or cast_apart or builds or forwards or called or regions or under_functions) or report.internal_errors:
            continue
        display, fs_path, settings, _, cache, _ = work[index]
        file_worlds = FileWorlds(
            classes={name: class_world(found, base) for name, found in sorted(worlds.items())},
            returned={call: returned_world(items, call, base) for call, items in sorted(calls.items())},
            arguments={name: {keyword: argument_world(found, base) for keyword, found in by_keyword.items()}
                       for name, by_keyword in sorted(given.items())},
            checkpoints=loads,
            helpers=handed,
            parameters={function: {param: returned_world(items, items[0].function, base)
                                   for param, items in by_param.items()}
                        for function, by_param in sorted(passed.items())},
            config={key: [[value, _relative(where, base)] for value, where in values]
                    for key, values in settings_read.items()},
            values={call: tuple(_returned_result(item, base) for item in items) for call, items in sorted(results.items())},
            argument_values={name: {keyword: tuple(_returned_result(item, base) for item in items)
                                    for keyword, items in by_keyword.items()}
                             for name, by_keyword in sorted(given_results.items())},
            parts=_with_contained({name: {attr: part_world(found, base) for attr, found in sorted(by_attr.items())}
                                   for name, by_attr in sorted(cast_apart.items())}, report.summary, worlds),
            built={call: built_world(found, call, base) for call, found in sorted(builds.items())},
            functions={name: class_world(found, base) for name, found in sorted(forwards.items())},
            autocast={name: autocast_world(items, base) for name, items in sorted(regions.items())},
            autocast_functions={name: autocast_world(items, base) for name, items in sorted(under_functions.items())},
            weighted=frozenset(weighted.get(report.path, ())),
        )
        ranges = {name: report.summary["classes"][name]
                  for name in {*file_worlds.classes, *file_worlds.arguments, *file_worlds.argument_values,
                               *file_worlds.parts, *file_worlds.autocast}
                  if name in report.summary["classes"]}
        ranges.update({function: {"line": info["line"], "end": info.get("end", info["line"]), "methods": {}}
                       for function, info in report.summary["functions"].items()
                       if function in file_worlds.parameters or function in file_worlds.functions
                       or function in file_worlds.autocast_functions})
        plain = sorted({(f.code, f.line, f.column) for f in report.findings})
        functions = {name: (report.summary["functions"][name]["line"], report.summary["functions"][name]["end"])
                     for name in called}
        tasks.append((index, display, fs_path, settings, cache, _variants(file_worlds, called), ranges, plain,
                      (called, functions)))
    results = run_pool(_recheck, tasks, jobs, _recheck_crashed)
    reports = list(reports)
    for task, (added, errors, lines, used_noqa) in zip(tasks, results):
        index = task[0]
        report = reports[index]
        if not added and not errors and not used_noqa:
            continue
        kept = [f for f in report.findings if f.code != UNUSED_NOQA or (f.line, f.column) not in used_noqa]
        reports[index] = dataclasses.replace(
            report,
            findings=sort_findings([*kept, *added]),
            internal_errors=[*report.internal_errors, *errors],
            lines=report.lines if report.lines is not None else lines,
        )
    return at_the_casts(reports, helpers, work)


def _returned_result(value: ReturnedValue, base: str) -> ReturnedResult:
    where = relative(value.path, base)
    caller = f"{relative(value.caller, base)}:{value.line}" if value.caller else ""
    return ReturnedResult(function=value.function, where=where, result=value.result, caller=caller)




def _variants(file_worlds: FileWorlds, called: dict[str, list]) -> list[FileWorlds]:
    """The checks a file gets: one per calling context of its most-called function (its other
    functions take their i-th context, if any, in the i-th check), the worlds in each."""
    count = max((len(found) for found in called.values()), default=1)
    return [dataclasses.replace(file_worlds, contexts={name: found[i] for name, found in sorted(called.items())
                                                        if i < len(found)})
            for i in range(count)]


def _world_key(settings, variants: list[FileWorlds], plain: list) -> str:
    data = json.dumps([[v.key() for v in variants], plain, int(settings.min_confidence)], sort_keys=True)
    return hashlib.sha256(data.encode()).hexdigest()


def _recheck_crashed(task, reason: str) -> tuple[list[Finding], list[str], None, set]:
    display = task[1]
    return [], [f"{display}: internal error in the project pass: {reason}"], None, set()


def _recheck(task) -> tuple[list[Finding], list[str], list[str] | None, set[tuple[int, int]]]:
    """(findings added by the worlds and the calling contexts, internal errors, the file's lines,
    the places of the file's DTL002 findings whose comment a finding under a world used)."""
    from dtype_lint.source import UndecodableSource, decode

    _, display, fs_path, settings, cache, variants, ranges, plain, (called, functions) = task
    try:
        with open(fs_path, "rb") as handle:
            data = handle.read()
        text = decode(data).text
    except (OSError, UndecodableSource):
        return [], [], None, set()
    # DTL002 (unused-noqa): a comment is unused only if no world used it either. Not cached: the
    # world entries hold findings, not the comments they used (and DTL002 is opt-in).
    unused_noqa = {(line, column) for code, line, column in plain if code == UNUSED_NOQA}
    plain_unused = set(unused_noqa)
    if cache is not None and not settings.is_selected(UNUSED_NOQA, display):
        cache = cache.for_settings(settings)
        key = _world_key(settings, variants, plain)
        cached = cache.load_world(display, data, key)
        if cached is not None:
            return cached, [], text.splitlines() if cached else None, set()
    else:
        cache = None
    known = {tuple(item) for item in plain}
    added: list[Finding] = []
    # (code, line, column) -> (finding, function, the contexts it is found under)
    under_contexts: dict[tuple, tuple[Finding, str, list]] = {}
    base = posixpath.dirname(display)
    for file_worlds in variants:
        found, errors = _check_under(text, display, settings, file_worlds)
        if errors:
            return [], errors, None, set()
        unused_noqa &= {(f.line, f.column) for f in found if f.code == UNUSED_NOQA}
        for finding in found:
            place = (finding.code, finding.line, finding.column)
            if place in known or finding.code == UNUSED_NOQA:
                continue
            function = _function_at(functions, file_worlds.contexts, finding.line)
            in_context = function is not None and finding.code in CONTEXT_RULES
            # a class's world (its instances cast) explains a finding first; else a calling context
            world_finding = _in_world(finding, file_worlds, ranges, settings, base, text, settings_last=not in_context)
            if world_finding is not None:
                known.add(place)
                under_contexts.pop(place, None)
                added.append(world_finding)
                continue
            if in_context:
                entry = under_contexts.setdefault(place, (finding, function, []))
                entry[2].append(file_worlds.contexts[function])
    for finding, function, contexts in under_contexts.values():
        # high: the finding holds under every context the function is called in, each certain
        certain = len(contexts) == len(called[function]) and all(c.certain for c in contexts)
        confidence = min(finding.confidence, Confidence.HIGH if certain else Confidence.MEDIUM)
        if confidence < settings.min_confidence:
            continue
        prefix = contexts[0].describe(function, base)
        added.append(dataclasses.replace(finding, message=f"{prefix}: {finding.message}", confidence=confidence))
    added = sort_findings(added)
    if cache is not None:
        cache.store_world(display, data, key, added, fs_path)
    return added, [], text.splitlines() if added else None, plain_unused - unused_noqa


def rules_that_count(file_worlds: FileWorlds) -> frozenset[str] | None:
    """The codes whose findings the re-check under ``file_worlds`` can keep (what ``_in_world``
    and the calling contexts accept), so that no other rule runs; None: any code (a finding
    found with the config settings the file reads is kept whatever its rule)."""
    if file_worlds.config:
        return None
    codes: set[str] = set()
    if file_worlds.parameters or file_worlds.returned:
        codes |= WORLD_RULES | TRAINING_RULES
    if file_worlds.classes:
        codes |= WORLD_RULES | (TRAINING_RULES if any(w.trains for w in file_worlds.classes.values()) else set())
    if file_worlds.functions or file_worlds.autocast or file_worlds.autocast_functions or file_worlds.arguments:
        codes |= WORLD_RULES
    if file_worlds.parts:
        codes |= PART_RULES
    if file_worlds.checkpoints is not None:
        codes |= CHECKPOINT_RULES
    if file_worlds.helpers:
        codes |= HELPER_RULES
    if file_worlds.values or file_worlds.argument_values:
        codes |= VALUE_RULES
    if file_worlds.built:
        codes |= TRAINING_RULES | {"DTL301"}
    if file_worlds.contexts:
        codes |= CONTEXT_RULES
    return frozenset(codes)


def _check_under(text: str, display: str, settings, file_worlds: FileWorlds) -> tuple[list[Finding], list[str]]:
    from dtype_lint.engine import check_text

    try:
        report = check_text(text, display, settings, prefilter=False, worlds=file_worlds,
                            only=rules_that_count(file_worlds))
    except Exception as error:  # noqa: BLE001 - reported, never a traceback
        return [], [f"{display}: internal error in the project pass: {type(error).__name__}: {error}"]
    return report.findings, report.internal_errors


def _function_at(functions: dict, contexts: dict, line: int) -> str | None:
    """The innermost function with a calling context in this check whose lines hold ``line``."""
    holding = [(start, name) for name, (start, end) in functions.items() if name in contexts and start <= line <= end]
    return max(holding)[1] if holding else None


def _in_world(finding: Finding, file_worlds: FileWorlds, ranges: dict, settings, base: str, text: str,
              settings_last: bool = True) -> Finding | None:
    """A finding of the re-check worded by the world, returned model or value, constructor
    argument, checkpoint, helper, cast-built parameter or (``settings_last``: as the last resort)
    config setting it comes from; None when it comes from none."""
    if finding.code == "DTL503" and finding.message.split("`")[1].endswith(BY_DESIGN_OPS):
        return None
    located = _enclosing(ranges, finding.line)
    if located is not None and located[0] in file_worlds.parameters:
        # a helper of this file given a cast-built instance by a caller in another file
        param, world = sorted(file_worlds.parameters[located[0]].items())[0]
        if finding.code not in (TRAINING_RULES if world.partial else WORLD_RULES | TRAINING_RULES):
            return None
        prefix = f"`{located[0]}` gets `{param}` from a caller in another file: {world.description}"
        confidence = min(finding.confidence, Confidence.HIGH if world.certain else Confidence.MEDIUM)
        if confidence < settings.min_confidence:
            return None
        return dataclasses.replace(finding, message=f"{prefix}: {finding.message}", confidence=confidence)
    world = file_worlds.classes.get(located[0]) if located is not None else None
    rules = WORLD_RULES | TRAINING_RULES if world is not None and world.trains else WORLD_RULES
    under = _autocast_of(file_worlds, located) if located is not None else None
    if located is not None and located[0] in file_worlds.functions and finding.code in WORLD_RULES:
        world = file_worlds.functions[located[0]]
        prefix, certain = f"`{located[0]}` runs as the forward of modules in {world.description}", world.certain
    elif world is not None and finding.code in rules:
        name, method = located
        where = f"{name}.{method}" if method else name
        prefix, certain = f"`{where}` runs in {world.description}", world.certain
    elif under is not None and finding.code in WORLD_RULES:
        name, method = located
        where = f"{name}.{method}" if method else name
        prefix, certain = f"`{where}` runs under {under.description}", under.certain
    elif located is not None and finding.code in WORLD_RULES and located[0] in file_worlds.arguments:
        name = located[0]
        keyword, world = sorted(file_worlds.arguments[name].items())[0]
        prefix, certain = f"`{name}` gets `{keyword}` {world.description} from a caller", False
    elif located is not None and finding.code in PART_RULES and located[0] in file_worlds.parts:
        name, method = located
        named = _part_named(file_worlds.parts[name], finding.message)
        if named is None:
            return None  # a class held by a parted class: its own findings are not the part's
        attr, world = named
        where = f"{name}.{method}" if method else name
        prefix, certain = f"`{where}` runs with `self.{attr}` in {world.description}", world.certain
    elif file_worlds.checkpoints is not None and finding.code in CHECKPOINT_RULES \
            and "the checkpoint saved at" in finding.message:
        prefix, certain = "", False  # the message names the save through the value's origin
    elif file_worlds.helpers and finding.code in HELPER_RULES and any(
            helper.where(base) in finding.message for items in file_worlds.helpers.values() for helper in items):
        prefix, certain = "", False  # the message names the helper's cast
    elif finding.code in VALUE_RULES and _names_a_result(finding.message, file_worlds):
        # the message already says where the value comes from ("returned by `load_inputs()`")
        return finding
    elif file_worlds.returned and finding.code in WORLD_RULES | TRAINING_RULES:
        # the world whose cast the finding's message cites (its values' origin), else the first
        worlds = list(file_worlds.returned.values())
        world = next((w for w in worlds if f"the cast at {w.cast}" in finding.message), worlds[0])
        if world.partial and finding.code not in TRAINING_RULES:
            return None  # a model cast in part: how its forward treats its inputs is not known here
        prefix, certain = world.description, world.certain
    elif file_worlds.built and finding.code in TRAINING_RULES | {"DTL301"}:
        world = next(iter(file_worlds.built.values()))
        prefix, certain = world.description, world.certain
    elif file_worlds.config and settings_last:
        # Found only with the config settings the file reads: a reachable configuration.
        prefix, certain = _settings_read(file_worlds.config, text.splitlines(), finding), False
    else:
        return None
    confidence = min(finding.confidence, Confidence.HIGH if certain else Confidence.MEDIUM)
    if confidence < settings.min_confidence:
        return None
    message = f"{prefix}: {finding.message}" if prefix else finding.message
    return dataclasses.replace(finding, message=message, confidence=confidence)


def _relative(where: str, base: str) -> str:
    """``configs/a.yaml:3`` relative to the directory of the file that reads it."""
    path, _, line = where.rpartition(":")
    return f"{relative(path, base)}:{line}"


def _settings_read(config: dict, lines: list[str], finding: Finding) -> str:
    """``with `training.mixed_precision = "bf16"` (config.toml:2)``: the settings whose last key
    is spelled on the finding's lines, on the lines its message cites (``since line 12``), or
    where a name those lines use is assigned; else those the file spells first. At most two."""
    cited = {finding.line + offset for offset in range((finding.end_line or finding.line) - finding.line + 1)}
    cited |= {int(number) for number in re.findall(r"\bline (\d+)", finding.message)}
    used = {word for number in cited if 0 < number <= len(lines) for word in re.findall(r"[A-Za-z_]\w*", lines[number - 1])}
    cited |= {number for number, text in enumerate(lines, start=1)
              if (match := ASSIGNED.match(text)) and match.group(1) in used}
    spelled = "\n".join(lines[number - 1] for number in sorted(cited) if 0 < number <= len(lines))
    whole = "\n".join(lines)
    chosen = []
    for text in (spelled, whole):
        for key, values in sorted(config.items(), key=lambda item: (whole.find(item[0].rsplit(".", 1)[-1]), item[0])):
            if re.search(r"\b" + re.escape(key.rsplit(".", 1)[-1]) + r"\b", text):
                chosen.extend(Setting(key.partition(":")[2], value, where) for value, where in values
                              if all((value, where) != (s.value, s.where) for s in chosen))
        if chosen:
            break
    if not chosen:
        return "with the config settings it reads"
    if all(s.describe() in finding.message for s in chosen):
        return ""  # the message names them already
    more = len(chosen) - 2
    return "with " + " and ".join(s.describe() for s in chosen[:2]) + (f" and {more} more" if more > 0 else "")
def _names_a_result(message: str, file_worlds: FileWorlds) -> bool:
    """Whether a finding's message names a value a project function returned (its origin's words)."""
    return f"{RETURNED_BY}`" in message and bool(file_worlds.values or file_worlds.argument_values)


def project_worlds_of(by_file: dict, path: str, name: str) -> set:
    """{(path, name)} when the class has a whole-class world (its parts then follow the world)."""
    return {(path, name)} if name in by_file.get(path, {}) else set()


def _with_contained(parts: dict, summary: dict, worlds: dict) -> dict:
    """``parts``, and, with no parts of their own, the classes of the same file the parted
    classes hold (``self.stem = Stem(dim)``) and nobody casts: they run in float32 with them,
    so what they hand the part is float32 (not unknown, as a class checked alone is)."""
    result = dict(parts)
    stack = sorted(parts)
    classes = summary["classes"]
    while stack:
        info = classes.get(stack.pop())
        if info is None:
            continue
        held = {ref for refs in info["attrs"].values() for ref in refs}
        for name in sorted(held):
            if name in classes and name not in result and name not in worlds:
                result[name] = {}
                stack.append(name)
    return dict(sorted(result.items()))


def _part_named(parts: dict, message: str) -> tuple[str, PartWorld] | None:
    """The part a finding is about: the one whose cast its message quotes, else the first."""
    if not parts:
        return None
    for attr, world in sorted(parts.items()):
        if world.origin in message:
            return attr, world
    return sorted(parts.items())[0]


def _autocast_of(file_worlds: FileWorlds, located: tuple[str, str | None]) -> AutocastWorld | None:
    """The autocast region the enclosing method (or function) runs under, if any."""
    name, method = located
    if name in file_worlds.autocast:
        world = file_worlds.autocast[name]
        return world if method is not None and world.runs(method) else None
    return file_worlds.autocast_functions.get(name) if method is None else None


def _enclosing(ranges: dict, line: int) -> tuple[str, str | None] | None:
    """(class, method) whose lines hold ``line``."""
    for name, info in sorted(ranges.items()):
        if info["line"] <= line <= info["end"]:
            for method, (start, end) in sorted(info["methods"].items()):
                if start <= line <= end:
                    return name, method
            return name, None
    return None
