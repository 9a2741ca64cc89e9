"""The child side of ``dtype-lint confirm``, started by the injected sitecustomize.

Order matters: the recorder first (so even a failing install leaves a trace), then torch and the
CUDA emulation, the hooks, anomaly mode, the observer mode, and last the line tracer.
"""

from __future__ import annotations

import atexit
import os
import sys

from dtype_lint.runtime import protocol

LAUNCHER_SCRIPTS = ("torchrun", "accelerate")


def is_launcher(argv: list[str]) -> bool:
    """True in a torchrun/accelerate launcher process: it runs no user code, its ranks do."""
    args = argv[1:]
    if args[:1] and os.path.basename(args[0]) in LAUNCHER_SCRIPTS:
        return True
    for index, token in enumerate(args[:-1]):
        if token == "-m":
            return args[index + 1].startswith(("torch.distributed.run", "torch.distributed.launch", "accelerate"))
    return False


def start() -> None:
    argv = list(getattr(sys, "orig_argv", sys.argv))
    if is_launcher(argv):
        return
    try:
        config = protocol.read_config(os.environ[protocol.CONFIG_ENV])
        from dtype_lint.runtime.recorder import Recorder

        recorder = Recorder(config["evidence_dir"], config["roots"])
    except (OSError, ValueError, KeyError):
        return  # a process outliving its confirm run (the config is gone): run it untouched
    try:
        _install(config, recorder, argv)
    except SystemExit:
        raise
    except Exception as error:  # noqa: BLE001 - the user's program still runs, the report says why
        recorder.write({"kind": "companion-error", "message": f"{type(error).__name__}: {error}"})


def _install(config: dict, recorder, argv: list[str]) -> None:
    import torch

    from dtype_lint.runtime import emulation, hooks, observer, reach
    from dtype_lint.runtime.state import State

    cuda = torch.cuda.is_available()
    device = config["device"]
    if device == "cuda" and not cuda:
        recorder.write({"kind": "start-error", "message": "--device cuda was asked for, but torch sees no CUDA device"})
        sys.stderr.write("dtype-lint confirm: --device cuda, but torch sees no CUDA device\n")
        sys.stderr.flush()
        os._exit(3)
    emulated = device == "cpu" or (device == "auto" and not cuda)
    state = State(recorder=recorder, step_limit=int(config["steps"]), emulated=emulated)
    recorder.write(
        {
            "kind": "start",
            "emulated": emulated,
            "cuda": cuda and not emulated,
            "torch": torch.__version__,
            "python": sys.version.split()[0],
            "argv": argv,
            "world_size": int(os.environ.get("WORLD_SIZE", "1") or 1),
        }
    )
    if emulated:
        emulation.install(state)
    hooks.install(state)
    _track_autocast_dtypes(state, torch)
    torch.set_anomaly_enabled(True, True)  # NaN in backward raises, with the forward trace (m16)
    observer.Observer(state).__enter__()  # stays on for the life of the process
    atexit.register(lambda: (state.end(), recorder.write({"kind": "exit"})))
    reach.install(config.get("flagged") or {}, recorder)


def _track_autocast_dtypes(state, torch) -> None:
    """Which autocast dtypes ran: a GradScaler with no float16 anywhere protects nothing."""
    autocast = torch.amp.autocast_mode.autocast
    original_enter = autocast.__enter__

    def __enter__(self):
        if getattr(self, "_enabled", False):
            state.autocast_dtypes_seen.add(self.fast_dtype)
        return original_enter(self)

    autocast.__enter__ = __enter__
