"""ember.cpu.amp: torch.cpu.amp's deprecated names (``ember.amp`` with device "cpu")."""

from __future__ import annotations

from ember import _dtype
from ember.amp._device_amp import classes

autocast, GradScaler = classes("cpu", _dtype.bfloat16)

__all__ = ["GradScaler", "autocast"]
