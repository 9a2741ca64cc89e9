"""DTL0xx: problems with the input itself rather than with the program."""

from dtype_lint.rules.base import Rule


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
