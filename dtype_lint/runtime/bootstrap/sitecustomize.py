"""Injected by ``dtype-lint confirm`` (this directory is prepended to PYTHONPATH).

Starts the runtime companion in each process of the program, skips launcher processes
(torchrun, accelerate), then runs the environment's own sitecustomize, if any, as Python would
have. Never lets a companion failure stop the user's program.
"""


def _chain_next_sitecustomize():
    import importlib.util
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    saved_path = list(sys.path)
    saved_module = sys.modules.pop("sitecustomize", None)
    try:
        sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or ".") != here]
        spec = importlib.util.find_spec("sitecustomize")
        if spec is not None and spec.loader is not None and spec.origin != __file__:
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
    except Exception:  # noqa: BLE001 - the environment's own hook failing is its business
        pass
    finally:
        sys.path[:] = saved_path
        if saved_module is not None:
            sys.modules["sitecustomize"] = saved_module


def _start_companion():
    import os

    if not os.environ.get("DTYPE_LINT_CONFIRM_CONFIG"):
        return
    try:
        from dtype_lint.runtime import companion
    except Exception as error:  # noqa: BLE001
        import sys

        print(f"dtype-lint confirm: companion unavailable in this process: {error}", file=sys.stderr)
        return
    companion.start()


_chain_next_sitecustomize()
_start_companion()
