"""PixelShuffle and PixelUnshuffle: layers that only move elements between channels and space."""

from __future__ import annotations

from ember.nn._functional.vision import pixel_shuffle, pixel_unshuffle
from ember.nn.modules._functional_layer import FunctionalLayer


class PixelShuffle(FunctionalLayer):
    """(*, C * r * r, H, W) -> (*, C, H * r, W * r): sub-pixel upsampling."""

    _fn = staticmethod(pixel_shuffle)
    _args = ("upscale_factor",)

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor


class PixelUnshuffle(FunctionalLayer):
    """(*, C, H * r, W * r) -> (*, C * r * r, H, W): the inverse of PixelShuffle."""

    _fn = staticmethod(pixel_unshuffle)
    _args = ("downscale_factor",)

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor


__all__ = ["PixelShuffle", "PixelUnshuffle"]
