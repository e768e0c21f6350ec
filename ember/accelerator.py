"""ember.accelerator: the device-agnostic accelerator API; CUDA (through CuPy) where
``ember.cuda.is_available()``, else none."""

from __future__ import annotations

from ember import cuda
from ember._backend import CUDA0, device


def is_available() -> bool:
    return cuda.is_available()


def current_accelerator(check_available: bool = False) -> device | None:
    """``device(type='cuda')`` where a GPU is available, else None."""
    return device("cuda") if cuda.is_available() else None


def device_count() -> int:
    return cuda.device_count()


def current_device_index() -> int:
    return CUDA0.index if cuda.is_available() else -1


def synchronize(device=None) -> None:
    cuda.synchronize(device)
