import traceback


class UsageError(Exception):
    """A problem with what the user asked for: reported as one line, exit status 2."""


def describe(error: BaseException) -> str:
    """``KeyError: 'boom' (…/rules/x.py:12)``: an internal error in one line, where it was raised
    included (a message that is many lines or megabytes long is cut to one short line)."""
    frames = traceback.extract_tb(error.__traceback__)
    where = f" ({frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    message = " ".join(str(error).split())
    if len(message) > 300:
        message = message[:300] + "…"
    return f"{type(error).__name__}: {message}{where}"
