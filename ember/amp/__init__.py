"""ember.amp: automatic mixed precision, as ``torch.amp`` on a CPU build.

``GradScaler`` is complete (loss scaling, inf/NaN step skipping, growth and backoff);
``autocast`` tracks the autocast state without casting (see ``autocast_mode``).
"""

from __future__ import annotations

from ember.amp.autocast_mode import autocast, is_autocast_available
from ember.amp.grad_scaler import GradScaler, OptState

__all__ = ["GradScaler", "OptState", "autocast", "is_autocast_available"]
