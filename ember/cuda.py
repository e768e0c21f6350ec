"""ember.cuda: answers for a machine without CUDA, as torch's CPU build gives them.

ember computes with NumPy on the CPU, so ``is_available()`` is always False and the calls that
need a GPU raise torch's ``AssertionError("Torch not compiled with CUDA enabled")``. Seeding
and cache calls are accepted and do nothing, so CPU programs that call them run unchanged.
"""

from __future__ import annotations

from ember._backend import no_cuda_error


def is_available() -> bool:
    """False: ember has no CUDA backend."""
    return False


def device_count() -> int:
    return 0


def is_initialized() -> bool:
    return False


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return False


def manual_seed(seed: int) -> None:
    """Accepted and ignored (there is no CUDA generator), as in torch without a GPU."""
    int(seed)


def manual_seed_all(seed: int) -> None:
    int(seed)


def seed() -> None:
    return None


def seed_all() -> None:
    return None


def empty_cache() -> None:
    return None


def memory_allocated(device=None) -> int:
    return 0


def max_memory_allocated(device=None) -> int:
    return 0


def memory_reserved(device=None) -> int:
    return 0


def _unavailable(*args, **kwargs):
    raise no_cuda_error()


current_device = _unavailable
synchronize = _unavailable
get_device_name = _unavailable
get_device_properties = _unavailable
get_device_capability = _unavailable
set_device = _unavailable
init = _unavailable

__all__ = [
    "current_device", "device_count", "empty_cache", "get_device_capability",
    "get_device_name", "get_device_properties", "init", "is_available", "is_bf16_supported",
    "is_initialized", "manual_seed", "manual_seed_all", "max_memory_allocated",
    "memory_allocated", "memory_reserved", "seed", "seed_all", "set_device", "synchronize",
]
