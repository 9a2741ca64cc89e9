"""DTL0xx: problems with the input itself rather than with the program."""

from dtype_lint.findings import Safety
from dtype_lint.rules.base import Invalid, Rule


class UncheckableFile(Rule):
    """## What it does
    Reports a file that cannot be checked: it does not parse, is not valid text in its declared
    encoding (UTF-8 by default), or is binary.

    ## Why is this bad?
    Nothing in such a file is checked, so its precision bugs go unseen; Python itself would
    refuse to run it.

    ## Example
    ```python
    def train(:
        pass
    ```

    ## Use instead
    ```python
    def train():
        pass
    ```

    ## Fix safety
    No fix: the tool cannot know what was meant.
    """

    code = "DTL001"
    name = "uncheckable-file"
    summary = "File does not parse or is not text"
    queries = (
        "whether the file's bytes decode as text and parse as Python (source.py, engine.py); no fact of the dtype analysis",
    )


class UnusedNoqa(Rule):
    """## What it does
    Reports a `# noqa: DTL...` or `# dtype-lint: ignore[...]` comment that suppresses nothing:
    the codes it names found nothing on its line (ruff's RUF100). A code no rule has (a typo)
    is reported as unknown. Other tools' codes in the same comment (`E501`) are left alone, and
    so is a bare `# noqa` (it may be there for another tool).

    Not on by default, as RUF100 is not: select it by its code (`extend-select = ["DTL002"]`,
    `--extend-select DTL002`) or with `ALL`. A code is judged only when every rule it names ran
    on the file, so a run that switches rules off never calls their comments unused.

    ## Why is this bad?
    A stale suppression hides the next real finding on that line, and a misspelt code
    suppresses nothing while looking as if it did.

    ## Example
    ```python
    scaler = torch.amp.GradScaler("cuda")  # noqa: DTL201
    ```

    ## Use instead
    ```python
    scaler = torch.amp.GradScaler("cuda")
    ```

    ## Fix safety
    Unsafe: the fix removes the unused codes (the whole comment when none is left), judged by
    what this run found; a comment that silences a finding only the whole-program pass reports
    is used in `check` but looks unused to `dtype-lint fix`, which checks files one at a time.
    """

    code = "DTL002"
    name = "unused-noqa"
    summary = "Suppression comment that suppresses nothing"
    queries = (
        "the file's suppression comments and which of their codes the run's findings used (suppress.py, unused_noqa.py); no fact of the dtype analysis",
    )
    fix_safety = Safety.UNSAFE
    valid = (
        "x = 1  # noqa: E501\n",
        "x = 1  # noqa\n",
    )
    invalid = (
        Invalid("x = 1  # noqa: DTL299\n", fixed="x = 1\n"),
        Invalid("x = 1  # noqa: E501, DTL299\n", fixed="x = 1  # noqa: E501\n"),
    )
