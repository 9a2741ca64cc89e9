"""dtype-lint: find PyTorch precision bugs before the job runs, and prove them when asked."""

__version__ = "0.1.0"
