"""``linalg.lstsq``: least-squares solutions with what each LAPACK driver reports on the CPU
(residuals when the system is tall and of full rank and the driver is not gelsy, the rank
unless gels, the singular values for gelsd / gelss).

The solution is the minimum-norm one through the SVD for every driver (the drivers agree on
it whenever the problem is well posed); its gradient is torch's, through the pseudo-inverse.
"""

from __future__ import annotations

import numpy as np

from ember import _dtype, return_types
from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.ops.linalg import matmul
from ember.ops.pointwise_more import _CNAME

DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def _solve(a: np.ndarray, b: np.ndarray, rcond: float) -> tuple:
    """``(x, rank, s)``: ``pinv(a) b`` keeping singular values above ``rcond * s_max``."""
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    smax = s[..., :1] if s.shape[-1] else np.zeros(s.shape[:-1] + (1,), s.dtype)
    keep = s > rcond * smax
    s_inv = np.where(keep, 1 / np.where(keep, s, 1), 0)
    ub = np.matmul(np.swapaxes(u, -1, -2), b) * s_inv[..., :, None]
    return np.matmul(np.swapaxes(vh, -1, -2), ub), keep.sum(-1), s


class LinalgLstsq(Op):
    """``(solution, residuals, rank, singular_values)``; torch's node saves A, B and the
    solution."""

    node_name = "LinalgLstsqBackward0"
    saves = (0, 1)
    saves_output = (0,)
    broadcasts = True

    @staticmethod
    def forward(ctx, a, b, rcond=None, driver="gelsy", vector=False):
        ctx.vector = vector
        if vector:  # a batch of vectors: one column
            b = b[..., None]
        m, n = a.shape[-2:]
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        a = np.broadcast_to(a, batch + a.shape[-2:])
        b = np.broadcast_to(b, batch + b.shape[-2:])
        if rcond is None or rcond < 0:
            rcond = np.finfo(a.dtype).eps * max(m, n)
        x, rank, s = _solve(a.astype(np.float64), b.astype(np.float64), rcond)
        full = bool(np.all(rank == n))
        ctx.residuals = m > n and driver != "gelsy" and (driver == "gels" or full)
        if ctx.residuals:
            res = (np.square(np.matmul(a, x) - b)).sum(-2)
        else:
            res = np.zeros(0)
        rank = np.zeros(0, np.int64) if driver == "gels" else rank.astype(np.int64)
        s = s if driver in ("gelsd", "gelss") else np.zeros(0)
        x = x[..., 0] if vector else x
        return x.astype(a.dtype), res.astype(a.dtype), rank, s.astype(a.dtype)

    @staticmethod
    def backward(ctx, g_x, g_res, g_rank=None, g_s=None):
        from ember.linalg import pinv, pinv_backward

        a, b, x = ctx.saved_tensors
        if ctx.vector:
            b, x = b.unsqueeze(-1), x.unsqueeze(-1)
            g_x = None if g_x is None else g_x.unsqueeze(-1)
        need_a, need_b = ctx.needs_input_grad
        ga = gb = None
        if g_x is not None:
            p = pinv(a)
            ga = pinv_backward(matmul(g_x, b.mT), a, p) if need_a else None
            gb = matmul(p.mT, g_x) if need_b else None
        if g_res is not None and ctx.residuals:
            # d|A x - b|^2 at the optimum: A^T (A x - b) = 0, so x's change drops out
            r2 = (matmul(a, x) - b) * (2 * g_res.unsqueeze(-2))
            ga = matmul(r2, x.mT) if ga is None else ga + matmul(r2, x.mT)
            gb = -r2 if gb is None else gb - r2
        if gb is not None and ctx.vector:
            gb = gb.squeeze(-1)
        return ga if need_a else None, gb if need_b else None


def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *, driver: str | None = None):
    """The ``X`` minimizing ``|A X - B|`` (Frobenius), with residuals, rank and singular
    values as the CPU driver (default gelsy) reports them."""
    name = "torch.linalg.lstsq"
    if A.ndim < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if not A.ndim >= B.ndim >= A.ndim - 1:
        raise RuntimeError(f"{name}: input.dim() must be greater or equal to other.dim() and "
                           "(input.dim() - other.dim()) <= 1")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"{name}: Expected input and other to have the same dtype, but got "
                           f"input's dtype {_CNAME[A.dtype.name]} and other's dtype "
                           f"{_CNAME[B.dtype.name]}")
    if A.dtype not in (_dtype.float32, _dtype.float64):
        raise RuntimeError("This function doesn't handle types other than float and double")
    driver = "gelsy" if driver is None else driver
    if driver not in DRIVERS:
        raise RuntimeError(f"{name}: parameter `driver` should be one of "
                           f"({', '.join(DRIVERS)})")
    vector = B.ndim == A.ndim - 1
    if A.shape[-2] != B.shape[-1 if vector else -2]:
        raise RuntimeError(f"{name}: input.size(-2) should match other.size(-2)")
    from ember.ops.shape import broadcast_shapes

    broadcast_shapes(A.shape[:-2], B.shape[:-1 if vector else -2])
    x, res, rank, s = LinalgLstsq.apply(A, B, rcond=rcond, driver=driver, vector=vector)
    return return_types.linalg_lstsq(x, res, rank, s.detach())
