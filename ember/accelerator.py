"""ember.accelerator: the device-agnostic accelerator API. ember has no accelerator."""

from __future__ import annotations


def is_available() -> bool:
    return False


def current_accelerator(check_available: bool = False) -> None:
    return None


def device_count() -> int:
    return 0
