"""Spatial transformers: ``affine_grid`` (one node, torch's AffineGridGeneratorBackward0) and
``grid_sample`` (bilinear/trilinear, nearest and bicubic sampling with zeros, border and
reflection padding, in torch's coordinate conventions).

``grid_sample`` is composed of ember ops (coordinates from the grid, then gathers of the input
at the taps weighted by the interpolation weights), so its gradients for the input and the grid,
and their derivatives, come from autograd; torch records one GridSampler2DBackward0 node
instead.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ember._tensor import Tensor
from ember.autograd.function import Op

__all__ = ["affine_grid", "grid_sample", "GRID_SAMPLE_INTERPOLATION_MODES",
           "GRID_SAMPLE_PADDING_MODES"]

GRID_SAMPLE_INTERPOLATION_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
GRID_SAMPLE_PADDING_MODES = {"zeros": 0, "border": 1, "reflection": 2}

_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners="
                  "False since 1.3.0. Please specify align_corners=True if the old behavior is "
                  "desired. See the documentation of grid_sample for details.")


# --- affine_grid ---------------------------------------------------------------------------


def _steps(n: int, align_corners: bool, dt) -> np.ndarray:
    """torch's sample positions in [-1, 1] along a dim of ``n`` points."""
    if n <= 1:
        return np.zeros(1, dt.np)
    from ember._creation import linspace

    r = linspace(-1, 1, n, dtype=dt)._data
    return r if align_corners else r * dt.np.type(n - 1) / dt.np.type(n)


def _base_grid(dt, spatial: tuple, align_corners: bool) -> np.ndarray:
    """(*spatial, k + 1): the x, y(, z) position of each output point, then a 1."""
    k = len(spatial)
    base = np.ones(spatial + (k + 1,), dt.np)
    for d in range(k):  # coordinate d runs along spatial dim k - 1 - d
        shape = [1] * k
        shape[k - 1 - d] = spatial[k - 1 - d]
        base[..., d] = _steps(spatial[k - 1 - d], align_corners, dt).reshape(shape)
    return base


class AffineGridGenerator(Op):
    node_name = "AffineGridGeneratorBackward0"

    @staticmethod
    def forward(ctx, theta, spatial=(), align_corners=False, dt=None):
        base = _base_grid(dt, spatial, align_corners)
        n, k = theta.shape[0], len(spatial)
        ctx.base = base.reshape(1, -1, k + 1)
        grid = np.matmul(np.broadcast_to(ctx.base, (n,) + ctx.base.shape[1:]),
                         np.swapaxes(theta, 1, 2))
        return grid.reshape((n,) + spatial + (k,))

    @staticmethod
    def backward(ctx, g):
        n = g.shape[0]
        k = g.shape[-1]
        base = Tensor._make(ctx.base).expand(n, -1, k + 1)
        return base.transpose(1, 2).bmm(g.reshape(n, -1, k)).transpose(1, 2)


def affine_grid(theta: Tensor, size, align_corners: bool | None = None) -> Tensor:
    """The sampling grid (N, *size[2:], k) of the affine maps ``theta`` (N, k, k + 1)."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, UserWarning, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got "
                         f"{theta.dtype}".replace("ember.", "torch."))
    size = tuple(size)
    if len(size) not in (4, 5):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    k = len(size) - 2
    if theta.ndim != 3 or theta.shape[-2] != k or theta.shape[-1] != k + 1:
        shape = "torch.Size(" + str(list(theta.shape)) + ")"
        raise ValueError(f"Expected a batch of {k}D affine matrices of shape Nx{k}x{k + 1} for "
                         f"size {size}. Got {shape}.")
    if align_corners and min(size[2:]) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size "
                      "grids when align_corners=True. This is not an issue for standard usage.",
                      UserWarning, stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    return AffineGridGenerator.apply(theta, spatial=size[2:], align_corners=align_corners,
                                     dt=theta.dtype)


# --- grid_sample ---------------------------------------------------------------------------


def _unnormalize(c: Tensor, size: int, align_corners: bool) -> Tensor:
    if align_corners:
        return (c + 1) / 2 * (size - 1)
    return ((c + 1) * size - 1) / 2


def _reflect(c: Tensor, twice_low: int, twice_high: int) -> Tensor:
    from ember.ops.pointwise import where

    if twice_low == twice_high:
        return c * 0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    c = (c - low).abs()
    extra = c.fmod(span)
    flips = (c / span).floor().detach()
    return where(flips.remainder(2) == 0, extra + low, span - extra + low)


def _pad(c: Tensor, size: int, padding: str, align_corners: bool) -> Tensor:
    if padding == "border":
        return c.clamp(0, size - 1)
    if padding == "reflection":
        if align_corners:
            return _reflect(c, 0, 2 * (size - 1))
        return _reflect(c, -1, 2 * size - 1).clamp(0, size - 1)
    return c


def _gather(flat: Tensor, sizes: tuple, taps: list) -> tuple:
    """Values of ``flat`` (N, C, S) at integer positions ``taps`` (one (N, L) tensor per dim,
    outermost dim first) and the mask of positions inside the input."""
    n, c, _ = flat.shape
    index = None
    valid = None
    stride = 1
    for t, size in zip(reversed(taps), reversed(sizes)):
        ok = (t >= 0) & (t <= size - 1)
        valid = ok if valid is None else valid & ok
        part = t.clamp(0, size - 1).long() * stride
        index = part if index is None else index + part
        stride *= size
    values = flat.gather(2, index.unsqueeze(1).expand(n, c, index.shape[-1]))
    return values, valid


def _linear(flat: Tensor, sizes: tuple, coords: list) -> Tensor:
    """Bilinear/trilinear interpolation at ``coords`` (outermost dim first)."""
    lows = [c.floor().detach() for c in coords]
    fracs = [c - lo for c, lo in zip(coords, lows)]
    out = None
    for corner in range(2 ** len(coords)):
        bits = [(corner >> (len(coords) - 1 - d)) & 1 for d in range(len(coords))]
        taps = [lo + b for lo, b in zip(lows, bits)]
        weight = None
        for f, b in zip(fracs, bits):
            w = f if b else 1 - f
            weight = w if weight is None else weight * w
        values, valid = _gather(flat, sizes, taps)
        term = values * (weight * valid).unsqueeze(1)
        out = term if out is None else out + term
    return out


def _cubic_weights(t: Tensor) -> list:
    a = -0.75  # torch's (and OpenCV's) cubic convolution constant

    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _bicubic(flat: Tensor, sizes: tuple, coords: list, padding: str,
             align_corners: bool) -> Tensor:
    """Bicubic interpolation over the 4 x 4 taps around ``coords`` = (y, x); padding applies to
    each tap's integer position, as in torch."""
    (h, w), (y, x) = sizes, coords
    y0, x0 = y.floor().detach(), x.floor().detach()
    wy, wx = _cubic_weights(y - y0), _cubic_weights(x - x0)
    out = None
    for i in range(4):
        row = None
        for j in range(4):
            ty = _pad(y0 + (i - 1), h, padding, align_corners).detach()
            tx = _pad(x0 + (j - 1), w, padding, align_corners).detach()
            values, valid = _gather(flat, sizes, [ty.floor(), tx.floor()])
            term = values * (wx[j] * valid).unsqueeze(1)
            row = term if row is None else row + term
        term = row * wy[i].unsqueeze(1)
        out = term if out is None else out + term
    return out


def _check_sampler(input: Tensor, grid: Tensor, mode: str) -> None:
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError("grid_sampler(): expected grid and input to have same batch size, but "
                           f"got input with sizes {list(input.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    if grid.shape[-1] != input.ndim - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.ndim - 2} in last "
                           f"dimension, but got grid with sizes {list(grid.shape)}")
    if input.ndim not in (4, 5) or grid.ndim != input.ndim:
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number "
                           f"of dimensions, but got input with sizes {list(input.shape)} and "
                           f"grid with sizes {list(grid.shape)}")
    if any(s == 0 for s in input.shape[2:]):
        raise RuntimeError("grid_sampler(): expected input to have non-empty spatial dimensions, "
                           f"but input has sizes {list(input.shape)} with dimension "
                           f"{next(i for i, s in enumerate(input.shape) if s == 0)} being empty")
    if mode == "bicubic" and input.ndim != 4:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if input.dtype is not grid.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have the same dtype, but "
                           f"input has {input.dtype} and grid has {grid.dtype}"
                           .replace("ember.", ""))


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear",
                padding_mode: str = "zeros", align_corners: bool | None = None) -> Tensor:
    """Sample ``input`` (N, C, *in) at the normalized positions ``grid`` (N, *out, k) in
    [-1, 1] (x first): the output is (N, C, *out)."""
    if mode not in GRID_SAMPLE_INTERPOLATION_MODES:
        raise ValueError("nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in GRID_SAMPLE_PADDING_MODES:
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, UserWarning, stacklevel=2)
        align_corners = False
    _check_sampler(input, grid, mode)
    n, c = input.shape[:2]
    sizes, out_shape = tuple(input.shape[2:]), tuple(grid.shape[1:-1])
    k = len(sizes)
    flat = input.reshape(n, c, math.prod(sizes))
    g = grid.reshape(n, -1, k)
    coords = []  # outermost spatial dim first; grid's last axis holds x (innermost) first
    for d in range(k):
        size = sizes[d]
        co = _unnormalize(g[..., k - 1 - d], size, align_corners)
        coords.append(co if mode == "bicubic" else _pad(co, size, padding_mode, align_corners))
    if mode == "nearest":
        taps = [co.detach().round() for co in coords]
        values, valid = _gather(flat, sizes, taps)
        # The grid gets a zero gradient (not none), as in torch: a weight of 1 that depends on it.
        one = sum((co - co.detach()) * 0 for co in coords) + valid
        out = values * one.unsqueeze(1)
    elif mode == "bilinear":
        out = _linear(flat, sizes, coords)
    else:
        out = _bicubic(flat, sizes, coords, padding_mode, align_corners)
    return out.reshape(n, c, *out_shape)
