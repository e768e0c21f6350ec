"""ember.multiprocessing: Python's ``multiprocessing`` with tensors that share memory between
processes, as ``torch.multiprocessing``.

``Tensor.share_memory_()`` / ``Module.share_memory()`` move values into POSIX shared memory;
tensors sent through this module's queues and pipes (or as a spawned process's arguments) are
moved there first and arrive as views of the same memory. That is what Hogwild training
needs: every process updates one shared model.

>>> import ember.multiprocessing as mp
>>> model.share_memory()
>>> procs = [mp.Process(target=train, args=(model,)) for _ in range(4)]
"""

import multiprocessing
import sys
from multiprocessing import *  # noqa: F403 - torch re-exports Python's multiprocessing

from ember.multiprocessing.reductions import init_reductions
from ember.multiprocessing.spawn import (
    ProcessContext,
    ProcessExitedException,
    ProcessRaisedException,
    SpawnContext,
    spawn,
    start_processes,
)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies",
           "spawn", "start_processes", "ProcessContext", "SpawnContext",
           "ProcessRaisedException", "ProcessExitedException", *multiprocessing.__all__]

# ember shares by name (a POSIX shared-memory segment) under either of torch's strategies
if sys.platform in ("darwin", "win32"):
    _sharing_strategy = "file_system"
    _all_sharing_strategies = {"file_system"}
else:
    _sharing_strategy = "file_descriptor"
    _all_sharing_strategies = {"file_descriptor", "file_system"}


def set_sharing_strategy(new_strategy: str) -> None:
    global _sharing_strategy
    if new_strategy not in _all_sharing_strategies:
        raise AssertionError(f"invalid sharing strategy {new_strategy!r}, expected one of "
                             f"{_all_sharing_strategies}")
    _sharing_strategy = new_strategy


def get_sharing_strategy() -> str:
    return _sharing_strategy


def get_all_sharing_strategies() -> set:
    return _all_sharing_strategies


init_reductions()
