"""The one result model: every output, the fixer and the runtime companion render a Finding.

Positions are 1-based lines and 1-based columns; an end position points just past the range
(as ruff's JSON does). flake8 wants 0-based columns: its adapter subtracts one, nothing else.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any


class Confidence(enum.IntEnum):
    LOW = 1
    MEDIUM = 2
    HIGH = 3

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> "Confidence":
        try:
            return cls[text.strip().upper()]
        except KeyError:
            raise ValueError(f"confidence must be one of high, medium, low (got {text!r})") from None


class Safety(str, enum.Enum):
    """Safe fixes keep behaviour; unsafe ones change numerics or control flow."""

    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclasses.dataclass(frozen=True, order=True)
class Edit:
    """Replace the text between two positions (end exclusive) with ``content``."""

    line: int
    column: int
    end_line: int
    end_column: int
    content: str

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Fix:
    safety: Safety
    edits: tuple[Edit, ...]
    description: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"safety": self.safety.value, "edits": [edit.to_json() for edit in self.edits]}


@dataclasses.dataclass(frozen=True)
class Finding:
    code: str
    name: str
    message: str
    line: int
    column: int
    end_line: int
    end_column: int
    confidence: Confidence = Confidence.HIGH
    fix: Fix | None = None
    path: str = ""
    # Notebook cell (1-based) when the file is a notebook; lines are then cell-relative.
    cell: int | None = None
    # In a notebook, the line of the file itself (its JSON) that holds the finding's cell line.
    file_line: int | None = None

    def sort_key(self) -> tuple:
        return (self.path, self.cell or 0, self.line, self.column, self.code, self.message)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "confidence": self.confidence.label,
            "fix": self.fix.to_json() if self.fix else None,
        }
        if self.cell is not None:
            data["cell"] = self.cell
        return data


def sort_findings(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=Finding.sort_key)
