"""``dtype-lint fix``: apply the edits that findings carry, without ever breaking a file.

- ``core``: one text -> rounds of non-overlapping fixes to a fixed point, re-checked each round.
- ``guards``: fallback and version-check branches that fixes stay out of.
- ``imports``: how a fix spells a module it needs, and the edit that imports it.
- ``files``: bytes in and out (encoding, BOM), atomic writes, diffs, the process pool.
"""
