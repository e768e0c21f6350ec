"""F.fractional_max_pool2d / fractional_max_pool3d: max pooling over pseudo-random windows.

Without ``_random_samples`` each (batch, channel) plane draws its samples with
``ember.rand(N, C, nd, dtype=input.dtype)``, the call torch makes, so a seeded program pools
the same windows as torch; passing ``_random_samples`` makes the result deterministic.
"""

from __future__ import annotations

from ember._creation import legacy_name
from ember._random import rand
from ember._tensor import Tensor
from ember.nn._functional.pooling import _batched
from ember.ops import pool as _pool
from ember.ops.pool_fractional import FractionalMaxPool

_DIMS = {2: ("height", "width"), 3: ("time", "height", "width")}


def _sizes(v, nd: int, name: str, what: str) -> tuple:
    if isinstance(v, int):
        return (v,) * nd
    v = tuple(v)
    if len(v) == 1:
        return v * nd
    if len(v) != nd:
        raise RuntimeError(f"{name}: {what} must either be a single Int or tuple of Ints")
    return v


def _check(nd: int, x: Tensor, k: tuple, o: tuple, samples: Tensor) -> None:
    name = "fractional_max_pool2d" if nd == 2 else "fractional_max_pool3d_out"
    if not isinstance(x, Tensor):
        raise TypeError(f"fractional_max_pool{nd}d(): argument 'input' (position 1) must be "
                        f"Tensor, not "
                        f"{type(x).__name__}")
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: "
                           f"{list(x.shape)}")
    for d in range(1, x.ndim):
        if x.shape[d] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but got{list(x.shape)} with dimension {d} being "
                               "empty.")
    for label, n, ki, oi in zip(_DIMS[nd], x.shape[-nd:], k, o):
        # the 2-D check allows the last window to end at the input's end, the 3-D one not
        if oi + ki - 1 > n or (nd == 3 and oi + ki - 1 == n):
            raise RuntimeError(f"{name}(): pool {label} {ki} too large relative to input "
                               f"{label} {n}")
    if samples.dtype != x.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if samples.ndim != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.ndim}")
    batch, channels = (1, x.shape[0]) if x.ndim == nd + 1 else x.shape[:2]
    if samples.shape[0] < batch:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.shape[1] != channels:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples.shape[2] != nd:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {nd}; got "
                           f"{samples.shape[2]}.")


def _fractional_max_pool(nd: int, input: Tensor, kernel_size, output_size, output_ratio,
                         return_indices: bool, _random_samples: Tensor | None):
    name = f"fractional_max_pool{nd}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an "
                         "output_ratio")
    if output_size is None:
        if nd == 2 and len(output_ratio) > 2:
            raise ValueError(f"{name} requires output_ratio to either be a single Int or "
                             "tuple of Ints.")
        ratio = _sizes(output_ratio, nd, name, "output_ratio") if not isinstance(
            output_ratio, float) else (output_ratio,) * nd
        output_size = [int(input.size(d - nd) * r) for d, r in enumerate(ratio)]
    if _random_samples is None:
        if input.dtype.is_floating_point is False:
            raise RuntimeError(f"\"check_uniform_bounds\" not implemented for "
                               f"'{legacy_name(input.dtype)}'")
        n_batch = 1 if input.dim() == nd + 1 else input.size(0)
        _random_samples = rand(n_batch, input.size(-nd - 1), nd, dtype=input.dtype)
    k = _sizes(kernel_size, nd, name, "kernel_size")
    o = _sizes(output_size, nd, name, "output_size")
    _check(nd, input, k, o, _random_samples)
    op = _pool.for_dims(FractionalMaxPool, nd)
    samples = _random_samples._data
    out, idx = _batched(input, nd, lambda x: op.apply(x, ksize=k, osize=o, samples=samples))
    return (out, idx) if return_indices else out


def fractional_max_pool2d(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples: Tensor | None = None):
    """2-D fractional max pooling to ``output_size`` (or ``output_ratio`` of the input)."""
    return _fractional_max_pool(2, input, kernel_size, output_size, output_ratio,
                                return_indices, _random_samples)


def fractional_max_pool3d(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples: Tensor | None = None):
    """3-D fractional max pooling to ``output_size`` (or ``output_ratio`` of the input)."""
    return _fractional_max_pool(3, input, kernel_size, output_size, output_ratio,
                                return_indices, _random_samples)


__all__ = ["fractional_max_pool2d", "fractional_max_pool3d"]
