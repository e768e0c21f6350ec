"""LU factorization with partial pivoting and what uses it: ``linalg.lu_factor`` (``_ex``),
``linalg.lu``, ``linalg.lu_solve`` and ``torch.lu_unpack``, with torch's nodes and backward
formulas (``linalg_lu_backward``, ``lu_factor_ex_backward``, ``linalg_lu_solve_LU``).

The factorization is ember's NumPy getrf (``ember._lapack``), so the pivots are LAPACK's.
"""

from __future__ import annotations

import numpy as np

from ember import _dtype, _lapack, return_types
from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.ops.linalg import matmul
from ember.ops.pointwise_more import _CNAME, not_for


def _solve_tri(a: Tensor, b: Tensor, upper: bool, left: bool = True, unit: bool = False):
    from ember.linalg import solve_triangular

    return solve_triangular(a, b, upper=upper, left=left, unitriangular=unit)


def _cat(ts, dim: int) -> Tensor:
    from ember.ops.joining import cat

    return cat(ts, dim)


def _unpacked(lu: Tensor, pivots: Tensor | None) -> tuple:
    """``(P, L, U)`` of a packed factorization as ember ops (so backward stays differentiable);
    ``P`` is None without pivots."""
    m, n = lu.shape[-2:]
    k = min(m, n)
    eye = Tensor._make(np.eye(m, k, dtype=lu._data.dtype))
    low = lu[..., :, :k].tril(-1) + eye
    up = lu[..., :k, :].triu()
    p = None if pivots is None else \
        Tensor._make(_lapack.permutation_matrix(pivots._data, m, lu._data.dtype))
    return p, low, up


def lu_backward(g_l, g_u, p: Tensor, low: Tensor, up: Tensor) -> Tensor:
    """The gradient of ``A = P L U`` from those of L and U (torch's linalg_lu_backward)."""
    m, n = low.shape[-2], up.shape[-1]
    k = min(m, n)
    if m == n:
        ga = matmul(low.mT, g_l).tril(-1) if g_l is not None else None
        if g_u is not None:
            gu = matmul(g_u, up.mT).triu()
            ga = gu if ga is None else ga + gu
        ga = _solve_tri(up.mT, ga, upper=False, left=False)
        ga = _solve_tri(low.mT, ga, upper=True, unit=True)
    elif m < n:  # wide: U = [U1 U2]
        u1 = up[..., :, :k]
        ga = matmul(low.mT, g_l) if g_l is not None else None
        if g_u is not None:
            gu = matmul(g_u.triu(), up.mT)
            ga = -gu if ga is None else ga - gu
        ga = _solve_tri(u1.mT, ga.tril(-1), upper=False, left=False)
        if g_u is not None:
            ga = _cat([ga + g_u[..., :, :k].triu(), g_u[..., :, k:]], -1)
        ga = _solve_tri(low.mT, ga, upper=True, unit=True)
        if g_u is None:
            ga = _cat([ga, up[..., :, k:].detach() * 0], -1)
    else:  # tall: L = [L1; L2]
        l1 = low[..., :k, :]
        ga = matmul(g_u, up.mT) if g_u is not None else None
        if g_l is not None:
            gl = matmul(low.mT, g_l.tril(-1))
            ga = -gl if ga is None else ga - gl
        ga = _solve_tri(l1.mT, ga.triu(), upper=True, unit=True)
        if g_l is not None:
            ga = _cat([ga + g_l[..., :k, :].tril(-1), g_l[..., k:, :]], -2)
        ga = _solve_tri(up.mT, ga, upper=False, left=False)
        if g_l is None:
            ga = _cat([ga, low[..., k:, :].detach() * 0], -2)
    return matmul(p, ga)


def _check_float(kernel: str, a: Tensor) -> None:
    if a.dtype not in (_dtype.float32, _dtype.float64):
        raise not_for(kernel, a.dtype)


def _check_lu_input(a: Tensor, pivot: bool) -> None:
    if a.ndim < 2:
        raise RuntimeError(f"torch.lu_factor: Expected tensor with 2 or more dimensions. Got "
                           f"size: {list(a.shape)} instead")
    _check_float("lu_cpu", a)
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")


class LinalgLuFactorEx(Op):
    """``(LU, pivots, info)``; torch's node saves the factorization and the pivots."""

    node_name = "LinalgLuFactorExBackward0"
    saves_output = (0, 1)

    @staticmethod
    def forward(ctx, a):
        return _lapack.getrf(a)

    @staticmethod
    def backward(ctx, g, g_piv=None, g_info=None):
        lu, piv = ctx.saved_tensors
        k = min(lu.shape[-2:])
        p, low, up = _unpacked(lu, piv)
        return lu_backward(g[..., :, :k], g[..., :k, :], p, low, up)


def _raise_singular(name: str, info: np.ndarray) -> None:
    flat = info.reshape(-1)
    if not flat.any():
        return
    b = int(np.argmax(flat > 0))
    where = f"(Batch element {b}): " if info.ndim else ""
    i = int(flat[b])
    raise RuntimeError(f"torch.{name}: {where}U[{i},{i}] is zero and using it on lu_solve would "
                       "result in a division by zero. If you still want to perform the "
                       "factorization, consider calling linalg.lu(A, pivot) or "
                       "linalg.lu_factor_ex(A, pivot)")


def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False):
    """``(LU, pivots, info)``: ``A = P L U`` packed in one matrix, LAPACK's 1-based int32
    pivots, and info > 0 where a diagonal entry of U is exactly zero."""
    _check_lu_input(A, pivot)
    lu, piv, info = LinalgLuFactorEx.apply(A)
    if check_errors:
        _raise_singular("linalg.lu_factor_ex", info._data)
    return return_types.linalg_lu_factor_ex(lu, piv, info)


def lu_factor(A: Tensor, *, pivot: bool = True):
    """``(LU, pivots)`` of ``A = P L U``; raises for a singular (square) matrix."""
    _check_lu_input(A, pivot)
    lu, piv, info = LinalgLuFactorEx.apply(A)
    if A.shape[-1] == A.shape[-2]:
        _raise_singular("linalg.lu_factor", info._data)
    return return_types.linalg_lu_factor(lu, piv)


class LinalgLu(Op):
    node_name = "LinalgLuBackward0"
    saves_output = (0, 1, 2)

    @staticmethod
    def forward(ctx, a):
        lu, piv, _ = _lapack.getrf(a)
        return (_lapack.permutation_matrix(piv, a.shape[-2], a.dtype), *_lapack.unpack(lu))

    @staticmethod
    def backward(ctx, g_p, g_l, g_u):
        p, low, up = ctx.saved_tensors
        if g_l is None and g_u is None:
            return None
        return lu_backward(g_l, g_u, p, low, up)


def lu(A: Tensor, *, pivot: bool = True):
    """``(P, L, U)`` with ``A = P L U``: P a permutation, L unit lower, U upper triangular."""
    _check_lu_input(A, pivot)
    p, low, up = LinalgLu.apply(A)
    return return_types.linalg_lu(p.detach(), low, up)


class LuUnpack(Op):
    """torch's node saves only the sizes: the gradient is L's and U's triangles, in place."""

    node_name = "LuUnpackBackward0"

    @staticmethod
    def forward(ctx, lu, piv, unpack_data=True, unpack_pivots=True):
        ctx.shape = lu.shape
        empty = np.zeros(0, lu.dtype)
        p = _lapack.permutation_matrix(piv, lu.shape[-2], lu.dtype) if unpack_pivots else empty
        low, up = _lapack.unpack(lu) if unpack_data else (empty, empty)
        return p, low, up

    @staticmethod
    def backward(ctx, g_p, g_l, g_u):
        m, n = ctx.shape[-2:]
        parts = []
        if g_l is not None and g_l.numel():
            parts.append(_pad(g_l.tril(-1), m, n))
        if g_u is not None and g_u.numel():
            parts.append(_pad(g_u.triu(), m, n))
        if not parts:
            return None, None
        return (parts[0] if len(parts) == 1 else parts[0] + parts[1]), None


def _pad(g: Tensor, m: int, n: int) -> Tensor:
    """``g`` (a corner of an m x n matrix) with zeros up to m x n."""
    if g.shape[-1] < n:
        g = _cat([g, g.new_zeros(g.shape[:-1] + (n - g.shape[-1],))], -1)
    if g.shape[-2] < m:
        g = _cat([g, g.new_zeros(g.shape[:-2] + (m - g.shape[-2], n))], -2)
    return g


def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True,
              unpack_pivots: bool = True):
    """``(P, L, U)`` from ``lu_factor``'s output; parts not asked for are empty tensors."""
    if LU_pivots.dtype is not _dtype.int32:
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of "
                           "torch.int32 dtype.\nNote: this function is intended to be used with "
                           "the output produced by torch.linalg.lu_factor")
    if LU_data.ndim < 2:
        raise RuntimeError("torch.lu_unpack: Expected tensor with 2 or more dimensions. Got "
                           f"size: {list(LU_data.shape)} instead")
    if LU_pivots.shape[-1] != min(LU_data.shape[-2:]):
        raise RuntimeError("torch.lu_unpack: LU_pivots.size(-1) must be equal to "
                           "min(LU_data.size(-2), LU_data.size(-1))")
    p, low, up = LuUnpack.apply(LU_data, LU_pivots, unpack_data=unpack_data,
                                unpack_pivots=unpack_pivots)
    return return_types.lu_unpack(p.detach(), low, up)


class LinalgLuSolve(Op):
    node_name = "LinalgLuSolveBackward0"
    saves = (0, 1)
    saves_output = True
    broadcasts = True

    @staticmethod
    def forward(ctx, lu, piv, b, left=True, adjoint=False):
        ctx.left, ctx.adjoint = left, adjoint
        if left:
            return _lapack.getrs(lu, piv, b, adjoint)
        # X A = B  <=>  A^T X^T = B^T
        return np.swapaxes(_lapack.getrs(lu, piv, np.swapaxes(b, -1, -2), not adjoint), -1, -2)

    @staticmethod
    def backward(ctx, g, g_piv=None, g_b=None):
        lu, piv, x = ctx.saved_tensors
        left, adjoint = ctx.left, ctx.adjoint
        gb = LinalgLuSolve.apply(lu, piv, g, left=left, adjoint=not adjoint)
        if not ctx.needs_input_grad[0]:
            return None, None, gb
        # the gradient of op(A) = A or A^T, then through A = P L U to the packed factors
        if left:
            ga = -matmul(x, gb.mT) if adjoint else -matmul(gb, x.mT)
        else:
            ga = -matmul(gb.mT, x) if adjoint else -matmul(x.mT, gb)
        p, low, up = _unpacked(lu, piv)
        pga = matmul(p.mT, ga)
        return matmul(pga, up.mT).tril(-1) + matmul(low.mT, pga).triu(), None, gb


def _check_lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, left: bool) -> None:
    if B.ndim < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 "
                           "dimensions.")
    if LU.ndim < 2 or LU.shape[-1] != LU.shape[-2]:
        raise RuntimeError(f"torch.linalg.lu_solve: A must be batches of square matrices, but "
                           f"they are {LU.shape[-2] if LU.ndim > 1 else 1} by {LU.shape[-1]} "
                           "matrices")
    n = LU.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        eq, bs = ("AX = B", f"{n}x{n} and {B.shape[-2]}x{B.shape[-1]}") if left else \
            ("XA = B", f"{B.shape[-2]}x{B.shape[-1]} and {n}x{n}")
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation "
                           f"{eq} ({bs})")
    if LU.dtype is not B.dtype:
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but "
                           f"found LU of type {_CNAME[LU.dtype.name]} and B of type "
                           f"{_CNAME[B.dtype.name]} instead")
    if pivots.dtype is not _dtype.int32:
        raise RuntimeError("linalg.lu_solve: pivots should be a Tensor of scalar type "
                           "torch.int32")
    if pivots.shape[-1] != n:
        raise RuntimeError("linalg.lu_solve: Number of pivots per batch should be same as the "
                           "dimension of the matrix")
    if pivots.shape[:-1] != LU.shape[:-2]:
        raise RuntimeError("linalg.lu_solve: Expected LU.shape[:-2] == pivots.shape[:-1], but "
                           f"got pivots.shape[:-1]: {list(pivots.shape[:-1])} and "
                           f"LU.shape[:-2]: {list(LU.shape[:-2])}")
    _check_float("linalg_lu_solve", LU)


def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True,
             adjoint: bool = False) -> Tensor:
    """``X`` with ``op(A) X = B`` (``X op(A) = B`` if not ``left``), ``op(A) = A^T`` if
    ``adjoint``, for ``A`` given by ``lu_factor``'s ``(LU, pivots)``; batches broadcast."""
    _check_lu_solve(LU, pivots, B, left)
    return LinalgLuSolve.apply(LU, pivots, B, left=left, adjoint=adjoint)
