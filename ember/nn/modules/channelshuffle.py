"""ChannelShuffle: interleave channel groups."""

from __future__ import annotations

from ember.nn._functional.vision import channel_shuffle
from ember.nn.modules._functional_layer import FunctionalLayer


class ChannelShuffle(FunctionalLayer):
    """Interleave the channels of ``groups`` groups (ShuffleNet)."""

    _fn = staticmethod(channel_shuffle)
    _args = ("groups",)

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups


__all__ = ["ChannelShuffle"]
