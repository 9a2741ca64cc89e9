"""One finding per defect (issue 21): a rule that meets the same thing twice on one line, once per
branch of a ternary, reports it once; findings that each carry their own fix both stay."""

from __future__ import annotations

from dtype_lint.config import Settings
from dtype_lint.engine import check_text, one_per_line
from dtype_lint.findings import Confidence, Edit, Fix, Finding, Safety

# Lightning's precision plugin shape: the scaler built on one line by a version ternary.
PLUGIN = '''import torch


class MixedPrecision:
    def __init__(self, precision, device, scaler=None):
        self.precision = precision
        if scaler is None and self.precision == "16-mixed":
            scaler = torch.amp.GradScaler(device=device) if NEW_TORCH else torch.cuda.amp.GradScaler()
        self.scaler = scaler
        self._dtype = torch.bfloat16 if self.precision == "bf16-mixed" else torch.float16

    def forward_context(self):
        return torch.autocast("cuda", dtype=self._dtype)

    def step(self, model, x, optimizer):
        with self.forward_context():
            loss = model(x).sum()
        self.scaler.scale(loss).backward()
        self.scaler.step(optimizer)
        self.scaler.update()
'''


def test_a_ternary_of_two_scalers_is_one_finding_on_its_line():
    report = check_text(PLUGIN, "amp.py", Settings(select=("DTL301",), min_confidence=Confidence.LOW))
    assert [(f.code, f.line) for f in report.findings] == [("DTL301", 8)]


def _finding(column: int, fix: Fix | None = None) -> Finding:
    return Finding("DTL201", "deprecated-amp-api", "m", 3, column, 3, column + 5, fix=fix)


def test_findings_with_their_own_fixes_both_stay_and_a_fixable_one_is_kept_over_a_bare_one():
    fix = Fix(Safety.SAFE, (Edit(3, 20, 3, 25, "x"),))
    assert one_per_line([_finding(1, fix), _finding(20, fix)]) == [_finding(1, fix), _finding(20, fix)]
    assert one_per_line([_finding(1), _finding(20, fix)]) == [_finding(20, fix)]
    assert one_per_line([_finding(1), _finding(20)]) == [_finding(1)]
