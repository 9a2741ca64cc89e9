class UsageError(Exception):
    """A problem with what the user asked for: reported as one line, exit status 2."""
