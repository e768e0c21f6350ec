"""Covariance and correlation (``cov``, ``corrcoef``, composed as ATen composes them, so they
are differentiable with torch's graphs) and histograms (``histogram``, ``histogramdd``: no
gradient, torch's bin edges and its rule that the last bin includes its right edge).
"""

from __future__ import annotations

import warnings

import numpy as np

from ember import _dtype
from ember._tensor import Tensor
from ember.ops.pointwise_more import _CNAME, not_for


def _check_weights(name: str, w: Tensor, n: int, integral: bool) -> None:
    kind = "integral" if integral else "floating point"
    if w.ndim > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                           f"{name} with {w.ndim} dimensions")
    ok = not w.dtype.is_floating_point and w.dtype is not _dtype.bool_ if integral \
        else w.dtype.is_floating_point
    if not ok:
        raise RuntimeError(f"cov(): expected {name} to have {kind} dtype but got {name} with "
                           f"{_CNAME[w.dtype.name]} dtype")
    if w.numel() != n:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                           f"observations in the input but got {w.numel()} != {n}")
    if n and bool((w._data < 0).any()):
        raise RuntimeError(f"cov(): {name} cannot be negative")


def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None,
        aweights: Tensor | None = None) -> Tensor:
    """The covariance matrix of the variables (rows) over the observations (columns), with
    frequency and observation weights as in NumPy."""
    if input.ndim > 2:
        raise RuntimeError("cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.ndim} dimensions")
    if input.dtype is _dtype.bool_:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = input.view(1, -1) if input.ndim < 2 else input
    n = x.shape[1]
    w = None
    if fweights is not None:
        _check_weights("fweights", fweights, n, True)
        w = fweights
    if aweights is not None:
        _check_weights("aweights", aweights, n, False)
        w = aweights if w is None else w * aweights
    if w is None:
        from ember._creation import tensor

        w_sum = tensor(n, dtype=_dtype.int64)
    else:
        w_sum = w.sum()
        if not bool(w_sum._data != 0):
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    avg = (x if w is None else x * w).sum(1) / w_sum
    if w is not None and aweights is not None and correction != 0:
        norm = w_sum - correction * (w * aweights).sum() / w_sum
    else:
        norm = w_sum - correction
    if bool(norm._data <= 0):
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=2)
        norm = norm * 0
    x = x - avg.unsqueeze(1)
    c = x.mm((x if w is None else x * w).t())
    return c.true_divide(norm).squeeze()


def corrcoef(input: Tensor) -> Tensor:
    """Pearson correlation coefficients of the rows, clipped to [-1, 1]."""
    if input.ndim > 2:
        raise RuntimeError("corrcoef(): expected input to have two or fewer dimensions but got "
                           f"an input with {input.ndim} dimensions")
    c = cov(input)
    if c.ndim == 0:
        return c / c  # nan for a zero, nan or inf variance, else 1
    std = c.diagonal().sqrt()
    c = c / std.view(-1, 1)
    c = c / std.view(1, -1)
    return c.clip(-1, 1)


# --- histograms ----------------------------------------------------------------------------


def _fmt(v: float) -> str:
    return repr(int(v)) if np.isfinite(v) and float(v).is_integer() else repr(float(v))


def _outer_edges(x: np.ndarray, d: int, rng) -> tuple[float, float]:
    """torch's leftmost and rightmost edges of dimension ``d``: the given range, or the data's
    (an empty range widened by 0.5 each side; no data gives [0, 1])."""
    if rng is not None:
        lo, hi = float(rng[0]), float(rng[1])
    elif x.size:
        lo, hi = float(x.min()), float(x.max())
    else:
        lo, hi = 0.0, 1.0
    if not lo <= hi and np.isfinite(lo) and np.isfinite(hi):
        raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min "
                           f"{_fmt(lo)} max {_fmt(hi)} for dimension {d}")
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"torch.histogramdd: dimension {d}'s range [{_fmt(lo)}, {_fmt(hi)}] "
                           "is not finite")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return lo, hi


def _edges(x: np.ndarray, d: int, bins, rng, dt) -> np.ndarray:
    if isinstance(bins, Tensor):
        if bins.ndim != 1:
            raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, but "
                               f"got {bins.ndim} dimensions in the bins tensor for dimension {d}")
        return bins._data.astype(dt.np)
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension "
                           f"{d}")
    from ember._creation import linspace

    lo, hi = _outer_edges(x, d, rng)
    return linspace(lo, hi, bins + 1, dtype=dt)._data


def _histogramdd(data: np.ndarray, bins: list, rng, weight: Tensor | None, density: bool,
                 dt) -> tuple:
    """(hist, [edges per dim]) of the points ``data`` (N, D) in dtype ``dt``."""
    n, dims = data.shape
    edges = [_edges(data[:, d], d, bins[d],
                    None if rng is None else rng[2 * d:2 * d + 2], dt) for d in range(dims)]
    keep = np.ones(n, bool)
    pos = []
    for d, e in enumerate(edges):
        col = data[:, d]
        keep &= (col >= e[0]) & (col <= e[-1])
        p = np.searchsorted(e, col, side="right") - 1
        pos.append(np.clip(p, 0, len(e) - 2))  # the right edge belongs to the last bin
    shape = tuple(len(e) - 1 for e in edges)
    flat = np.ravel_multi_index(tuple(p[keep] for p in pos), shape) if keep.any() \
        else np.zeros(0, np.int64)
    w = None if weight is None else weight._data.reshape(-1)[keep].astype(np.float64)
    hist = np.bincount(flat, weights=w, minlength=int(np.prod(shape))).reshape(shape)
    if density:
        total = hist.sum()
        for d, e in enumerate(edges):
            width = np.diff(e.astype(np.float64)).reshape([-1 if i == d else 1
                                                            for i in range(dims)])
            hist = hist / width
        hist = hist / total
    return hist.astype(dt.np), edges


def _check_float(input: Tensor) -> None:
    if not input.dtype.is_floating_point:
        raise not_for("histogramdd", input.dtype)


def _tracked(arrays: tuple, inputs: list) -> tuple:
    """The results as tensors; like torch's, they require grad (through a node that refuses
    backward) when an input does."""
    from ember.autograd.grad_mode import STATE
    from ember.ops.pointwise import NotDifferentiable

    tracked = [t for t in inputs if t is not None and t._rg]
    if not (STATE.enabled and tracked):
        return tuple(Tensor._make(a) for a in arrays)
    return NotDifferentiable.apply(*tracked, fn=lambda *_: arrays, name="histogramdd")


def histogram(input: Tensor, bins=100, *, range=None, weight: Tensor | None = None,
              density: bool = False):
    """Counts of ``input`` in ``bins`` equal bins (or between the given edges), with the edges:
    ``(hist, bin_edges)``."""
    from ember.return_types import histogram as result

    _check_float(input)
    hist, edges = _histogramdd(input._data.reshape(-1, 1), [bins], range, weight, density,
                               input.dtype)
    return result(*_tracked((hist, edges[0]), [input, weight]))


def histogramdd(input: Tensor, bins=10, range=None, weight: Tensor | None = None,
                density: bool = False):
    """The D-dimensional histogram of the points ``input[..., :D]``: ``(hist, bin_edges)`` with
    one edges tensor per dimension."""
    from ember.return_types import histogramdd as result

    _check_float(input)
    dims = input.shape[-1]
    per_dim = list(bins) if isinstance(bins, list | tuple) else [bins] * dims
    if len(per_dim) != dims:
        raise RuntimeError(f"torch.histogramdd: expected {dims} sequences of bin edges for each "
                           f"of the {dims} dimensions of the input, but got {len(per_dim)}")
    hist, edges = _histogramdd(input._data.reshape(-1, dims), per_dim, range, weight, density,
                               input.dtype)
    hist, *edges = _tracked((hist, *edges), [input, weight])
    return result(hist, tuple(edges))


FUNCTIONS = {"cov": cov, "corrcoef": corrcoef, "histogram": histogram,
             "histogramdd": histogramdd}
METHODS = {"cov": cov, "corrcoef": corrcoef, "histogram": histogram}
