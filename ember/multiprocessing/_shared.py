"""Tensor storage in POSIX shared memory: what ``Tensor.share_memory_()`` does.

A shared tensor's array lives in a ``multiprocessing.shared_memory`` segment. Forked children
see the same pages; pickled through a multiprocessing queue or to a spawned process, the tensor
travels as the segment's name and the array's layout, and the receiver maps the same memory.
The process that created a segment unlinks it when its array is garbage collected.
"""

from __future__ import annotations

import os
import weakref
from multiprocessing import shared_memory

import numpy as np

_SEGMENTS: dict = {}  # id(array) -> (SharedMemory, created here)


def _release(key: int, shm: shared_memory.SharedMemory, owner: bool) -> None:
    _SEGMENTS.pop(key, None)
    if owner and shm._pid == os.getpid():  # the creator (not a forked copy) removes the name
        try:
            shm.unlink()
        except FileNotFoundError:
            pass
    try:
        shm.close()
    except BufferError:  # (at exit) the array still maps it: the OS unmaps it with the process
        pass


def _track(arr: np.ndarray, shm: shared_memory.SharedMemory, owner: bool) -> np.ndarray:
    _SEGMENTS[id(arr)] = shm
    weakref.finalize(arr, _release, id(arr), shm, owner)
    return arr


def new_shared_array(data: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of ``data`` in a new shared-memory segment."""
    shm = shared_memory.SharedMemory(create=True, size=max(data.nbytes, 1))
    shm._pid = os.getpid()
    arr = np.ndarray(data.shape, dtype=data.dtype, buffer=shm.buf)
    arr[...] = data
    return _track(arr, shm, True)


def attach(name: str, shape: tuple, dtype: str) -> np.ndarray:
    """The array of a segment another process shared (by name)."""
    # (Python registers the name with the resource tracker again; processes started by
    # multiprocessing share the creator's tracker, whose set of names holds it once)
    shm = shared_memory.SharedMemory(name=name)
    shm._pid = None
    arr = np.ndarray(shape, dtype=np.dtype(dtype), buffer=shm.buf)
    return _track(arr, shm, False)


def segment_of(arr) -> shared_memory.SharedMemory | None:
    """The shared segment ``arr`` lives in, if it is a tracked shared array."""
    return _SEGMENTS.get(id(arr)) if isinstance(arr, np.ndarray) else None


def share_memory_(t):
    """Move ``t``'s values into shared memory, in place (no-op when already shared)."""
    if segment_of(t._data) is None:
        if not isinstance(t._data, np.ndarray):
            raise RuntimeError("share_memory_: only CPU tensors can be moved to shared memory "
                               "in ember")
        t._data = new_shared_array(t._data)
    return t


def is_shared(t) -> bool:
    return segment_of(t._data) is not None
