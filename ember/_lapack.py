"""LAPACK's factorizations that NumPy does not expose, on arrays: LU with partial pivoting
(getrf, with its 1-based int32 pivots), the permutation those pivots encode, the solve with an
LU factorization (getrs), Householder QR (geqrf, through ``numpy.linalg.qr(mode="raw")``) and
the products of its reflectors (orgqr / ormqr).

Every routine loops over columns (or reflectors), never over elements or batch items.
"""

from __future__ import annotations

import numpy as np

_PANEL = 32  # columns factored per panel before the trailing matrix gets one GEMM update


def _batched(a: np.ndarray) -> np.ndarray:
    return a.reshape((int(np.prod(a.shape[:-2])),) + a.shape[-2:])


def getrf(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(LU, pivots, info)`` of ``a`` (..., m, n): LAPACK's right-looking blocked LU.

    Within a panel each column picks the row of largest magnitude at or below the diagonal
    (the first one on ties, as idamax), swaps it up across the whole row, scales the column
    below by the pivot's reciprocal and updates the rest of the panel; then the panel's rows of
    the trailing columns are solved with its unit lower triangle, and one matrix product
    updates the trailing matrix. ``info`` is the
    1-based index of the first exactly zero pivot (0 if none), as getrf's.
    """
    batch, (m, n) = a.shape[:-2], a.shape[-2:]
    k = min(m, n)
    lu = _batched(a).astype(a.dtype, copy=True)
    b = np.arange(lu.shape[0])
    piv = np.zeros((lu.shape[0], k), np.int32)
    info = np.zeros(lu.shape[0], np.int32)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for j0 in range(0, k, _PANEL):
            j1 = min(j0 + _PANEL, k)
            for j in range(j0, j1):
                p = j + np.argmax(np.abs(lu[:, j:, j]), axis=-1)
                piv[:, j] = p + 1
                row = lu[:, j].copy()
                lu[:, j] = lu[b, p]
                lu[b, p] = row
                pivot = lu[:, j, j]
                zero = pivot == 0
                info[(info == 0) & zero] = j + 1
                scale = np.where(zero, 1, 1 / np.where(zero, 1, pivot)).astype(lu.dtype)
                lu[:, j + 1:, j] *= scale[:, None]
                lu[:, j + 1:, j + 1:j1] -= lu[:, j + 1:, j, None] * lu[:, j, None, j + 1:j1]
            for j in range(j0, j1):  # the panel's rows to its right: U12 = L11^-1 A12
                lu[:, j + 1:j1, j1:] -= lu[:, j + 1:j1, j, None] * lu[:, j, None, j1:]
            if j1 < n and j1 < m:
                lu[:, j1:, j1:] -= lu[:, j1:, j0:j1] @ lu[:, j0:j1, j1:]
    return lu.reshape(a.shape), piv.reshape(batch + (k,)), info.reshape(batch)


def permutation(pivots: np.ndarray, m: int) -> np.ndarray:
    """``perm`` with ``A[perm] = L U`` for getrf's ``pivots`` (..., k): the row swaps, in order."""
    flat = _batched(pivots[..., None])[..., 0].astype(np.intp) - 1
    perm = np.broadcast_to(np.arange(m), (flat.shape[0], m)).copy()
    b = np.arange(flat.shape[0])
    for i in range(flat.shape[1]):
        p = flat[:, i]
        row = perm[:, i].copy()
        perm[:, i] = perm[b, p]
        perm[b, p] = row
    return perm.reshape(pivots.shape[:-1] + (m,))


def permutation_matrix(pivots: np.ndarray, m: int, dtype) -> np.ndarray:
    """``P`` with ``A = P L U``: column ``i`` of ``P`` is the unit vector ``perm[i]``."""
    perm = permutation(pivots, m)
    return (perm[..., None, :] == np.arange(m)[:, None]).astype(dtype)


def unpack(lu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(L, U)`` of a packed factorization (..., m, n): L is m x k unit lower, U k x n upper."""
    m, n = lu.shape[-2:]
    k = min(m, n)
    low = np.tril(lu[..., :, :k], -1) + np.eye(m, k, dtype=lu.dtype)
    return low, np.triu(lu[..., :k, :])


def getrs(lu: np.ndarray, pivots: np.ndarray, b: np.ndarray, adjoint: bool = False) -> np.ndarray:
    """``X`` with ``A X = b`` (``A^T X = b`` if ``adjoint``) for ``A = P L U`` given by getrf."""
    from ember.linalg import solve_triangular_arrays as trsm

    n = lu.shape[-1]
    batch = np.broadcast_shapes(lu.shape[:-2], pivots.shape[:-1], b.shape[:-2])
    lu = np.broadcast_to(lu, batch + lu.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    perm = np.broadcast_to(permutation(pivots, n), batch + (n,))
    if not adjoint:  # U^-1 L^-1 P^T b, where (P^T b) = b[perm]
        pb = np.take_along_axis(b, perm[..., None], -2)
        return trsm(lu, trsm(lu, pb, upper=False, unit=True), upper=True)
    lut = np.swapaxes(lu, -1, -2)  # P L^-T U^-T b
    y = trsm(lut, trsm(lut, b, upper=False), upper=True, unit=True)
    x = np.empty_like(y)
    np.put_along_axis(x, np.broadcast_to(perm[..., None], y.shape), y, -2)
    return x


def geqrf(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(a, tau)``: LAPACK's Householder QR, R above the diagonal and the reflectors below."""
    m, n = a.shape[-2:]
    if not a.size:
        return a.copy(), np.zeros(a.shape[:-2] + (min(m, n),), a.dtype)
    h, tau = np.linalg.qr(a, mode="raw")  # LAPACK's column-major result, transposed
    return np.ascontiguousarray(np.swapaxes(h, -1, -2)).astype(a.dtype), tau.astype(a.dtype)


def reflector(a: np.ndarray, i: int) -> np.ndarray:
    """The Householder vector ``v_i`` (..., m) stored in column ``i`` of ``a``: zeros above
    row ``i``, one at row ``i``, ``a``'s entries below."""
    v = a[..., :, i].copy()
    v[..., :i] = 0
    v[..., i] = 1
    return v


def apply_reflectors(a: np.ndarray, tau: np.ndarray, c: np.ndarray, order) -> np.ndarray:
    """``H_{order[-1]} ... H_{order[0]} c`` with ``H_i = I - tau_i v_i v_i^T``: the reflectors
    of ``a`` applied from the left, ``order[0]`` first."""
    c = c.copy()
    for i in order:
        v = reflector(a, i)
        vc = np.matmul(v[..., None, :], c)  # (..., 1, cols)
        c -= (tau[..., i, None, None] * v[..., :, None]) * vc
    return c
