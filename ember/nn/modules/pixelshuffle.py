"""PixelShuffle, PixelUnshuffle and ChannelShuffle: layers that only permute elements."""

from __future__ import annotations

from ember.nn._functional.vision import channel_shuffle, pixel_shuffle, pixel_unshuffle
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


class ChannelShuffle(FunctionalLayer):
    """Interleave the channels of ``groups`` groups (ShuffleNet)."""

    _fn = staticmethod(channel_shuffle)
    _args = ("groups",)

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups


__all__ = ["ChannelShuffle", "PixelShuffle", "PixelUnshuffle"]
