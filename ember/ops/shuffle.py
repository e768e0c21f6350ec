"""pixel_shuffle, pixel_unshuffle, channel_shuffle: fixed permutations of the elements.

Each forward is a reshape, a transpose and a copy. A permutation's adjoint is its inverse, so
the backward of each primitive is the other one (or itself with the inverse grouping), and
every higher derivative comes free.
"""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor
from ember.autograd.function import Op


def _permuted(x: np.ndarray, split: tuple, order: tuple, shape: tuple) -> np.ndarray:
    """``x`` viewed as ``split``, its axes put in ``order``, copied out as ``shape``."""
    out = x.reshape(split).transpose(order).reshape(shape)
    return out.copy() if np.may_share_memory(out, x) else out


def _pixel_layout(shape: tuple, r: int, unshuffle: bool) -> tuple:
    """How the trailing (C * r * r, H, W) and (C, H * r, W * r) dims map onto each other: the
    input's dims split, the order of the split axes, the output's dims."""
    if unshuffle:
        c, h, w = shape[-3], shape[-2] // r, shape[-1] // r
        return (c, h, r, w, r), (0, 2, 4, 1, 3), (c * r * r, h, w)
    c, h, w = shape[-3] // (r * r), shape[-2], shape[-1]
    return (c, r, r, h, w), (0, 3, 1, 4, 2), (c, h * r, w * r)


class PixelShuffle(Op):
    """(*, C * r * r, H, W) -> (*, C, H * r, W * r), or back with ``unshuffle``."""

    node_name = "PixelShuffleBackward0"

    @staticmethod
    def forward(ctx, x, factor=1, unshuffle=False):
        ctx.factor, ctx.unshuffle = factor, unshuffle
        split, order, out = _pixel_layout(x.shape, factor, unshuffle)
        lead = x.shape[:-3]
        k = len(lead)
        return _permuted(x, (*lead, *split), (*range(k), *(k + i for i in order)), (*lead, *out))

    @staticmethod
    def backward(ctx, g):
        inverse = PixelShuffle if ctx.unshuffle else PixelUnshuffle
        return inverse.apply(g, factor=ctx.factor, unshuffle=not ctx.unshuffle)


class PixelUnshuffle(PixelShuffle):
    node_name = "PixelUnshuffleBackward0"


class ChannelShuffle(Op):
    """Channels (dim 1) read as a (groups, C / groups) grid, written out column by column."""

    node_name = "ChannelShuffleBackward0"

    @staticmethod
    def forward(ctx, x, groups=1):
        ctx.groups = groups
        n, c, *rest = x.shape
        return _permuted(x, (n, groups, c // groups, *rest),
                         (0, 2, 1, *range(3, x.ndim + 1)), x.shape)

    @staticmethod
    def backward(ctx, g):
        # The inverse permutation reads the grid the other way round.
        return ChannelShuffle.apply(g, groups=g.shape[1] // ctx.groups)


def _check_factor(input: Tensor, factor: int, name: str, what: str) -> None:
    if input.ndim < 3:
        raise RuntimeError(f"{name} expects input to have at least 3 dimensions, but got input "
                           f"with {input.ndim} dimension(s)")
    if factor <= 0:
        raise RuntimeError(f"{name} expects a positive {what}, but got {factor}")


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """Rearrange (*, C * r * r, H, W) into (*, C, H * r, W * r), r = ``upscale_factor``."""
    _check_factor(input, upscale_factor, "pixel_shuffle", "upscale_factor")
    c, sq = input.shape[-3], upscale_factor * upscale_factor
    if c % sq:
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be divisible "
                           f"by the square of upscale_factor, but input.size(-3)={c} is not "
                           f"divisible by {sq}")
    return PixelShuffle.apply(input, factor=upscale_factor)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """Rearrange (*, C, H * r, W * r) into (*, C * r * r, H, W), r = ``downscale_factor``."""
    _check_factor(input, downscale_factor, "pixel_unshuffle", "downscale_factor")
    for dim, what in ((-2, "height"), (-1, "width")):
        if input.shape[dim] % downscale_factor:
            raise RuntimeError(f"pixel_unshuffle expects {what} to be divisible by "
                               f"downscale_factor, but input.size({dim})={input.shape[dim]} is "
                               f"not divisible by {downscale_factor}")
    return PixelUnshuffle.apply(input, factor=downscale_factor, unshuffle=True)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Interleave the channels of ``groups`` groups: (N, C, *) -> (N, C, *)."""
    if input.ndim <= 2:
        raise RuntimeError("channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError("Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    if input.shape[1] % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got "
                           f"{input.shape[1]} channels and {groups} groups.")
    return ChannelShuffle.apply(input, groups=groups)


METHODS: dict = {}
FUNCTIONS = {"channel_shuffle": channel_shuffle, "pixel_shuffle": pixel_shuffle,
             "pixel_unshuffle": pixel_unshuffle}
