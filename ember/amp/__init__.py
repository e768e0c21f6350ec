"""ember.amp: automatic mixed precision, as ``torch.amp``.

``autocast`` regions run the ops on torch's autocast lists in bfloat16/float16 or float32
(``autocast_mode`` for the state, ``_casting`` for the casts, ``_lists`` for the lists);
``GradScaler`` scales the loss and skips steps whose gradients overflow.
"""

from __future__ import annotations

from ember.amp.autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available
from ember.amp.grad_scaler import GradScaler, OptState

__all__ = ["GradScaler", "OptState", "autocast", "custom_bwd", "custom_fwd",
           "is_autocast_available"]
