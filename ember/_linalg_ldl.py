"""``linalg.ldl_factor`` (``_ex``) and ``linalg.ldl_solve``: LAPACK's Bunch-Kaufman
factorization of a symmetric matrix (sytrf, lower triangle) ``A = L D L^T`` with 1x1 and 2x2
diagonal blocks in ``D``, in LAPACK's compact form and pivot convention (a 2x2 block at rows
``k, k+1`` has ``pivots[k] = pivots[k+1] = -(row swapped with k+1)``, 1-based), and its solve
(sytrs). Not differentiable, as in torch.

Each matrix picks its own 1x1 or 2x2 steps, so the factorization loops over the matrices of a
batch, and over the columns of each; the updates are vectorised.
"""

from __future__ import annotations

import numpy as np

from ember import _dtype, return_types
from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.linalg import _square
from ember.ops.pointwise_more import _CNAME, not_for

_ALPHA = (1 + np.sqrt(17.0)) / 8  # Bunch-Kaufman's growth bound


def _pivot(a: np.ndarray, k: int) -> tuple[int, int, bool]:
    """``(kp, kstep, zero)`` for column ``k`` of the (lower, partly factored) ``a``."""
    n = a.shape[0]
    absakk = abs(a[k, k])
    imax, colmax = k, 0.0
    if k < n - 1:
        imax = k + 1 + int(np.argmax(np.abs(a[k + 1:, k])))
        colmax = abs(a[imax, k])
    if max(absakk, colmax) == 0 or np.isnan(absakk):
        return k, 1, True
    if absakk >= _ALPHA * colmax:
        return k, 1, False
    rowmax = np.abs(a[imax, k:imax]).max()
    if imax < n - 1:
        rowmax = max(rowmax, np.abs(a[imax + 1:, imax]).max())
    if absakk >= _ALPHA * colmax * (colmax / rowmax):
        return k, 1, False
    if abs(a[imax, imax]) >= _ALPHA * rowmax:
        return imax, 1, False
    return imax, 2, False


def _swap(a: np.ndarray, k: int, kk: int, kp: int, kstep: int) -> None:
    """Interchange rows and columns ``kk`` and ``kp`` of the trailing lower triangle."""
    n = a.shape[0]
    if kp < n - 1:
        a[kp + 1:, [kk, kp]] = a[kp + 1:, [kp, kk]]
    seg = a[kk + 1:kp, kk].copy()
    a[kk + 1:kp, kk] = a[kp, kk + 1:kp]
    a[kp, kk + 1:kp] = seg
    a[[kk, kp], [kk, kp]] = a[[kp, kk], [kp, kk]]
    if kstep == 2:
        a[[k + 1, kp], k] = a[[kp, k + 1], k]


def _update(a: np.ndarray, k: int, kstep: int) -> None:
    """Eliminate the pivot block: the trailing matrix gets the rank-1 or rank-2 update, and
    the pivot's columns become L's. Only the lower triangle is ever read (the swaps and
    pivot searches too), so the whole square is updated, whatever lands above."""
    n = a.shape[0]
    if kstep == 1:
        d11 = 1 / a[k, k]
        x = a[k + 1:, k]
        a[k + 1:, k + 1:] += x[:, None] * (-d11 * x)[None, :]
        a[k + 1:, k] = x * d11
        return
    if k >= n - 2:
        return
    d21 = a[k + 1, k]
    d11, d22 = a[k + 1, k + 1] / d21, a[k, k] / d21
    d21 = 1 / (d11 * d22 - 1) / d21
    x0, x1 = a[k + 2:, k].copy(), a[k + 2:, k + 1].copy()
    wk, wkp1 = d21 * (d11 * x0 - x1), d21 * (d22 * x1 - x0)
    a[k + 2:, k + 2:] -= x0[:, None] * wk + x1[:, None] * wkp1
    a[k + 2:, k], a[k + 2:, k + 1] = wk, wkp1


def sytrf(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """``(LD, pivots, info)`` of one matrix from its lower triangle (dsytf2's steps)."""
    a = np.tril(a).astype(a.dtype, copy=True)
    n = a.shape[0]
    piv = np.zeros(n, np.int32)
    info, k = 0, 0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        while k < n:
            kp, kstep, zero = _pivot(a, k)
            if zero:
                info = info or k + 1
            else:
                kk = k + kstep - 1
                if kp != kk:
                    _swap(a, k, kk, kp, kstep)
                _update(a, k, kstep)
            piv[k:k + kstep] = kp + 1 if kstep == 1 else -(kp + 1)
            k += kstep
    return np.tril(a), piv, info


def sytrs(ld: np.ndarray, piv: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``X`` with ``A X = b`` for one ``A = L D L^T`` from ``sytrf`` (dsytrs's steps)."""
    b = b.copy()
    n, k = ld.shape[0], 0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        while k < n:  # L D Y = b
            if piv[k] > 0:
                kp = piv[k] - 1
                b[[k, kp]] = b[[kp, k]]
                b[k + 1:] -= ld[k + 1:, k, None] * b[k]
                b[k] /= ld[k, k]
                k += 1
                continue
            kp = -piv[k] - 1
            b[[k + 1, kp]] = b[[kp, k + 1]]
            b[k + 2:] -= ld[k + 2:, k, None] * b[k]
            b[k + 2:] -= ld[k + 2:, k + 1, None] * b[k + 1]
            akm1k = ld[k + 1, k]
            akm1, ak = ld[k, k] / akm1k, ld[k + 1, k + 1] / akm1k
            denom = akm1 * ak - 1
            bkm1, bk = b[k] / akm1k, b[k + 1] / akm1k
            b[k], b[k + 1] = (ak * bkm1 - bk) / denom, (akm1 * bk - bkm1) / denom
            k += 2
        k = n - 1
        while k >= 0:  # L^T X = Y
            step = 1 if piv[k] > 0 else 2
            for j in range(k, k - step, -1):
                b[j] -= ld[k + 1:, j] @ b[k + 1:]
            kp = abs(int(piv[k])) - 1
            b[[k, kp]] = b[[kp, k]]
            k -= step
    return b


class LinalgLdlFactorEx(Op):
    """torch records the factorization with a node whose backward is not implemented."""

    node_name = "NotImplemented"

    @staticmethod
    def forward(ctx, a):
        flat = a.reshape((-1,) + a.shape[-2:]) if a.size else a.reshape(0, *a.shape[-2:])
        res = [sytrf(m) for m in flat]
        ld = np.stack([r[0] for r in res]) if res else flat.copy()
        piv = np.array([r[1] for r in res], np.int32).reshape(a.shape[:-1])
        info = np.array([r[2] for r in res], np.int32).reshape(a.shape[:-2])
        return ld.reshape(a.shape), piv, info

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError("derivative for aten::linalg_ldl_factor_ex is not implemented")


def _check_ldl_input(a: Tensor) -> None:
    _square("torch.linalg.ldl_factor_ex", a)
    if a.dtype not in (_dtype.float32, _dtype.float64):
        raise not_for("ldl_factor_kernel_cpu", a.dtype)


def ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False):
    """``(LD, pivots, info)``: Bunch-Kaufman ``A = L D L^T`` from A's lower triangle; info is
    the 1-based index of the first exactly zero diagonal entry of D (0 if none)."""
    _check_ldl_input(A)
    ld, piv, info = LinalgLdlFactorEx.apply(A)
    if check_errors:
        _raise_singular("linalg.ldl_factor_ex", info._data)
    return return_types.linalg_ldl_factor_ex(ld, piv, info)


def _raise_singular(name: str, info: np.ndarray) -> None:
    flat = info.reshape(-1)
    if flat.any():
        i = int(flat[np.argmax(flat > 0)])
        raise RuntimeError(f"torch.{name}: The factorization could not be completed because "
                           f"the input matrix is singular: D[{i},{i}] is exactly zero.")


def ldl_factor(A: Tensor, *, hermitian: bool = False):
    """``(LD, pivots)`` of ``ldl_factor_ex``; raises where D is singular."""
    _check_ldl_input(A)
    ld, piv, info = LinalgLdlFactorEx.apply(A)
    _raise_singular("linalg.ldl_factor", info._data)
    return return_types.linalg_ldl_factor(ld, piv)


class LinalgLdlSolve(Op):
    node_name = "NotImplemented"

    @staticmethod
    def forward(ctx, ld, piv, b):
        batch = np.broadcast_shapes(ld.shape[:-2], piv.shape[:-1], b.shape[:-2])
        n = ld.shape[-1]
        lds = np.broadcast_to(ld, batch + (n, n)).reshape(-1, n, n)
        pivs = np.broadcast_to(piv, batch + (n,)).reshape(-1, n)
        bs = np.broadcast_to(b, batch + b.shape[-2:]).reshape((-1,) + b.shape[-2:])
        out = np.empty(bs.shape, b.dtype)
        for i in range(len(bs)):
            out[i] = sytrs(lds[i], pivs[i], bs[i])
        return out.reshape(batch + b.shape[-2:])

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError("derivative for aten::linalg_ldl_solve is not implemented")


def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False) -> Tensor:
    """``X`` with ``A X = B`` for ``A`` given by ``ldl_factor``'s ``(LD, pivots)``."""
    name = "torch.linalg.ldl_solve"
    if B.ndim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-{B.ndim}, "
                         f"{B.ndim - 1}], but got -2)")
    if LD.ndim < 2 or LD.shape[-1] != LD.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{LD.shape[-2] if LD.ndim > 1 else 1} by {LD.shape[-1]} matrices")
    if pivots.shape != LD.shape[:-1]:
        raise RuntimeError(f"{name}: Expected LD.shape[:-1] and pivots.shape to be the same, "
                           f"but got pivots with shape {list(pivots.shape)} instead")
    if B.shape[-2] != LD.shape[-1]:
        raise RuntimeError(f"Incompatible matrix sizes for {name}: each A matrix is "
                           f"{LD.shape[-1]} by {LD.shape[-1]} but each b matrix is "
                           f"{B.shape[-2]} by {B.shape[-1]}")
    if B.dtype is not LD.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{_CNAME[B.dtype.name]} and A of type {_CNAME[LD.dtype.name]} "
                           "instead.")
    if pivots.dtype.is_floating_point or pivots.dtype is _dtype.bool_:
        raise RuntimeError(f"{name}: Expected pivots to be integers. Got "
                           f"{_CNAME[pivots.dtype.name]}")
    if LD.dtype not in (_dtype.float32, _dtype.float64):
        raise not_for("ldl_solve_cpu", LD.dtype)
    return LinalgLdlSolve.apply(LD, pivots, B)
