"""F.pad and F.interpolate: linear maps built from per-dim index / weight matrices; the pixel
and channel shuffles (ember/ops/shuffle.py)."""

from __future__ import annotations

import math

import numpy as np

from ember._tensor import Tensor
from ember.ops._common import variant
from ember.ops.pool import ConstantPadNd, PadResample, Resample, gather_matrix
from ember.ops.shuffle import channel_shuffle, pixel_shuffle, pixel_unshuffle

_PAD_NAMES = {"reflect": "ReflectionPad", "replicate": "ReplicationPad",
              "circular": "CircularPad"}


def pad(input: Tensor, pad, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the trailing dims: ``pad = (left_last, right_last, left_prev, right_prev, ...)``."""
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    k = len(pad) // 2
    if k > input.ndim:
        raise RuntimeError("Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(pad)} and input of dimension "
                           f"{input.ndim}")
    per_dim = [(pad[2 * i], pad[2 * i + 1]) for i in range(k)][::-1]
    if mode == "constant":
        pads = ((0, 0),) * (input.ndim - k) + tuple(per_dim)
        return ConstantPadNd.apply(input, pads=pads, value=0 if value is None else value)
    if mode not in _PAD_NAMES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if k not in (1, 2, 3) or input.ndim not in (k + 1, k + 2):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {input.ndim}D input tensor.")
    mats = [_pad_matrix(mode, n, lo, hi, input.ndim - k + i, input.shape)
            for i, ((lo, hi), n) in enumerate(zip(per_dim, input.shape[input.ndim - k:]))]
    op = Resample if mode == "circular" else PadResample  # torch's circular pad saves nothing
    return variant(op, f"{_PAD_NAMES[mode]}{k}DBackward0").apply(input, mats=tuple(mats))


def _pad_matrix(mode: str, n: int, lo: int, hi: int, dim: int, shape) -> np.ndarray:
    j = np.arange(-lo, n + hi)
    if mode == "reflect":
        if lo >= n or hi >= n:
            raise RuntimeError("Argument #4: Padding size should be less than the corresponding "
                               f"input dimension, but got: padding ({lo}, {hi}) at dimension "
                               f"{dim} of input {list(shape)}")
        idx = np.abs(j)
        idx = np.where(idx >= n, 2 * (n - 1) - idx, idx)
    elif mode == "replicate":
        idx = np.clip(j, 0, n - 1)
    else:
        if lo > n or hi > n:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        idx = j % n
    return gather_matrix(idx, n)


_INTERP = {"nearest": "UpsampleNearest{}DBackward0",
           "nearest-exact": "_UpsampleNearestExact{}DBackward0",
           "linear": "UpsampleLinear1DBackward0", "bilinear": "UpsampleBilinear2DBackward0"}
_NEEDS = {"linear": 3, "bilinear": 4}


def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial dims: nearest, nearest-exact, (bi)linear, or area (adaptive average)."""
    if mode in ("bicubic", "trilinear") or antialias:
        raise NotImplementedError(f"ember's interpolate does not support mode={mode!r}"
                                  f"{' with antialias=True' if antialias else ''}")
    if mode not in _INTERP and mode != "area":
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported "
                                  f"(got {input.ndim}D) for the modes: nearest | linear | "
                                  f"bilinear | bicubic | trilinear | area | nearest-exact (got "
                                  f"{mode})")
    if mode not in ("linear", "bilinear") and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    if size is None and scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    k = input.ndim - 2
    if mode in _NEEDS and input.ndim != _NEEDS[mode]:
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs "
                                  f"{_NEEDS[mode]}D input")
    if k not in (1, 2):
        raise NotImplementedError(f"Input Error: Only 3D and 4D input Tensors supported by ember "
                                  f"(got {input.ndim}D) for the modes: nearest | linear | "
                                  f"bilinear | nearest-exact (got {mode})")
    ins = tuple(input.shape[2:])
    if size is not None:
        outs = (size,) * k if isinstance(size, int) else tuple(size)
        if len(outs) != k:
            raise ValueError(f"Input and output must have the same number of spatial dimensions,"
                             f" but got input with spatial dimensions of {list(ins)} and output "
                             f"size of {list(outs)}. Please provide input tensor in (N, C, d1, "
                             "d2, ...,dK) format and output size in (o1, o2, ...,oK) format.")
        scales = (None,) * k
    else:
        sf = (scale_factor,) * k if isinstance(scale_factor, int | float) else tuple(scale_factor)
        outs = tuple(math.floor(n * s) for n, s in zip(ins, sf))
        scales = (None,) * k if recompute_scale_factor else sf
    if mode != "area":  # adaptive pooling takes empty sizes
        _check_sizes(input, ins, outs)
    if mode == "area":
        from ember.nn._functional.pooling import adaptive_avg_pool1d, adaptive_avg_pool2d

        return (adaptive_avg_pool1d if k == 1 else adaptive_avg_pool2d)(input, outs)
    mats = tuple(_interp_matrix(mode, n, o, s, align_corners) for n, o, s in zip(ins, outs, scales))
    return variant(Resample, _INTERP[mode].format(k)).apply(input, mats=mats)


def _check_sizes(input: Tensor, ins: tuple, outs: tuple) -> None:
    if min(ins) <= 0 or min(outs) <= 0:
        axes = ("D", "H", "W")[3 - len(ins):]
        shown = [", ".join(f"{a}: {n}" for a, n in zip(axes, s)) for s in (ins, outs)]
        sep = " and " if len(ins) == 1 else " "
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"({shown[0]}){sep}output ({shown[1]})")
    if not math.prod(input.shape[1:]):
        raise RuntimeError(f"Non-empty {input.ndim}D data tensor expected but got a tensor with "
                           f"sizes {list(input.shape)}")


def _interp_matrix(mode: str, n: int, o: int, scale, align_corners) -> np.ndarray:
    dst = np.arange(o)
    if mode.startswith("nearest"):
        # torch computes the source index in float32: floor((dst [+ 0.5]) * in / out).
        s = np.float32(1.0 / scale) if scale else np.float32(n) / np.float32(o)
        off = np.float32(0.5) if mode == "nearest-exact" else np.float32(0.0)
        idx = np.minimum(np.floor((dst.astype(np.float32) + off) * s).astype(np.int64), n - 1)
        return gather_matrix(idx, n)
    if align_corners:
        src = dst * ((n - 1) / (o - 1)) if o > 1 else np.zeros(o)
    else:
        s = 1.0 / scale if scale else n / o
        src = np.maximum((dst + 0.5) * s - 0.5, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), n - 1)
    i1 = np.minimum(i0 + 1, n - 1)
    lam = src - i0
    m = np.zeros((o, n))
    np.add.at(m, (dst, i0), 1.0 - lam)
    np.add.at(m, (dst, i1), lam)
    return m


__all__ = ["channel_shuffle", "interpolate", "pad", "pixel_shuffle", "pixel_unshuffle"]
