"""ember.signal (torch.signal): signal-processing helpers."""

from ember.signal import windows

__all__ = ["windows"]
