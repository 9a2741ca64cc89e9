"""The dtype-flow analysis behind ``dtype_lint.facts.dtypes`` (values, the interpreter)."""
