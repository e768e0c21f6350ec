"""Searching sorted data: searchsorted, bucketize; and unique_consecutive."""

from __future__ import annotations

import numpy as np

from ember._backend import xp_of
from ember._tensor import Tensor, _wrap_dim


def _side(right: bool, side: str | None) -> str:
    if side is None:
        return "right" if right else "left"
    if side not in ("left", "right"):
        raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got "
                           f"{side}")
    return side


def _search(seq: np.ndarray, vals: np.ndarray, side: str) -> np.ndarray:
    if seq.ndim == 1:
        return np.searchsorted(seq, vals, side=side)
    # Row-wise: count the boundaries below each value (exact, vectorized over all rows).
    below = seq[..., None, :] <= vals[..., :, None] if side == "right" else \
        seq[..., None, :] < vals[..., :, None]
    return below.sum(-1)


def searchsorted(sorted_sequence: Tensor, input, *, out_int32: bool = False,
                 right: bool = False, side: str | None = None, sorter=None) -> Tensor:
    """Indices where ``input`` would be inserted into the (row-wise) sorted sequence."""
    seq = sorted_sequence._data
    if sorter is not None:
        seq = np.take_along_axis(seq, sorter._data, -1)
    scalar = not isinstance(input, Tensor)
    vals = np.asarray(input, dtype=seq.dtype) if scalar else input._data
    if seq.ndim > 1 and (vals.ndim != seq.ndim or vals.shape[:-1] != seq.shape[:-1]):
        raise RuntimeError(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
            "dimensions of boundaries tensor and input value tensor must match, but we got "
            f"boundaries tensor {list(seq.shape)} and input value tensor {list(vals.shape)}")
    out = _search(seq, vals, _side(right, side))
    return Tensor._make(np.asarray(out, dtype=np.int32 if out_int32 else np.int64))


def bucketize(input, boundaries: Tensor, *, out_int32: bool = False,
              right: bool = False) -> Tensor:
    """Index of the bucket (between sorted 1-D ``boundaries``) each element falls into."""
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def unique_consecutive(x: Tensor, return_inverse: bool = False, return_counts: bool = False,
                       dim: int | None = None):
    """Collapse runs of equal consecutive elements (or slices along ``dim``)."""
    a = x._data.reshape(-1) if dim is None else np.moveaxis(x._data, _wrap_dim(dim, x.ndim), 0)
    n = a.shape[0]
    if n:
        change = np.any((a[1:] != a[:-1]).reshape(n - 1, -1), axis=1)
        starts = np.concatenate([xp_of(a).ones(1, dtype=bool), change])
    else:
        starts = np.zeros(0, dtype=bool, like=a)
    vals = a[starts]
    out = [Tensor._make(vals if dim is None else np.moveaxis(vals, 0, _wrap_dim(dim, x.ndim)))]
    if return_inverse:
        inv = np.cumsum(starts) - 1
        out.append(Tensor._make(inv.reshape(x._data.shape if dim is None else -1)
                                .astype(np.int64)))
    if return_counts:
        ends = np.concatenate([np.flatnonzero(starts), xp_of(a).full(1, n)])
        out.append(Tensor._make(np.diff(ends).astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


METHODS = {"unique_consecutive": unique_consecutive}
FUNCTIONS = {"searchsorted": searchsorted, "bucketize": bucketize,
             "unique_consecutive": unique_consecutive}
