"""ember.backends: which accelerator libraries are present (none: ember runs on NumPy)."""

from __future__ import annotations

from ember.backends import cuda, cudnn, mps

__all__ = ["cuda", "cudnn", "mps"]
