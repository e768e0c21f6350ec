"""ember.cuda: the GPU as ember sees it through CuPy (``cuda:0`` only).

Without CuPy or a GPU, ``is_available()`` is False and the calls that need a GPU raise torch's
``AssertionError("Torch not compiled with CUDA enabled")``, as torch's CPU build does. Seeding
calls are accepted and do nothing: ember draws random numbers on the CPU (torch's CPU stream)
and copies them to the GPU, so ``ember.manual_seed`` alone fixes them.
"""

from __future__ import annotations

from ember._backend import cupy_module, no_cuda_error
from ember.cuda import amp


def _cupy():
    cp = cupy_module()
    if cp is None:
        raise no_cuda_error()
    return cp


def is_available() -> bool:
    """Whether CuPy is installed and sees a GPU."""
    return cupy_module() is not None


def device_count() -> int:
    """1 where a GPU is available (ember computes on ``cuda:0`` only), else 0."""
    return 1 if is_available() else 0


def is_initialized() -> bool:
    return is_available()


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return False  # CuPy has no bfloat16 arrays


def current_device() -> int:
    _cupy()
    return 0


def set_device(device) -> None:
    from ember._backend import check_device

    check_device(device if not isinstance(device, int) else f"cuda:{device}")


def synchronize(device=None) -> None:
    """Wait for the GPU to finish the work queued so far (for timing)."""
    _cupy().cuda.Device(0).synchronize()


def get_device_name(device=None) -> str:
    return _cupy().cuda.runtime.getDeviceProperties(0)["name"].decode()


def get_device_capability(device=None) -> tuple[int, int]:
    cc = _cupy().cuda.Device(0).compute_capability
    return int(cc[:-1]), int(cc[-1])


def init() -> None:
    _cupy()


def manual_seed(seed: int) -> None:
    """Accepted and ignored: GPU tensors draw from ember's CPU generator (see above)."""
    int(seed)


def manual_seed_all(seed: int) -> None:
    int(seed)


def seed() -> None:
    return None


def seed_all() -> None:
    return None


def empty_cache() -> None:
    """Return the unused blocks of CuPy's memory pool to the driver."""
    cp = cupy_module()
    if cp is not None:
        cp.get_default_memory_pool().free_all_blocks()


def memory_allocated(device=None) -> int:
    cp = cupy_module()
    return 0 if cp is None else cp.get_default_memory_pool().used_bytes()


def max_memory_allocated(device=None) -> int:
    return memory_allocated(device)  # CuPy's pool keeps no peak


def memory_reserved(device=None) -> int:
    cp = cupy_module()
    return 0 if cp is None else cp.get_default_memory_pool().total_bytes()


__all__ = [
    "amp", "current_device", "device_count", "empty_cache", "get_device_capability",
    "get_device_name", "init", "is_available", "is_bf16_supported",
    "is_initialized", "manual_seed", "manual_seed_all", "max_memory_allocated",
    "memory_allocated", "memory_reserved", "seed", "seed_all", "set_device", "synchronize",
]


from ember.ops.introspection import OutOfMemoryError  # noqa: E402, F401 - torch.cuda.OutOfMemoryError
