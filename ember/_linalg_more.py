"""More of ``ember.linalg``: ``matrix_exp``, the ``*_ex`` forms that report failures in ``info``
instead of raising (``inv_ex``, ``solve_ex``, ``cholesky_ex``), ``cond``, ``diagonal``,
``vander``, ``tensorinv``, ``tensorsolve``.

``matrix_exp`` is scaling and squaring over a degree-13 Pade approximant (Higham 2005); its
gradient is the upper-right block of the exponential of ``[[A^T, G], [0, A^T]]`` (torch's
formula), computed by the same op, so it can be differentiated again.
"""

from __future__ import annotations

import math

import numpy as np

from ember import _dtype
from ember._tensor import Tensor, _wrap_dim
from ember.autograd.function import Op

_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
           40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152  # the largest 1-norm for which degree 13 is accurate to 2^-53


def _expm(a: np.ndarray) -> np.ndarray:
    """e^A for a batch of square matrices (computed in float64)."""
    x = a.astype(np.float64)
    n = x.shape[-1]
    if x.size == 0:
        return np.broadcast_to(np.eye(n), x.shape).copy()
    norm = np.abs(x).sum(-2).max(-1)  # the 1-norm of each matrix
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.ceil(np.log2(norm / _THETA13))
    s = np.where(np.isfinite(s) & (s > 0), s, 0).astype(np.int64)
    x = x / (2.0 ** s)[..., None, None]
    b, eye = _PADE13, np.eye(n)
    x2 = x @ x
    x4 = x2 @ x2
    x6 = x4 @ x2
    u = x @ (x6 @ (b[13] * x6 + b[11] * x4 + b[9] * x2) + b[7] * x6 + b[5] * x4 + b[3] * x2
             + b[1] * eye)
    v = x6 @ (b[12] * x6 + b[10] * x4 + b[8] * x2) + b[6] * x6 + b[4] * x4 + b[2] * x2 \
        + b[0] * eye
    r = np.linalg.solve(v - u, v + u)
    for k in range(int(s.max())):  # square back, each matrix its s times
        sq = r @ r
        r = np.where((s > k)[..., None, None], sq, r)
    return r


class LinalgMatrixExp(Op):
    node_name = "LinalgMatrixExpBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, a):
        with np.errstate(over="ignore", invalid="ignore"):
            return _expm(a).astype(a.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        from ember.ops.joining import cat

        n = a.shape[-1]
        at = a.mT
        top = cat([at, g], -1)
        bottom = cat([at.new_zeros(at.shape), at], -1)
        block = cat([top, bottom], -2)
        return LinalgMatrixExp.apply(block)[..., :n, n:]


def _square(name: str, a: Tensor) -> None:
    from ember.linalg import _square as check

    check(name, a)


def matrix_exp(A: Tensor) -> Tensor:
    """The matrix exponential ``sum_k A^k / k!`` of square matrices."""
    _square("linalg.matrix_exp", A)
    return LinalgMatrixExp.apply(A)


def _info(shape: tuple, failed: np.ndarray | None = None) -> Tensor:
    info = np.zeros(shape, np.int32) if failed is None else failed.astype(np.int32)
    return Tensor._make(info)


def _first_zero_pivot(a: np.ndarray) -> np.ndarray:
    """For each matrix: 0 if invertible, else 1 + the rank (torch's LU pivot number)."""
    flat = a.reshape(-1, *a.shape[-2:]).astype(np.float64)
    ranks = np.linalg.matrix_rank(flat) if flat.size else np.zeros(len(flat), int)
    return np.where(ranks < a.shape[-1], ranks + 1, 0).reshape(a.shape[:-2])


def inv_ex(A: Tensor, *, check_errors: bool = False):
    """``(inverse, info)``: info is 0 for an invertible matrix, else the pivot that is zero
    (and the inverse is not meaningful); ``check_errors`` raises instead."""
    from ember import linalg
    from ember.return_types import linalg_inv_ex

    _square("linalg.inv", A)  # torch's inv_ex names linalg.inv
    bad = _first_zero_pivot(A._data)
    if not bad.any():
        return linalg_inv_ex(linalg.inv(A), _info(bad.shape))
    if check_errors:
        raise linalg._singular("linalg.inv_ex", A._data)
    with np.errstate(all="ignore"):
        pinv = np.linalg.pinv(A._data)  # defined for every matrix; torch's values are not
    return linalg_inv_ex(Tensor._make(pinv.astype(A._data.dtype)), _info(bad.shape, bad))


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False):
    """``(result, info)`` of ``linalg.solve``; a singular system gives info > 0 (and NaN/inf
    results) unless ``check_errors``."""
    from ember import linalg
    from ember.return_types import linalg_solve_ex

    _square("linalg.solve_ex", A)
    bad = _first_zero_pivot(A._data)
    if not bad.any():
        return linalg_solve_ex(linalg.solve(A, B, left=left), _info(bad.shape))
    if check_errors:
        raise linalg.LinAlgError("torch.linalg.solve_ex: The solver failed because the input "
                                 "matrix is singular.")
    nan = np.full(np.broadcast_shapes(A.shape[:-2], B.shape[:-2] if B.ndim > 1 else ()) +
                  tuple(B.shape[-2:] if B.ndim > 1 else B.shape), np.nan, A._data.dtype)
    return linalg_solve_ex(Tensor._make(nan), _info(bad.shape, bad))


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False):
    """``(L, info)``: info is 0, or the order of the leading minor that is not positive-definite
    (whose ``L`` is then not meaningful)."""
    from ember._linalg_decomp import cholesky
    from ember.return_types import linalg_cholesky_ex

    _square("linalg.cholesky_ex", A)
    a = A._data
    flat = a.reshape(-1, *a.shape[-2:])
    n = a.shape[-1]
    orders = np.zeros(len(flat), np.int32)
    if not _has_cholesky(flat):  # only then look for the failing matrices and their minors
        for i, m in enumerate(flat):
            if not _has_cholesky(m):
                orders[i] = next(k for k in range(1, n + 1) if not _has_cholesky(m[:k, :k]))
    info = orders.reshape(a.shape[:-2])
    if not info.any():
        return linalg_cholesky_ex(cholesky(A, upper=upper), _info(info.shape))
    if check_errors:
        k = int(info.reshape(-1)[np.argmax(info.reshape(-1) > 0)])
        raise _linalg().LinAlgError(
            "linalg.cholesky_ex: The factorization could not be completed because the input is "
            f"not positive-definite (the leading minor of order {k} is not positive-definite).")
    out = np.full(a.shape, np.nan, a.dtype)
    good = (info == 0).reshape(-1)
    if good.any():
        low = np.linalg.cholesky(flat[good])
        out.reshape(-1, n, n)[good] = np.swapaxes(low, -1, -2) if upper else low
    return linalg_cholesky_ex(Tensor._make(out), _info(info.shape, info))


def _has_cholesky(m: np.ndarray) -> bool:
    try:
        np.linalg.cholesky(m)
    except np.linalg.LinAlgError:
        return False
    return True


def _linalg():
    from ember import linalg

    return linalg


def cond(A: Tensor, p=None) -> Tensor:
    """The condition number of ``A`` in norm ``p``: ``sigma_max / sigma_min`` for None/2/-2,
    else ``norm(A, p) * norm(inv(A), p)``."""
    linalg = _linalg()
    if A.ndim < 2:
        raise RuntimeError("linalg.cond: The input tensor A must have at least 2 dimensions.")
    if p is None or p in (2, -2):
        s = linalg.svdvals(A)
        big, small = s[..., 0], s[..., -1]
        return big / small if p != -2 else small / big
    _square("linalg.cond", A)
    return linalg.matrix_norm(A, p) * linalg.matrix_norm(linalg.inv(A), p)


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """``A.diagonal(offset, dim1, dim2)``, with the last two dims as the default."""
    return A.diagonal(offset, dim1, dim2)


def vander(x: Tensor, *, N: int | None = None) -> Tensor:
    """``x[..., i] ** j`` for j in [0, N): increasing powers along a new last dim."""
    from ember.ops.joining import cat

    n = x.shape[-1] if x.ndim else 1
    N = n if N is None else N
    if N <= 1:
        raise RuntimeError("N must be greater than 1.")
    if not x.dtype.is_floating_point and x.dtype is not _dtype.int64:
        x = x.to(_dtype.int64)
    powers = x.unsqueeze(-1).expand(*x.shape, N - 1).cumprod(-1)
    return cat([x.new_ones(x.shape + (1,)), powers], -1)


def tensorinv(A: Tensor, ind: int = 2) -> Tensor:
    """The tensor ``X`` with ``tensordot(X, A, ind) = I``: ``inv`` of ``A`` seen as a matrix."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = A.shape[:ind], A.shape[ind:]
    m, k = math.prod(rows), math.prod(cols)
    if m != k:
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {k} != {m}")
    return _linalg().inv(A.reshape(m, k)).reshape(*cols, *rows)


def tensorsolve(A: Tensor, B: Tensor, dims=None) -> Tensor:
    """The ``X`` with ``tensordot(A, X, X.ndim) = B``."""
    if dims is not None:
        dims = [_wrap_dim(d, A.ndim) for d in dims]
        A = A.movedim(dims, list(range(A.ndim - len(dims), A.ndim)))
    x_shape = A.shape[B.ndim:]
    m, k = B.numel(), math.prod(x_shape)
    if m != k:
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[other.ndim:]) "
                           f"== prod(self.shape[:other.ndim]), but got {k} != {m}")
    return _linalg().solve(A.reshape(m, k), B.reshape(m)).reshape(x_shape)


__all__ = ["matrix_exp", "inv_ex", "solve_ex", "cholesky_ex", "cond", "diagonal", "vander",
           "tensorinv", "tensorsolve"]
