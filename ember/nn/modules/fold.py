"""Fold and Unfold: col2im and im2col as layers."""

from __future__ import annotations

from ember.nn._functional import conv as F
from ember.nn.modules._functional_layer import FunctionalLayer


class Unfold(FunctionalLayer):
    """Extract sliding local blocks (im2col): (N, C, H, W) -> (N, C * kh * kw, L)."""

    _fn = staticmethod(F.unfold)
    _args = ("kernel_size", "dilation", "padding", "stride")

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride


class Fold(FunctionalLayer):
    """Combine sliding local blocks into an image (col2im), summing overlaps."""

    _fn = staticmethod(F.fold)
    _args = ("output_size", "kernel_size", "dilation", "padding", "stride")

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride


__all__ = ["Fold", "Unfold"]
