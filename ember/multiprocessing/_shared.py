"""Tensor storage in POSIX shared memory: what ``Tensor.share_memory_()`` does.

A shared tensor's array lives in a ``multiprocessing.shared_memory`` segment. Forked children
see the same pages; pickled through a multiprocessing queue or to a spawned process, the tensor
travels as the segment's name and the array's layout, and the receiver maps the same memory.
The process that created a segment unlinks it when its array is garbage collected.

A DataLoader worker hands its batches over instead (``new_handoff_array``): the segment is
meant for one receiver, which unlinks the name as soon as it has mapped it, so the memory goes
when the last process holding it lets go and no name outlives the transfer; the worker only
closes its mapping.
"""

from __future__ import annotations

import math
import os
import secrets
import weakref
from multiprocessing import shared_memory

import numpy as np

_SEGMENTS: dict = {}  # id(array) -> (SharedMemory, created here)
_HANDOFF: dict = {}  # id(array) -> whether it was sent: arrays for one receiver to unlink
_NAMELESS: set = set()  # id(array) of handed-off arrays received (their names are unlinked)
WORKER = [None]  # in a DataLoader worker, its segments' name prefix: tensors it sends are
# handed off, in segments named after the main process (a test can tell its own)


def _release(key: int, shm: shared_memory.SharedMemory, owner: bool) -> None:
    _SEGMENTS.pop(key, None)
    _HANDOFF.pop(key, None)
    _NAMELESS.discard(key)
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


def new_handoff_array(shape: tuple, dtype) -> np.ndarray:
    """An uninitialised array in a new segment that one receiver will unlink (see above)."""
    dtype = np.dtype(dtype)
    name = None if WORKER[0] is None else WORKER[0] + secrets.token_hex(6)
    shm = shared_memory.SharedMemory(name, create=True,
                                     size=max(math.prod(shape) * dtype.itemsize, 1))
    shm._pid = os.getpid()
    arr = np.ndarray(shape, dtype=dtype, buffer=shm.buf)
    _HANDOFF[id(arr)] = False
    return _track(arr, shm, False)


def handoff(arr: np.ndarray) -> np.ndarray:
    """``arr`` itself if it is a handoff array not sent yet (now marked sent), else a handoff
    copy of it: each send gets a segment of its own to unlink."""
    if _HANDOFF.get(id(arr)) is False:
        _HANDOFF[id(arr)] = True
        return arr
    out = new_handoff_array(arr.shape, arr.dtype)
    out[...] = arr
    _HANDOFF[id(out)] = True
    return out


def handoff_prefix(main_pid: int) -> str:
    """The name prefix of the segments DataLoader workers of process ``main_pid`` hand over."""
    return f"ember_{main_pid}_"


def attach(name: str, shape: tuple, dtype: str) -> np.ndarray:
    """The array of a segment another process shared (by name)."""
    # (Python registers the name with the resource tracker again; processes started by
    # multiprocessing share the creator's tracker, whose set of names holds it once)
    shm = shared_memory.SharedMemory(name=name)
    shm._pid = None
    arr = np.ndarray(shape, dtype=np.dtype(dtype), buffer=shm.buf)
    return _track(arr, shm, False)


def take_over(arr: np.ndarray) -> None:
    """Unlink the name of a handed-off segment just attached: the mapping keeps the memory."""
    segment_of(arr).unlink()
    _NAMELESS.add(id(arr))


def by_name(arr) -> bool:
    """Can another process attach to ``arr`` by its segment's name (``share_memory_()``)?"""
    key = id(arr)
    return segment_of(arr) is not None and key not in _HANDOFF and key not in _NAMELESS


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
