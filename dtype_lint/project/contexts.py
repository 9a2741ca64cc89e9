"""Calling contexts: the dtypes the project's calls pass its functions, joined across files.

Each file's summary lists its calls that pass a risky dtype (a float16, bfloat16 or float64
tensor, an 8-bit integer one) or run under a low-precision autocast, with what the file's own
flow computed for each argument (``call_sites.py``), and the calls that hand a parameter on
unchanged. Here each call is resolved to the project function it names (a free function, or
``Class.method`` when the receiver's class is known: ``proc(x)`` on an ``IPProcessor`` is its
``forward``), its arguments bound to the callee's parameters, and the contexts of each function
deduplicated and bounded (``MAX_CONTEXTS``). A parameter handed on (``ssim(img)`` calling
``blur(img)`` in a third file) carries its caller's contexts one call further, at most
``MAX_CHAIN`` calls deep. Calls within one file are left to that file's flow, which already runs
a local callee's body with the arguments' values.

Linear in the call sites: each is resolved once (``Project.resolve`` memoises), each chain step
visits the handing-on calls once.
"""

from __future__ import annotations

from dtype_lint.facts.flow.seeding import RISKY, CallContext
from dtype_lint.project.worlds import Project

MAX_CONTEXTS = 3  # distinct contexts a function is checked under (each one more check of its file)
MAX_CHAIN = 2  # calls a context is handed on through parameters


def call_contexts(project: Project) -> dict[tuple[str, str], list[CallContext]]:
    """(path, function) -> the contexts it is called in from other files, sorted, at most
    ``MAX_CONTEXTS``."""
    found: dict[tuple[str, str], set[CallContext]] = {}
    handing_on: list[tuple[str, dict, tuple[str, str], list[str], bool]] = []
    for path, summary in project.summaries.items():
        for site in summary.get("call_sites", ()):
            for callee in _callees(project, path, site["callee"]):
                params = project.summaries[callee[0]]["functions"][callee[1]]["params"]
                method = "receiver" in site["callee"]
                context = _bind(site, site["args"], params, method, path, None, "")
                if context is not None:
                    found.setdefault(callee, set()).add(context)
                if site.get("passes") and site.get("owner"):
                    handing_on.append((path, site, callee, params, method))
    result = _bounded(found)
    frontier = result
    for _ in range(MAX_CHAIN):
        step: dict[tuple[str, str], set[CallContext]] = {}
        for path, site, callee, params, method in handing_on:
            for given in frontier.get((path, site["owner"]), ()):
                values = {name: rest for name, *rest in given.args}
                args = [{"at": item["at"], "dtypes": list(values[item["param"]][0]), "partial": values[item["param"]][1],
                         "integer": values[item["param"]][2], "kind": values[item["param"]][3]}
                        for item in site["passes"] if item["param"] in values]
                via = f"`{site['owner']}` from {given.path}:{given.line}"
                context = _bind(site, [*site["args"], *args], params, method, path, given, via)
                if context is not None and context not in result.get(callee, ()):
                    step.setdefault(callee, set()).add(context)
        if not step:
            break
        frontier = _bounded(step)
        for callee, contexts in frontier.items():
            result[callee] = _distinct([*result.get(callee, ()), *contexts])
    return {callee: contexts for callee, contexts in sorted(result.items())}


def _bounded(found: dict) -> dict[tuple[str, str], list[CallContext]]:
    return {callee: _distinct(contexts) for callee, contexts in sorted(found.items())}


def _distinct(contexts) -> list[CallContext]:
    """The first call (by place) of each distinct set of dtypes and autocast state, at most
    ``MAX_CONTEXTS``: two calls passing the same dtypes check the callee the same way."""
    kept: dict[tuple, CallContext] = {}
    for context in sorted(contexts, key=_sort_key):
        kept.setdefault((context.args, context.autocast, context.autocast_conditional), context)
    return list(kept.values())[:MAX_CONTEXTS]


def _sort_key(context: CallContext) -> tuple:
    return (context.path, context.line, context.via, repr(context.args), context.autocast or "")


def _callees(project: Project, path: str, callee: dict) -> list[tuple[str, str]]:
    """The project functions (path, key) a call names, in other files than ``path``."""
    found: set[tuple[str, str]] = set()
    if "name" in callee:
        for kind, where, name in project.resolve(path, callee["name"]):
            if kind == "function" and where != path and "." not in name:  # ``Cls.m(obj, x)``: unbound, skipped
                found.add((where, name))
    else:
        method = callee["method"]
        for where, cls in project.classes_of(path, callee["receiver"]):
            if where == path:
                continue
            methods = project.summaries[where]["classes"][cls]["methods"]
            if method == "forward" and "forward" not in methods and "__call__" in methods:
                method = "__call__"
            key = f"{cls}.{method}"
            if key in project.summaries[where]["functions"]:
                found.add((where, key))
    return sorted(found)


def _bind(site: dict, args: list, params: list[str], method: bool, path: str, given: CallContext | None,
          via: str) -> CallContext | None:
    """The call's arguments as the callee's parameters; None when nothing risky reaches them."""
    positional = params[1:] if method else params
    bound: dict[str, tuple] = {}
    for arg in args:
        at = arg["at"]
        if isinstance(at, int):
            name = positional[at] if at < len(positional) else None
        else:
            name = at if at in params and not (method and at == params[0]) else None
        if name is None:
            continue
        bound[name] = (name, tuple(sorted(arg["dtypes"])), bool(arg["partial"]), arg.get("integer") or "",
                       arg.get("kind") or "tensor")
    autocast = site.get("autocast") or None
    autocast_dtype = autocast["dtype"] if autocast else None
    conditional = bool(autocast and autocast["conditional"])
    if given is not None and given.autocast and not autocast_dtype:
        autocast_dtype, conditional = given.autocast, given.autocast_conditional  # the region goes on
    risky = any(set(dtypes) & RISKY or integer for _, dtypes, _, integer, _ in bound.values())
    if not risky and not autocast_dtype:
        return None
    return CallContext(args=tuple(bound[name] for name in params if name in bound), autocast=autocast_dtype,
                       autocast_conditional=conditional, path=path, line=site["line"], via=via)
