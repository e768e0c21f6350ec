"""ember.cpu: torch.cpu's answers for the one CPU device, and its deprecated ``amp`` names."""

from __future__ import annotations

from ember.cpu import amp


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return True


def device_count() -> int:
    return 1


def current_device() -> str:
    return "cpu"


def set_device(device) -> None:
    """Accepted and ignored, as in torch (there is one CPU device)."""


def synchronize(device=None) -> None:
    """Nothing to wait for: CPU work is done when a call returns."""


__all__ = ["amp", "current_device", "device_count", "is_available", "is_initialized",
           "set_device", "synchronize"]
