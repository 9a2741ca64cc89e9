"""``dtype-lint fix``: apply the edits that findings carry, without ever breaking a file.

- ``core``: one text -> rounds of non-overlapping fixes to a fixed point, re-checked each round.
- ``guards``: fallback and version-check branches that fixes stay out of.
- ``imports``: how a fix spells a module it needs, and the edit that imports it.
- ``files``: bytes in and out (encoding, BOM), atomic writes, diffs, the process pool.
"""

from dtype_lint.fixer.core import MAX_ROUNDS, FixOutcome, SkippedFix, fix_text
from dtype_lint.fixer.files import FileFixResult, FixOptions, atomic_write, fix_bytes, fix_file, fix_files
from dtype_lint.fixer.imports import ModuleReference, module_reference

__all__ = [
    "MAX_ROUNDS",
    "FileFixResult",
    "FixOptions",
    "FixOutcome",
    "ModuleReference",
    "SkippedFix",
    "atomic_write",
    "fix_bytes",
    "fix_file",
    "fix_files",
    "fix_text",
    "module_reference",
]
