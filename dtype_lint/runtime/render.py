"""The confirm report: a verdict table (text) or the check findings plus verdict/evidence (json)."""

from __future__ import annotations

import json
import os
from typing import Any, TextIO

from dtype_lint.runtime.verdicts import CONFIRMED, RUNTIME_ONLY, Verdict


def display_path(path: str) -> str:
    if not path:
        return "?"
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative


def _evidence_json(claim: dict[str, Any]) -> dict[str, Any]:
    return {
        "what": claim["what"],
        "message": claim["message"],
        "step": claim.get("step", 0),
        "ranks": claim.get("ranks", []),
        "stack": [{"path": display_path(p), "line": line} for p, line in claim.get("stack") or []],
        "origins": [{"path": display_path(p), "line": line} for p, line in claim.get("origins") or []],
        "detail": claim.get("detail", {}),
    }


def _where(claim: dict[str, Any]) -> str:
    ranks = claim.get("ranks") or [0]
    rank_text = f"rank {ranks[0]}" if len(ranks) == 1 else "ranks " + ",".join(str(r) for r in ranks)
    return f"step {claim.get('step', 0)}, {rank_text}"


def _run_json(run: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in run.items() if key != "output_tail"}


def render_json(run: dict[str, Any], verdicts: list[Verdict], runtime_only: list[Verdict], out: TextIO) -> None:
    findings = []
    for verdict in verdicts:
        data = verdict.finding.to_json()
        data["path"] = display_path(verdict.finding.path)
        data["verdict"] = verdict.verdict
        data["note"] = verdict.note
        data["evidence"] = [_evidence_json(claim) for claim in verdict.evidence]
        findings.append(data)
    extra = []
    for verdict in runtime_only:
        claim = verdict.evidence[0]
        extra.append(
            {
                "path": display_path(verdict.path),
                "line": verdict.line,
                "column": 1,
                "end_line": verdict.line,
                "end_column": 1,
                "code": verdict.code,
                "name": verdict.what,
                "message": claim["message"],
                "confidence": None,
                "fix": None,
                "verdict": RUNTIME_ONLY,
                "related_codes": list(verdict.related_codes),
                "evidence": [_evidence_json(claim)],
            }
        )
    json.dump({"run": _run_json(run), "findings": findings, "runtime_only": extra}, out, indent=2)
    out.write("\n")


def render_text(run: dict[str, Any], verdicts: list[Verdict], runtime_only: list[Verdict], out: TextIO) -> None:
    out.write(f"dtype-lint confirm: {run['command']}\n")
    out.write(f"  {run['outcome']}\n")
    if run.get("device_note"):
        out.write(f"  {run['device_note']}\n")
    for line in run.get("notes", []):
        out.write(f"  {line}\n")
    if run.get("output_tail") and run.get("show_tail"):
        out.write("  last lines of the program's output:\n")
        for line in run["output_tail"][-10:]:
            out.write(f"    | {line}\n")
    out.write("\n")
    if not verdicts and not runtime_only and run.get("failed"):
        out.write("No static findings, and the failure seen at run time maps to no rule.\n")
    elif not verdicts and not runtime_only:
        out.write("No static findings, and nothing seen at run time.\n")
    for verdict in verdicts:
        finding = verdict.finding
        location = f"{display_path(finding.path)}:{finding.line}:{finding.column}"
        out.write(f"{location}: {finding.code} {finding.name}  {verdict.verdict.upper()}\n")
        out.write(f"    {finding.message}\n")
        for claim in verdict.evidence[:3]:
            out.write(f"    evidence ({_where(claim)}): {claim['message']}\n")
        if verdict.note and verdict.verdict != CONFIRMED:
            out.write(f"    ({verdict.note})\n")
    if runtime_only:
        out.write("\nSeen at run time with no static finding (runtime-only):\n")
        for verdict in runtime_only:
            claim = verdict.evidence[0]
            related = "/".join(verdict.related_codes[:4]) + ("/..." if len(verdict.related_codes) > 4 else "")
            out.write(f"{display_path(verdict.path)}:{verdict.line}: {verdict.code} {verdict.what}  RUNTIME-ONLY"
                      f" (like {related})\n")
            out.write(f"    {claim['message']} ({_where(claim)})\n")
    counts: dict[str, int] = {}
    for verdict in verdicts + runtime_only:
        counts[verdict.verdict] = counts.get(verdict.verdict, 0) + 1
    order = ("confirmed", "not reproduced", "not tested", "not reached", "needs GPU", "not run", RUNTIME_ONLY)
    summary = ", ".join(f"{counts[name]} {name}" for name in order if counts.get(name))
    if run.get("failed"):
        summary = ", ".join(part for part in (summary, "the program failed (see above)") if part)
    out.write(f"\n{summary or 'nothing to report'}\n")


def render_sarif(run: dict[str, Any], verdicts: list[Verdict], runtime_only: list[Verdict], out: TextIO) -> None:
    """``check``'s SARIF log, each result carrying its verdict and evidence in ``properties``;
    confirmed findings are errors, the others notes; runtime-only findings are warnings."""
    from dtype_lint.engine import FileReport
    from dtype_lint.report.sarif_format import _region, artifact_location, sarif_log

    by_path: dict[str, list] = {}
    for verdict in verdicts:
        by_path.setdefault(verdict.finding.path, []).append(verdict.finding)
    reports = [FileReport(path, findings, lines=_lines(path)) for path, findings in sorted(by_path.items())]
    log = sarif_log(reports)
    sarif_run = log["runs"][0]
    rule_index = {rule["id"]: index for index, rule in enumerate(sarif_run["tool"]["driver"]["rules"])}
    # sarif_log orders results as Finding.sort_key does.
    ordered = sorted(verdicts, key=lambda verdict: verdict.finding.sort_key())
    for result, verdict in zip(sarif_run["results"], ordered):
        result["level"] = "error" if verdict.verdict == CONFIRMED else "note"
        result["properties"]["verdict"] = verdict.verdict
        result["properties"]["evidence"] = [_evidence_json(claim) for claim in verdict.evidence]
        if verdict.evidence:
            result["message"]["text"] += f" Confirmed at run time: {verdict.evidence[0]['message']}"
        elif verdict.note:
            result["message"]["text"] += f" ({verdict.verdict}: {verdict.note})"
    for verdict in runtime_only:
        claim = verdict.evidence[0]
        sarif_run["results"].append(
            {
                "ruleId": verdict.code,
                **({"ruleIndex": rule_index[verdict.code]} if verdict.code in rule_index else {}),
                "level": "warning",
                "message": {"text": f"Seen at run time with no static finding ({verdict.what}): {claim['message']}"},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": artifact_location(verdict.path or "-"),
                            "region": _region(verdict.line or 1, 1, verdict.line or 1, 1),
                        }
                    }
                ],
                "properties": {
                    "verdict": RUNTIME_ONLY,
                    "relatedCodes": list(verdict.related_codes),
                    "evidence": [_evidence_json(claim)],
                },
            }
        )
    sarif_run["invocations"][0]["properties"] = {"confirm": _run_json(run)}
    json.dump(log, out, indent=2, ensure_ascii=False)
    out.write("\n")


def _lines(path: str) -> list[str] | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read().splitlines()
    except OSError:
        return None
