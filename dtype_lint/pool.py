"""Worker processes for independent files, where a worker that dies costs one file, not the run.

``concurrent.futures.ProcessPoolExecutor`` breaks as a whole when one worker dies (a native
parser overflowing the C stack, the kernel's out-of-memory killer): every pending result raises
``BrokenProcessPool`` and nobody knows which file did it. Here each worker takes a batch of items,
sends back each result as soon as it has it, and the parent knows which item a worker was on
when it died: that item gets ``crashed(item, reason)``, the rest of its batch goes to a new worker.
"""

from __future__ import annotations

import signal
import sys
from collections import deque
from typing import Callable

from dtype_lint.errors import describe

# Fewer files than this are checked in the calling process: starting workers costs more.
PARALLEL_THRESHOLD = 8


def run_pool(function: Callable, items: list, jobs: int, crashed: Callable[[object, str], object]) -> list:
    """``[function(item) for item in items]``, over ``jobs`` worker processes when there are enough
    items, in order. An item whose worker dies, or whose ``function`` raises in a worker, gets
    ``crashed(item, reason)`` instead."""
    if jobs <= 1 or len(items) < PARALLEL_THRESHOLD:
        return [function(item) for item in items]
    # Imported here: a pre-commit-sized run never starts a worker and need not pay for the import.
    import multiprocessing
    from multiprocessing.connection import wait

    method = "fork" if sys.platform.startswith("linux") else "spawn"
    context = multiprocessing.get_context(method)
    batch_size = max(1, len(items) // (jobs * 8))
    pending = deque(range(len(items)))
    results: list = [None] * len(items)
    workers: dict = {}  # connection -> (process, the indexes of its batch it has not answered yet)
    try:
        while pending or workers:
            while pending and len(workers) < jobs:
                batch = [pending.popleft() for _ in range(min(batch_size, len(pending)))]
                parent, child = context.Pipe()
                process = context.Process(target=_serve, args=(function, child), daemon=True)
                process.start()
                child.close()
                parent.send([(index, items[index]) for index in batch])
                workers[parent] = (process, deque(batch))
            for connection in wait(list(workers)):
                process, owed = workers[connection]
                try:
                    index, ok, value = connection.recv()
                except (EOFError, OSError):  # the worker died: the item it was on is the culprit
                    process.join()
                    del workers[connection]
                    connection.close()
                    culprit = owed.popleft()
                    results[culprit] = crashed(items[culprit], _death(process.exitcode))
                    pending.extendleft(reversed(owed))
                    continue
                owed.popleft()
                results[index] = value if ok else crashed(items[index], value)
                if not owed:  # batch done: the worker takes the next one, or goes
                    if pending:
                        batch = [pending.popleft() for _ in range(min(batch_size, len(pending)))]
                        connection.send([(index, items[index]) for index in batch])
                        owed.extend(batch)
                    else:
                        connection.send(None)
                        connection.close()
                        process.join()
                        del workers[connection]
    finally:
        for connection, (process, _) in workers.items():  # Ctrl-C or an error here: stop them all
            process.terminate()
            process.join()
            connection.close()
    return results


def _serve(function: Callable, connection) -> None:
    """A worker: batches of ``(index, item)`` in, one ``(index, ok, result or reason)`` out per item."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    while True:
        batch = connection.recv()
        if batch is None:
            return
        for index, item in batch:
            try:
                connection.send((index, True, function(item)))
            except Exception as error:  # noqa: BLE001 - reported for this item, the worker goes on
                connection.send((index, False, describe(error)))


def _death(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return f"the worker checking it was killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            pass
    return f"the worker checking it exited with status {exitcode}"
