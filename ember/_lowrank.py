"""Randomized low-rank SVD and PCA (Halko, Martinsson & Tropp, 2009), as torch's
``torch/_lowrank.py``: the same draws from the global generator in the same order, so a
seeded run gives torch's factors. Dense tensors only. Built of ember ops, so differentiable.
"""

from __future__ import annotations

from ember._tensor import Tensor


def _floating(A: Tensor):
    """torch's get_floating_dtype: float16/32/64 kept, anything else computes in float32."""
    import ember

    return A.dtype if A.dtype in (ember.float16, ember.float32, ember.float64) else \
        ember.float32


def _times(A: Tensor, M: Tensor | None, X: Tensor) -> Tensor:
    """``(A - M) X`` without forming ``A - M`` (torch's order of operations)."""
    return A @ X if M is None else A @ X - M @ X


def _basis(A: Tensor, q: int, niter: int | None = 2, M: Tensor | None = None) -> Tensor:
    """``Q`` with orthonormal columns such that ``Q Q^H (A - M)`` approximates ``A - M``
    (Algorithm 4.4)."""
    import ember

    niter = 2 if niter is None else niter
    R = ember.randn(A.shape[-1], q, dtype=_floating(A))
    Q = ember.linalg.qr(_times(A, M, R)).Q
    MH = None if M is None else M.mH
    for _ in range(niter):
        Q = ember.linalg.qr(_times(A.mH, MH, Q)).Q
        Q = ember.linalg.qr(_times(A, M, Q)).Q
    return Q


def svd_lowrank(A: Tensor, q: int | None = 6, niter: int | None = 2,
                M: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """``(U, S, V)`` with ``A - M ~ U diag(S) V^H`` of rank ``q`` (Algorithm 5.1)."""
    import ember

    q = 6 if q is None else q
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.shape)
    if m < n:
        A = A.mH
        M = None if M is None else M.mH
    Q = _basis(A, q, niter=niter, M=M)
    B = Q.mH @ A if M is None else Q.mH @ A - Q.mH @ M
    U, S, Vh = ember.linalg.svd(B, full_matrices=False)
    V, U = Vh.mH, Q @ U
    return (V, S, U) if m < n else (U, S, V)


def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True,
                niter: int = 2) -> tuple[Tensor, Tensor, Tensor]:
    """``(U, S, V)`` of the (centered) data matrix ``A``: the columns of ``V`` are the
    principal directions, ``S**2 / (m - 1)`` the variances along them."""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than "
                         f"min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return svd_lowrank(A, q, niter=niter)
    return svd_lowrank(A - A.mean(dim=(-2,), keepdim=True), q, niter=niter)
