"""ember.cpu (torch.cpu): the CPU as a device module, with the questions torch.cuda answers."""

from __future__ import annotations

__all__ = ["is_available", "is_initialized", "synchronize", "current_device", "device_count",
           "set_device"]


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return True


def synchronize(device=None) -> None:
    """Nothing to wait for: CPU ops finish before they return."""


def current_device() -> str:
    return "cpu"


def device_count() -> int:
    return 1


def set_device(device) -> None:
    """A no-op, as in torch (there is one CPU device)."""
