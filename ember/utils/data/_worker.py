"""What runs inside a DataLoader worker process, and how its errors travel back."""

from __future__ import annotations

import random
import sys
import traceback
from dataclasses import dataclass

import numpy as np

_worker_info = None


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
        raise exc


class IterableEnd:
    """Sent by a worker whose copy of an IterableDataset is exhausted."""

    def __init__(self, worker_id: int) -> None:
        self.worker_id = worker_id


def _seed_all(seed: int) -> None:
    import ember

    ember.manual_seed(seed)
    np.random.seed(seed % 2**32)
    random.seed(seed)


def worker_loop(dataset, index_queue, result_queue, fetch, worker_id: int, num_workers: int,
                seed: int, init_fn, is_iterable: bool) -> None:
    """Serve fetch requests until a ``None`` arrives on ``index_queue``."""
    global _worker_info
    _seed_all(seed)
    _worker_info = WorkerInfo(worker_id, num_workers, seed, dataset)
    where = f"in DataLoader worker process {worker_id}"
    init_error = None
    try:
        if init_fn is not None:
            init_fn(worker_id)
        stream = iter(dataset) if is_iterable else None
    except Exception:  # noqa: BLE001 - reported to the main process at the first fetch
        init_error = ExceptionWrapper(sys.exc_info(), where)
    while True:
        try:
            task = index_queue.get()
        except (EOFError, KeyboardInterrupt):
            return
        if task is None:
            return
        idx, indices = task
        if init_error is not None:
            result_queue.put((idx, init_error))
            continue
        try:
            data = fetch(stream if is_iterable else dataset, indices)
        except StopIteration:
            data = IterableEnd(worker_id)
        except Exception:  # noqa: BLE001 - every error goes back to the main process
            data = ExceptionWrapper(sys.exc_info(), where)
        result_queue.put((idx, data))
        del data
