"""What runs inside a DataLoader worker process, and how its errors travel back."""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass

import numpy as np

_worker_info = None
WATCHDOG_INTERVAL = 1.0  # seconds between a worker's checks that the main process still lives


@dataclass(frozen=True)
class WorkerInfo:
    id: int
    num_workers: int
    seed: int
    dataset: object


def get_worker_info() -> WorkerInfo | None:
    """Inside a worker: its id, the worker count, its seed and its dataset copy; else None."""
    return _worker_info


class ExceptionWrapper:
    """An exception caught in a worker, carried to the main process with its traceback."""

    def __init__(self, exc_info, where: str) -> None:
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyError(msg)  # KeyError would otherwise quote the message
        try:
            exc = self.exc_type(msg)
        except Exception:  # noqa: BLE001 - constructors with other signatures
            raise RuntimeError(msg) from None
        try:
            raise exc
        finally:
            del exc  # else this frame and the exception's traceback keep each other (and the
            # loader's iterator, a caller's local) alive until the next cycle collection


class IterableEnd:
    """Sent by a worker whose copy of an IterableDataset is exhausted."""

    def __init__(self, worker_id: int) -> None:
        self.worker_id = worker_id


class ResumeIteration:
    """Sent to persistent workers before each new epoch. A worker answers it once the tasks
    queued before it are done, so the main process knows every later result is fresh."""


def _seed_all(seed: int) -> None:
    import ember

    ember.manual_seed(seed)
    np.random.seed(seed % 2**32)
    random.seed(seed)


def _on_sigint(signum, frame) -> None:
    """Ctrl-C reaches the whole process group. The main process raises KeyboardInterrupt and
    stops the workers (or, catching it, keeps loading); a worker that raised too would print
    one more traceback each."""


def _watch_parent(parent: int | None) -> None:
    # A SIGKILLed main process (the OOM killer) cannot stop its workers: they exit once they
    # are re-parented, or (a fork server's children) once the main process's end of the pipe
    # multiprocessing keeps to each child is closed; also when a fetch hangs.
    main = mp.parent_process()
    while (parent is None or os.getppid() == parent) and (main is None or main.is_alive()):
        time.sleep(WATCHDOG_INTERVAL)
    os._exit(1)


def _open(dataset, is_iterable: bool, where: str):
    """A fresh pass over the dataset: (source to fetch from, error to report instead)."""
    try:
        return (iter(dataset) if is_iterable else dataset), None
    except Exception:  # noqa: BLE001 - reported to the main process at the next fetch
        return None, ExceptionWrapper(sys.exc_info(), where)


def worker_loop(dataset, index_queue, result_queue, done, fetch, worker_id: int,
                num_workers: int, seed: int, init_fn, is_iterable: bool, parent: int | None
                ) -> None:
    """Serve fetch requests until a ``None`` arrives on ``index_queue``.

    ``parent`` is the main process's pid (None where a fork server is the parent); ``done``
    is set when the main process shuts down: tasks still queued are skipped.
    """
    global _worker_info
    signal.signal(signal.SIGINT, _on_sigint)
    if hasattr(signal, "pthread_sigmask"):  # blocked by the main process around the fork
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True,
                     name="ember_worker_watchdog").start()
    _seed_all(seed)
    _worker_info = WorkerInfo(worker_id, num_workers, seed, dataset)
    where = f"in DataLoader worker process {worker_id}"
    init_error = None
    try:
        if init_fn is not None:
            init_fn(worker_id)
    except Exception:  # noqa: BLE001 - reported to the main process at the first fetch
        init_error = ExceptionWrapper(sys.exc_info(), where)
    source, open_error = _open(dataset, is_iterable, where)
    while (task := index_queue.get()) is not None:
        if isinstance(task, ResumeIteration):
            source, open_error = _open(dataset, is_iterable, where)
            result_queue.put((task, None))
            continue
        if done.is_set():
            continue
        idx, indices = task
        data = init_error or open_error
        if data is None:
            try:
                data = fetch(source, indices)
            except StopIteration:
                data = IterableEnd(worker_id)
            except Exception:  # noqa: BLE001 - every error goes back to the main process
                data = ExceptionWrapper(sys.exc_info(), where)
        result_queue.put((idx, data))
        del data
    if done.is_set():
        result_queue.cancel_join_thread()  # nobody reads the results now: never block at exit
