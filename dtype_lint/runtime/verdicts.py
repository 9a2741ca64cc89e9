"""Static findings + runtime evidence -> one verdict per finding, plus runtime-only findings.

A claim confirms a finding when it supports the finding's rule and one of its user lines (the
stack where it happened, or an origin line that set it up) falls inside the finding's range.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from dtype_lint.findings import Finding
from dtype_lint.runtime.messages import OVERFLOW_CODES

CONFIRMED = "confirmed"
NOT_REPRODUCED = "not reproduced"
NOT_REACHED = "not reached"
NOT_TESTED = "not tested"
NEEDS_GPU = "needs GPU"
RUNTIME_ONLY = "runtime-only"
NOT_RUN = "not run"

# Defects that only show on a CUDA device: a CPU run (real or emulated) cannot refute them.
CUDA_ONLY = {
    "DTL203": "bf16 support is a property of the GPU (m13 raises on pre-Ampere devices)",
    "DTL207": "binary_cross_entropy raises under autocast only on CUDA (m12)",
    "DTL301": "the bf16 unscale kernel error (m10) is CUDA-only",
    "DTL603": "8/4-bit quantized models need CUDA (bitsandbytes)",
    "DTL701": "TF32 changes numerics only on Ampere+ GPUs",
}
# ... except where the CPU emulation of CUDA reproduces the GPU's behaviour itself.
EMULATED = frozenset({"DTL207"})
# Defects that show only once optimizer steps run (the scaler protocol, optimizer state, updates):
# a run that ended before its first step has not tested them.
NEEDS_STEPS = frozenset(
    {"DTL301", "DTL302", "DTL303", "DTL304", "DTL305", "DTL306", "DTL307", "DTL401", "DTL402", "DTL403", "DTL404",
     "DTL405", "DTL505"}
)


@dataclasses.dataclass
class Verdict:
    finding: Finding | None  # None for runtime-only
    verdict: str
    evidence: list[dict[str, Any]]
    note: str = ""
    # For runtime-only rows: where and what.
    path: str = ""
    line: int = 0
    what: str = ""
    related_codes: tuple[str, ...] = ()
    code: str = ""  # the rule a runtime-only finding is reported as (SARIF, --ignore, noqa)


@dataclasses.dataclass
class RunSummary:
    processes: int
    ranks: list[int]
    emulated: bool
    cuda: bool
    stopped: str | None
    terminated: bool
    start_errors: list[str]
    companion_errors: list[str]
    exceptions: list[dict[str, Any]]
    scaler_updates: int = 0
    skipped_steps: int = 0
    scales: tuple[float, float] | None = None  # first and last loss scale seen
    steps_run: int = 0  # training iterations started (the most on any rank)
    cuda_used: bool = False  # the emulation mapped something of CUDA's


def summarize(records: list[dict[str, Any]]) -> RunSummary:
    starts = [r for r in records if r["kind"] == "start"]
    stops = [r["reason"] for r in records if r["kind"] == "stop"]
    updates = [r for r in records if r["kind"] == "scaler-update" and int(r.get("rank", 0)) == 0]
    return RunSummary(
        scaler_updates=len(updates),
        skipped_steps=sum(1 for r in updates if r.get("skipped")),
        scales=(updates[0]["scale"], updates[-1]["new_scale"]) if updates else None,
        processes=len(starts),
        ranks=sorted({int(r.get("rank", 0)) for r in starts}),
        emulated=any(r.get("emulated") for r in starts),
        cuda=any(r.get("cuda") for r in starts),
        stopped=stops[0] if stops else None,
        terminated=any(r["kind"] == "terminated" for r in records),
        start_errors=sorted({r["message"] for r in records if r["kind"] == "start-error"}),
        companion_errors=sorted({r["message"] for r in records if r["kind"] == "companion-error"}),
        exceptions=sorted((r for r in records if r["kind"] == "exception"), key=lambda r: int(r.get("rank", 0))),
        steps_run=max((int(r.get("step", 0)) for r in records), default=0),
        cuda_used=any(r["kind"] == "cuda-used" for r in records),
    )


def _origins_of_subset(records: list[dict[str, Any]], participants: set[int]) -> list[list]:
    """Flagged lines that ran on some of ``participants`` and not on the others."""
    reached_by: dict[tuple[str, int], set[int]] = {}
    for record in records:
        if record["kind"] == "reach":
            reached_by.setdefault((record["path"], record["line"]), set()).add(int(record.get("rank", 0)))
    return [[path, line] for (path, line), seen in sorted(reached_by.items()) if seen and seen < participants]


def ddp_claims(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ranks that wrapped models whose parameter/buffer dtypes differ (recorded at DDP construction)."""
    by_rank: dict[int, dict[str, Any]] = {}
    for record in records:
        if record["kind"] == "ddp-params":
            by_rank.setdefault(int(record.get("rank", 0)), record)
    if len(by_rank) < 2:
        return []
    signatures = {rank: [tuple(entry) for entry in record["dtypes"]] for rank, record in by_rank.items()}
    if len({tuple(sig) for sig in signatures.values()}) < 2:
        return []
    first_rank = min(signatures)
    differing = None
    for index, (name, dtype) in enumerate(signatures[first_rank]):
        others = {rank: sig[index][1] for rank, sig in signatures.items() if index < len(sig)}
        if len(set(others.values())) > 1:
            differing = (name, others)
            break
    if differing is None:
        what = "different parameter lists"
        dtypes = {str(rank): len(sig) for rank, sig in sorted(signatures.items())}
    else:
        name, others = differing
        what = f"{name} is " + ", ".join(f"{dtype} on rank {rank}" for rank, dtype in sorted(others.items()))
        dtypes = {str(rank): dtype for rank, dtype in sorted(others.items())}
    stack: list[list] = []
    for _rank, record in sorted(by_rank.items()):
        for frame in record.get("stack") or []:
            if frame not in stack:
                stack.append(frame)
    return [
        {
            "kind": "claim",
            "what": "rank-dependent-dtype",
            "codes": ["DTL703"],
            "message": f"DistributedDataParallel wrapped models that differ by rank: {what}",
            "stack": stack,
            "origins": _origins_of_subset(records, set(by_rank)),
            "detail": {"dtypes": dtypes},
            "rank": sorted(by_rank),
            "step": max(int(r.get("step", 0)) for r in by_rank.values()),
        }
    ]


def collective_claims(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ranks that sent different dtypes into the same collective call (by call order).

    Its origins are the flagged lines that ran on some of those ranks and not on the others:
    the rank-dependent branch that chose the dtype.
    """
    by_seq: dict[int, dict[int, dict[str, Any]]] = {}
    for record in records:
        if record["kind"] == "collective":
            by_seq.setdefault(record["seq"], {}).setdefault(int(record.get("rank", 0)), record)
    claims = []
    for seq in sorted(by_seq):
        ranks = by_seq[seq]
        if len(ranks) < 2 or len({tuple(r["dtypes"]) for r in ranks.values()}) < 2:
            continue
        op = next(iter(ranks.values()))["op"]
        parts = ", ".join(f"rank {rank} sent {'/'.join(r['dtypes']) or '?'}" for rank, r in sorted(ranks.items()))
        stack: list[list] = []
        for _rank, record in sorted(ranks.items()):
            for frame in record.get("stack") or []:
                if frame not in stack:
                    stack.append(frame)
        origins = _origins_of_subset(records, set(ranks))
        claims.append(
            {
                "kind": "claim",
                "what": "rank-dependent-dtype",
                "codes": ["DTL703"],
                "message": f"{op} call #{seq}: {parts}",
                "stack": stack,
                "origins": origins,
                "detail": {"op": op, "seq": seq, "dtypes": {str(k): v["dtypes"] for k, v in sorted(ranks.items())}},
                "rank": sorted(ranks),
                "step": max(int(r.get("step", 0)) for r in ranks.values()),
            }
        )
        break  # the first mismatch explains the rest
    return claims


def skipped_claims(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ranks on which a GradScaler skipped every step for inf/NaN gradients: no optimizer step took
    effect (the companion runs on past --steps while the scale backs off, so a skip that backing
    off cures is not one of these)."""
    by_rank: dict[int, list[dict[str, Any]]] = {}
    for record in records:
        if record["kind"] == "scaler-update":
            by_rank.setdefault(int(record.get("rank", 0)), []).append(record)
    ranks = sorted(rank for rank, updates in by_rank.items() if all(u.get("skipped") for u in updates))
    explained = {int(r.get("rank", 0)) for r in records if r["kind"] == "claim" and r["what"] == "nonfinite-loss"}
    if not ranks or set(ranks) <= explained:
        return []  # none, or an inf/NaN loss (already a finding) is why
    updates = by_rank[ranks[0]]
    first, last = updates[0], updates[-1]
    return [
        {
            "kind": "claim",
            "what": "every-step-skipped",
            "code": OVERFLOW_CODES[0],
            "codes": list(OVERFLOW_CODES),
            "message": (f"the GradScaler skipped all {len(updates)} steps for inf/NaN gradients (loss scale "
                        f"{first['scale']:g} -> {last['new_scale']:g}): no optimizer step took effect"),
            "stack": last.get("stack") or [],
            "origins": last.get("origins") or [],
            "detail": {"skipped": len(updates), "scales": [first["scale"], last["new_scale"]]},
            "rank": ranks,
            "step": int(last.get("step", 0)),
        }
    ]


def _in_range(finding: Finding, path: str, line: int) -> bool:
    return path == finding.path and finding.line <= line <= max(finding.end_line, finding.line)


def _merge(claims: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One claim per (what, innermost line, message) across ranks, with every rank listed."""
    merged: dict[tuple, dict[str, Any]] = {}
    for claim in claims:
        top = tuple(claim["stack"][0]) if claim.get("stack") else None
        key = (claim["what"], top, claim["message"])
        ranks = claim["rank"] if isinstance(claim.get("rank"), list) else [int(claim.get("rank", 0))]
        if key in merged:
            entry = merged[key]
            entry["ranks"] = sorted(set(entry["ranks"]) | set(ranks))
            entry["step"] = min(entry["step"], int(claim.get("step", 0)))
        else:
            entry = dict(claim)
            entry.pop("rank", None)
            entry["ranks"] = sorted(set(ranks))
            entry["step"] = int(claim.get("step", 0))
            merged[key] = entry
    return list(merged.values())


def decide(
    findings: list[Finding], records: list[dict[str, Any]], hidden: list[Finding] = ()
) -> tuple[list[Verdict], list[Verdict], RunSummary]:
    """Findings must carry absolute paths (as the evidence does). ``hidden``: findings the user
    set aside (a baseline): claims they would explain are not shown as runtime-only."""
    summary = summarize(records)
    claims = _merge([r for r in records if r["kind"] == "claim"] + ddp_claims(records) + collective_claims(records)
                    + skipped_claims(records))
    reached = {(r["path"], r["line"]) for r in records if r["kind"] == "reach"}
    for claim in claims:
        reached.update(tuple(frame) for frame in claim.get("stack") or [])
    used: set[int] = set()
    verdicts: list[Verdict] = []
    for finding in findings:
        if finding.code == "DTL001":
            verdicts.append(Verdict(finding, NOT_RUN, [], "the file does not parse"))
            continue
        matched = []
        for index, claim in enumerate(claims):
            if _explains(claim, finding):
                matched.append(claim)
                used.add(index)
        ran = any(_in_range(finding, path, line) for path, line in reached)
        if matched:
            verdicts.append(Verdict(finding, CONFIRMED, matched))
        elif finding.code in CUDA_ONLY and not summary.cuda and not (summary.emulated and finding.code in EMULATED):
            note = CUDA_ONLY[finding.code] + ("" if ran else "; the line never ran")
            verdicts.append(Verdict(finding, NEEDS_GPU, [], note))
        elif ran and (clash := _clash(finding, claims)) is not None:
            # Something this rule does not predict went wrong on this very line (shown as
            # runtime-only): "nothing wrong was seen" would contradict the same run's evidence.
            verdicts.append(Verdict(finding, NOT_TESTED, [], f"another defect showed on this line first: "
                                    f"{clash['message']}"))
        elif ran and finding.code in NEEDS_STEPS and summary.steps_run == 0:
            crashes = summary.exceptions + [c for c in claims if "exception" in (c.get("detail") or {})]
            ended = crashes[0]["message"] if crashes else None
            reason = "no optimizer step ran" + (f"; the program ended first: {ended}" if ended else "")
            verdicts.append(Verdict(finding, NOT_TESTED, [], f"the line ran, but {reason}"))
        elif ran:
            verdicts.append(Verdict(finding, NOT_REPRODUCED, [], "the line ran; nothing wrong was seen"))
        else:
            verdicts.append(Verdict(finding, NOT_REACHED, [], "the line never ran"))
    runtime_only = []
    for index, claim in enumerate(claims):
        if index in used or any(_explains(claim, finding) for finding in hidden):
            continue
        lines = (claim.get("stack") or []) + (claim.get("origins") or [])
        top = lines[0] if lines else ["", 0]
        runtime_only.append(
            Verdict(None, RUNTIME_ONLY, [claim], path=top[0], line=int(top[1]), what=claim["what"],
                    related_codes=tuple(claim["codes"]), code=claim.get("code") or claim["codes"][0])
        )
    runtime_only.sort(key=lambda v: (v.path, v.line, v.what))
    return verdicts, runtime_only, summary


def drop_ignored(runtime_only: list[Verdict], settings) -> list[Verdict]:
    """Runtime-only findings stay out when their rule does at check time: not selected
    (``--select``/``--ignore``, per-file-ignores), or suppressed by a comment on their lines
    (one naming the rule on any line of the claim, where its static finding would have been,
    or a bare ``# noqa`` on the line it is reported at)."""
    from dtype_lint.suppress import line_suppresses, names_code

    cache: dict[str, list[str]] = {}

    def line_text(path: str, number: int) -> str:
        if path not in cache:
            try:
                with open(path, encoding="utf-8", errors="replace") as handle:
                    cache[path] = handle.read().splitlines()
            except OSError:
                cache[path] = []
        lines = cache[path]
        return lines[number - 1] if 1 <= number <= len(lines) else ""

    kept = []
    for verdict in runtime_only:
        if not settings.is_selected(verdict.code, verdict.path or None):
            continue
        claim = verdict.evidence[0]
        frames = (claim.get("stack") or []) + (claim.get("origins") or [])
        if any(names_code(line_text(path, line), verdict.code) for path, line in frames):
            continue
        if verdict.path and line_suppresses(line_text(verdict.path, verdict.line), verdict.code):
            continue
        kept.append(verdict)
    return kept


def _explains(claim: dict[str, Any], finding: Finding) -> bool:
    """The claim supports the finding's rule and one of its user lines falls in the finding."""
    if finding.code not in claim["codes"]:
        return False
    lines = (claim.get("stack") or []) + (claim.get("origins") or [])
    return any(_in_range(finding, path, line) for path, line in lines)


def _clash(finding: Finding, claims: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A claim of another rule whose innermost user line is inside the finding."""
    for claim in claims:
        stack = claim.get("stack") or []
        if stack and _in_range(finding, stack[0][0], stack[0][1]):
            return claim
    return None


def absolute(finding: Finding) -> Finding:
    return dataclasses.replace(finding, path=os.path.abspath(finding.path))
