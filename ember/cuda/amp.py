"""ember.cuda.amp: torch.cuda.amp's deprecated names (``ember.amp`` with device "cuda").

Without a GPU, ``autocast()`` and ``GradScaler()`` disable themselves with torch's warnings,
so code written for a GPU runs its float32 step unchanged, as torch's CPU build does.
"""

from __future__ import annotations

import functools

from ember import _dtype
from ember.amp import autocast_mode
from ember.amp._device_amp import classes, deprecation

autocast, GradScaler = classes("cuda", _dtype.float16)


def amp_definitely_not_available() -> bool:
    from ember import cuda

    return not cuda.is_available()


def custom_fwd(fwd=None, *, cast_inputs=None):
    """Deprecated: ``ember.amp.custom_fwd(..., device_type='cuda')``."""
    deprecation("cuda", "custom_fwd", "custom_fwd(args..., device_type='cuda')")
    return functools.partial(autocast_mode.custom_fwd, device_type="cuda")(
        fwd=fwd, cast_inputs=cast_inputs)


def custom_bwd(bwd):
    """Deprecated: ``ember.amp.custom_bwd(..., device_type='cuda')``."""
    deprecation("cuda", "custom_bwd", "custom_bwd(args..., device_type='cuda')")
    return autocast_mode.custom_bwd(bwd, device_type="cuda")


__all__ = ["GradScaler", "amp_definitely_not_available", "autocast", "custom_bwd", "custom_fwd"]
