"""Decompositions for ``ember.linalg``: cholesky, eigh/eigvalsh, svd/svdvals.

Backward formulas follow torch's (FunctionsManual.cpp), written with ember ops on the saved
outputs, so they can be differentiated again.
"""

from __future__ import annotations

import numpy as np

from ember import return_types
from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.linalg import LinAlgError, _square, solve
from ember.ops.linalg import matmul
from ember.ops.pointwise_more import not_for


def _not_pd(a: np.ndarray) -> LinAlgError:
    """torch's message: the first batch element and leading minor that is not positive-definite."""
    flat = a.reshape(-1, *a.shape[-2:])
    for b, m in enumerate(flat):
        for k in range(1, m.shape[-1] + 1):
            try:
                np.linalg.cholesky(m[:k, :k])
            except np.linalg.LinAlgError:
                where = f"(Batch element {b}): " if a.ndim > 2 else ""
                return LinAlgError(f"linalg.cholesky: {where}The factorization could not be "
                                   "completed because the input is not positive-definite (the "
                                   f"leading minor of order {k} is not positive-definite).")
    return LinAlgError("linalg.cholesky: the input is not positive-definite.")


class LinalgCholeskyEx(Op):
    node_name = "LinalgCholeskyExBackward0"
    saves_output = True

    @staticmethod
    def forward(ctx, a, upper=False):
        ctx.upper = upper
        try:
            low = np.linalg.cholesky(a)  # reads the lower triangle only, as torch
        except np.linalg.LinAlgError:
            raise _not_pd(a) from None
        return np.swapaxes(low, -1, -2).copy() if upper else low

    @staticmethod
    def backward(ctx, g):
        # gA = L^-T Phi(L^T gL) L^-1, symmetrized; Phi keeps the lower triangle, halving the
        # diagonal (torch's cholesky_backward).
        (out,) = ctx.saved_tensors
        low, g = (out.mT, g.mT) if ctx.upper else (out, g)
        n = low.shape[-1]
        phi_mask = Tensor._make((np.tril(np.ones((n, n))) - 0.5 * np.eye(n)).astype(
            low._data.dtype))
        p = matmul(low.mT, g) * phi_mask
        x = solve(low.mT, p)
        ga = solve(low.mT, x.mT).mT
        return (ga + ga.mT) * 0.5


def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """Lower (or upper) Cholesky factor of symmetric positive-definite matrices."""
    _square("linalg.cholesky", A)
    return LinalgCholeskyEx.apply(A, upper=upper)


class LinalgEigh(Op):
    node_name = "LinalgEighBackward0"
    saves_output = (0, 1)

    @staticmethod
    def forward(ctx, a, uplo="L"):
        w, v = np.linalg.eigh(a, UPLO=uplo)
        return w, v

    @staticmethod
    def backward(ctx, gw, gv):
        # torch's linalg_eig_backward for Hermitian input:
        # gA = V (skew(V^T gV) / (w_j - w_i) + diag(gw)) V^T.
        w, v = ctx.saved_tensors
        n = w.shape[-1]
        eye = Tensor._make(np.eye(n, dtype=w._data.dtype))
        inner = 0.0
        if gv is not None:
            vgv = matmul(v.mT, gv)
            diff = w.unsqueeze(-2) - w.unsqueeze(-1) + eye  # 1 on the diagonal, as torch
            inner = (vgv - vgv.mT) * 0.5 / diff
        if gw is not None:
            inner = inner + gw.unsqueeze(-1) * eye
        return matmul(matmul(v, inner), v.mT)


def eigh(A: Tensor, UPLO: str = "L"):
    """Eigenvalues (ascending) and orthonormal eigenvectors of symmetric matrices."""
    if A.ndim < 2 or A.shape[-1] != A.shape[-2] or A.dtype.is_floating_point \
            or A.dtype.is_complex:
        _square("linalg.eigh", A)  # (shape errors come first, as in torch)
    else:  # an integer or bool matrix: torch's kernel lookup fails, not its input check
        raise not_for("linalg_eigh_cpu", A.dtype)
    w, v = LinalgEigh.apply(A, uplo=UPLO)
    return return_types.linalg_eigh(w, v)


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:
    """Eigenvalues (ascending) of symmetric matrices."""
    return eigh(A, UPLO).eigenvalues


class LinalgSvd(Op):
    node_name = "LinalgSvdBackward0"
    saves_output = (0, 1, 2)

    @staticmethod
    def forward(ctx, a, full_matrices=True):
        ctx.full, ctx.mn = full_matrices, a.shape[-2:]
        u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
        return u, s.astype(a.dtype, copy=False), vh

    @staticmethod
    def backward(ctx, gu, gs, gvh):
        u, s, vh = ctx.saved_tensors
        m, n = ctx.mn
        k = s.shape[-1]
        if ctx.full:  # only the first k singular vectors are determined by A
            u, vh = u[..., :k], vh[..., :k, :]
            gu = gu[..., :k] if gu is not None else None
            gvh = gvh[..., :k, :] if gvh is not None else None
        if gu is None and gvh is None:
            return matmul(u * gs.unsqueeze(-2), vh)
        eye = Tensor._make(np.eye(k, dtype=s._data.dtype))
        s2 = s * s
        e = s2.unsqueeze(-2) - s2.unsqueeze(-1) + eye  # S_j^2 - S_i^2, 1 on the diagonal
        ga = 0.0
        if gu is not None:
            uhgu = matmul(u.mT, gu)
            ga = (uhgu - uhgu.mT) * s.unsqueeze(-2)
        if gvh is not None:
            vhgv = matmul(vh, gvh.mT)
            ga = ga + s.unsqueeze(-1) * (vhgv - vhgv.mT)
        ga = ga / e
        if gs is not None:
            ga = ga + gs.unsqueeze(-1) * eye
        if m > n and gu is not None:  # the part of gU outside span(U)
            gus = gu / s.unsqueeze(-2)
            ga = matmul(matmul(u, ga) + gus - matmul(u, matmul(u.mT, gus)), vh)
        elif m < n and gvh is not None:
            sgvh = gvh / s.unsqueeze(-1)
            ga = matmul(u, matmul(ga, vh) + sgvh - matmul(matmul(sgvh, vh.mT), vh))
        else:
            ga = matmul(u, matmul(ga, vh))
        return ga


def svd(A: Tensor, full_matrices: bool = True):
    """``A = U diag(S) Vh`` as a ``linalg_svd`` named tuple (singular values descending)."""
    if A.ndim < 2:
        raise RuntimeError("linalg.svd: The input tensor A must have at least 2 dimensions.")
    return return_types.linalg_svd(*LinalgSvd.apply(A, full_matrices=full_matrices))


def svdvals(A: Tensor) -> Tensor:
    """Singular values, in descending order."""
    return svd(A, full_matrices=False).S


class LinalgQr(Op):
    node_name = "LinalgQrBackward0"
    saves_output = (0, 1)

    @staticmethod
    def forward(ctx, a, mode="reduced"):
        ctx.mode, ctx.mn = mode, a.shape[-2:]
        if mode == "r":
            return np.zeros(0, a.dtype), np.linalg.qr(a, mode="r")
        q, r = np.linalg.qr(a, mode=mode)
        return q, r

    @staticmethod
    def backward(ctx, gq, gr):
        m, n = ctx.mn
        if ctx.mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed "
                               "when mode='r'. Please use linalg.qr(A, mode='reduced') if you "
                               "are going to differentiate through linalg.qr.")
        if ctx.mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' "
                               "and nrows > ncols.")
        q, r = ctx.saved_tensors
        if m >= n:
            return _qr_grad_tall(q, r, gq, gr)
        # A = Q [X | Y] with X square: Y = Q R2 feeds Q's gradient, then the square case.
        r1, r2 = r[..., :m], r[..., m:]
        gr1 = gr[..., :m] if gr is not None else None
        gy = matmul(q, gr[..., m:]) if gr is not None else None
        y = matmul(q, r2)
        if gr is not None:
            extra = matmul(y, gr[..., m:].mT)
            gq = extra if gq is None else gq + extra
        gx = _qr_grad_tall(q, r1, gq, gr1)
        from ember.ops.joining import cat

        return cat([gx, gy if gy is not None else y * 0.0], -1)


def _qr_grad_tall(q: Tensor, r: Tensor, gq, gr) -> Tensor:
    """m >= n: gA = (gQ + Q copyltu(M)) R^-T with M = R gR^T - gQ^T Q (Roberts & Roberts)."""
    n = r.shape[-1]
    lower = Tensor._make(np.tril(np.ones((n, n)), -1).astype(r._data.dtype))
    eye = Tensor._make(np.eye(n, dtype=r._data.dtype))
    m = 0.0
    if gr is not None:
        m = matmul(r, gr.mT)
    if gq is not None:
        m = m - matmul(gq.mT, q)
    # copyltu: the symmetric matrix with M's lower triangle (and diagonal).
    low = m * lower
    sym = low + low.mT + m * eye
    b = matmul(q, sym)
    if gq is not None:
        b = b + gq
    return solve(r, b.mT).mT


def qr(A: Tensor, mode: str = "reduced"):
    """``A = Q R`` (Q orthonormal columns, R upper triangular) as a ``linalg_qr`` named tuple."""
    if A.ndim < 2:
        raise RuntimeError("linalg.qr: The input tensor A must have at least 2 dimensions.")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           "'reduced' (default), 'r', or 'complete'")
    return return_types.linalg_qr(*LinalgQr.apply(A, mode=mode))
