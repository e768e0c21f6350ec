"""``ember.linalg``: norms, inverse, determinants, solve, decompositions (torch.linalg).

Inputs may carry leading batch dimensions. Backward formulas use ember ops on saved inputs and
outputs, so they can be differentiated again. Decompositions live in ``ember._linalg_decomp``.
"""

from __future__ import annotations

import math

import numpy as np

from ember._tensor import Tensor, _wrap_dim
from ember.autograd.function import Op
from ember.ops.linalg import matmul
from ember.ops.pointwise_more import _CNAME
from ember.ops.reduction_norm import vector_norm

__all__ = ["LinAlgError", "norm", "vector_norm", "matrix_norm", "inv", "det", "slogdet",
           "solve", "cholesky", "eigh", "eigvalsh", "qr", "svd", "svdvals", "matrix_power",
           "matmul", "vecdot", "multi_dot", "cross", "solve_triangular", "pinv",
           "matrix_rank"]


class LinAlgError(RuntimeError):
    """Raised when a matrix is singular (torch.linalg.LinAlgError)."""


def _square(name: str, a: Tensor) -> None:
    if a.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{a.shape[-2]} by {a.shape[-1]} matrices")
    if not a.dtype.is_floating_point:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{_CNAME[a.dtype.name]}")


def _singular(name: str, a: np.ndarray) -> LinAlgError:
    """torch's message, naming the first singular batch element and its zero pivot."""
    flat = a.reshape(-1, *a.shape[-2:])
    ranks = np.linalg.matrix_rank(flat) if flat.size else np.zeros(len(flat), int)
    b = int(np.argmax(ranks < a.shape[-1]))
    where = f"(Batch element {b}): " if a.ndim > 2 else ""
    return LinAlgError(f"{name}: {where}The diagonal element {int(ranks[b]) + 1} is zero, the "
                       "inversion could not be completed because the input matrix is singular.")


class LinalgInvEx(Op):
    node_name = "LinalgInvExBackward0"
    saves_output = True

    @staticmethod
    def forward(ctx, a):
        try:
            return np.linalg.inv(a)
        except np.linalg.LinAlgError:
            raise _singular("linalg.inv", a) from None

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        t = out.mT
        return -matmul(matmul(t, g), t)


def inv(A: Tensor) -> Tensor:
    """Inverse of a square matrix (or batch of them)."""
    _square("linalg.inv", A)
    return LinalgInvEx.apply(A)


def _adjugate_t(a: np.ndarray) -> np.ndarray:
    """Transposed adjugate through the SVD: the gradient of det, valid for singular inputs."""
    u, s, vh = np.linalg.svd(a)
    # others[..., i]: the product of every singular value but the i-th (prefix times suffix)
    ones = np.ones_like(s[..., :1])
    before = np.cumprod(np.concatenate([ones, s[..., :-1]], -1), -1)
    after = np.cumprod(np.concatenate([ones, s[..., :0:-1]], -1), -1)[..., ::-1]
    others = before * after
    sign = np.linalg.det(u) * np.linalg.det(vh)
    adj = (np.swapaxes(vh, -1, -2) * others[..., None, :]) @ np.swapaxes(u, -1, -2)
    return np.swapaxes(adj * sign[..., None, None], -1, -2).astype(a.dtype)


class LinalgDet(Op):
    node_name = "LinalgDetBackward0"
    saves = (0,)
    saves_output = True

    @staticmethod
    def forward(ctx, a):
        return np.linalg.det(a) if a.shape[-1] else np.ones(a.shape[:-2], a.dtype)

    @staticmethod
    def backward(ctx, g):
        a, out = ctx.saved_tensors
        if not a._data.size:
            return a * 0.0
        scale = (g * out).unsqueeze(-1).unsqueeze(-1)
        if np.all(out._data != 0):
            return scale * inv(a).mT
        # Singular: d det / dA is the (transposed) adjugate; first order only.
        return g.unsqueeze(-1).unsqueeze(-1) * Tensor._make(_adjugate_t(a._data))


def det(A: Tensor) -> Tensor:
    """Determinant of a square matrix (or batch of them)."""
    _square("linalg.det", A)
    return LinalgDet.apply(A)


class LinalgSlogdet(Op):
    node_name = "LinalgSlogdetBackward0"
    saves = (0,)
    saves_output = (0,)  # the sign, as torch

    @staticmethod
    def forward(ctx, a):
        sign, logabs = np.linalg.slogdet(a)
        return sign.astype(a.dtype), logabs.astype(a.dtype)

    @staticmethod
    def backward(ctx, g_sign, g_logabs):
        a = ctx.saved_tensors[0]
        if g_logabs is None:  # the sign is piecewise constant
            return a * 0.0
        return g_logabs.unsqueeze(-1).unsqueeze(-1) * inv(a).mT


def slogdet(A: Tensor):
    """``(sign, log|det|)`` of square matrices, as a ``linalg_slogdet`` named tuple."""
    from ember import return_types

    _square("linalg.slogdet", A)
    return return_types.linalg_slogdet(*LinalgSlogdet.apply(A))


def logdet(A: Tensor) -> Tensor:
    """``log(det(A))``: NaN for a negative determinant, -inf for a singular matrix."""
    sign, logabs = slogdet(A)
    from ember.ops.pointwise import where

    return where(sign < 0, float("nan"), logabs)


def matrix_power(A: Tensor, n: int) -> Tensor:
    """``A`` multiplied by itself ``n`` times (``inv(A)`` powers for negative ``n``)."""
    _square("linalg.matrix_power", A)
    if n == 0:
        from ember._creation import eye

        return eye(A.shape[-1], dtype=A.dtype).expand(A.shape).clone()
    if n == 1:
        return A.clone()
    if n < 0:
        A, n = inv(A), -n
    out, base = None, A
    while n:  # binary exponentiation: O(log n) products
        if n & 1:
            out = base if out is None else matmul(out, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return out


def _is_vector_rhs(a: Tensor, b: Tensor) -> bool:
    return b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])


class LinalgSolveEx(Op):
    node_name = "LinalgSolveExBackward0"
    saves = (0,)
    saves_output = True
    broadcasts = True

    @staticmethod
    def forward(ctx, a, b, vector=False):
        ctx.vector = vector
        try:
            if vector:
                return np.linalg.solve(a, b[..., None])[..., 0]
            return np.linalg.solve(a, b)
        except np.linalg.LinAlgError:
            raise LinAlgError("torch.linalg.solve: The solver failed because the input matrix "
                              "is singular.") from None

    @staticmethod
    def backward(ctx, g):
        a, x = ctx.saved_tensors
        gb = LinalgSolveEx.apply(a.mT, g, vector=ctx.vector)
        if not ctx.needs_input_grad[0]:
            return None, gb
        if ctx.vector:
            ga = -(gb.unsqueeze(-1) * x.unsqueeze(-2))
        else:
            ga = -matmul(gb, x.mT)
        return ga, gb


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """The ``X`` with ``A @ X = B`` (or ``X @ A = B`` when ``left=False``)."""
    _square("linalg.solve", A)
    if not left:
        return solve(A.mT, B.mT).mT
    vector = _is_vector_rhs(A, B)
    rows = B.shape[-1] if vector else B.shape[-2] if B.ndim >= 2 else -1
    if rows != A.shape[-1]:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"AX = B ({A.shape[-2]}x{A.shape[-1]} and "
                           f"{'x'.join(map(str, B.shape[-2:]))})")
    if A._data.dtype != B._data.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found "
                           f"A of type {A.dtype.name.capitalize()} and B of type "
                           f"{B.dtype.name.capitalize()} instead")
    return LinalgSolveEx.apply(A, B, vector=vector)


def _triangle(n: int, upper: bool, unit: bool, dtype) -> np.ndarray:
    """0/1 mask of the triangle a triangular solve reads (without the diagonal if unit)."""
    ones = np.ones((n, n), dtype=dtype)
    return np.triu(ones, int(unit)) if upper else np.tril(ones, -int(unit))


def solve_triangular_arrays(a: np.ndarray, b: np.ndarray, upper: bool, left: bool = True,
                            unit: bool = False) -> np.ndarray:
    """``X`` with ``T X = b`` (or ``X T = b``), ``T`` the triangle of ``a`` that is read."""
    t = a * _triangle(a.shape[-1], upper, unit, a.dtype)
    if unit:
        t = t + np.eye(a.shape[-1], dtype=a.dtype)
    if not left:
        return np.swapaxes(solve_triangular_arrays(np.swapaxes(t, -1, -2),
                                                   np.swapaxes(b, -1, -2), not upper), -1, -2)
    if (np.diagonal(t, axis1=-2, axis2=-1) == 0).any():
        return _substitute(t, b, upper)
    return np.linalg.solve(t, b)


def _substitute(t: np.ndarray, b: np.ndarray, upper: bool) -> np.ndarray:
    """Back (or forward) substitution, one row at a time over all batches and columns: for a
    triangle with a zero on its diagonal, where LAPACK's general solve refuses (or pivots to
    garbage), it gives the inf and NaN that torch's triangular solve (trsm) gives."""
    n = t.shape[-1]
    x = np.zeros(np.broadcast_shapes(t.shape[:-2], b.shape[:-2]) + b.shape[-2:],
                 np.result_type(t, b))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for i in range(n - 1, -1, -1) if upper else range(n):
            done = slice(i + 1, n) if upper else slice(0, i)
            rest = b[..., i, :] - np.matmul(t[..., i:i + 1, done], x[..., done, :])[..., 0, :]
            x[..., i, :] = rest / t[..., i, i, None]
    return x


class LinalgSolveTriangular(Op):
    node_name = "LinalgSolveTriangularBackward0"
    saves = (0,)
    saves_output = True
    broadcasts = True

    @staticmethod
    def forward(ctx, a, b, upper=True, left=True, unit=False):
        ctx.upper, ctx.left, ctx.unit = upper, left, unit
        return solve_triangular_arrays(a, b, upper, left, unit)

    @staticmethod
    def backward(ctx, g):
        a, x = ctx.saved_tensors
        kw = dict(upper=not ctx.upper, left=ctx.left, unitriangular=ctx.unit)
        gb = solve_triangular(a.mT, g, **kw)
        if not ctx.needs_input_grad[0]:
            return None, gb
        mask = Tensor._make(_triangle(a.shape[-1], ctx.upper, ctx.unit, a._data.dtype))
        ga = -(matmul(gb, x.mT) if ctx.left else matmul(x.mT, gb))
        return ga * mask, gb


def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True,
                     unitriangular: bool = False) -> Tensor:
    """Solve ``A X = B`` (or ``X A = B``) reading only the upper or lower triangle of ``A``."""
    _square("linalg.solve_triangular", A)
    return LinalgSolveTriangular.apply(A, B, upper=upper, left=left, unit=unitriangular)


def _rank_tol(s: np.ndarray, shape: tuple, atol, rtol):
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else np.finfo(s.dtype).eps * max(shape)
    smax = s.max(-1, keepdims=True) if s.shape[-1] else np.zeros(s.shape[:-1] + (1,), s.dtype)
    return np.maximum(atol or 0.0, rtol * smax)


class LinalgPinv(Op):
    """The pseudo-inverse through the SVD; torch's node and backward (pinv_backward)."""

    node_name = "LinalgPinvBackward0"
    saves = (0,)
    saves_output = True

    @staticmethod
    def forward(ctx, a, atol=None, rtol=None):
        u, s, vh = np.linalg.svd(a, full_matrices=False)
        keep = s > _rank_tol(s, a.shape[-2:], atol, rtol)
        s_inv = np.where(keep, 1 / np.where(keep, s, 1), 0).astype(a.dtype, copy=False)
        return (np.swapaxes(vh, -1, -2) * s_inv[..., None, :]) @ np.swapaxes(u, -1, -2)

    @staticmethod
    def backward(ctx, g):
        return pinv_backward(g, *ctx.saved_tensors)


def pinv_backward(g: Tensor, a: Tensor, p: Tensor) -> Tensor:
    """The gradient of ``p = pinv(a)`` for the gradient ``g`` of ``p`` (torch's pinv_backward)."""
    ph, gh = p.mT, g.mT
    if a.shape[-2] <= a.shape[-1]:
        k = matmul(gh, p)
        kph = matmul(k, ph)
        return -matmul(p, k).mT + kph - matmul(matmul(a, p), kph) + \
            matmul(matmul(ph, p), gh - matmul(k, a))
    k = matmul(p, gh)
    phk = matmul(ph, k)
    return -matmul(k, p).mT + matmul(matmul(gh - matmul(a, k), p), ph) + phk - \
        matmul(matmul(phk, p), a)


def pinv(A: Tensor, *, atol=None, rtol=None, hermitian: bool = False) -> Tensor:
    """Moore-Penrose pseudo-inverse through the SVD; singular values below tol count as zero."""
    return LinalgPinv.apply(A, atol=atol, rtol=rtol)


def matrix_rank(A: Tensor, *, atol=None, rtol=None, hermitian: bool = False) -> Tensor:
    """Number of singular values above the tolerance (torch's defaults)."""
    s = np.linalg.svd(A._data, compute_uv=False)
    return Tensor._make(np.sum(s > _rank_tol(s, A.shape[-2:], atol, rtol), -1).astype(np.int64))


def _matrix_dims(dim) -> tuple:
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got "
                           f"{' '.join(map(str, dim))}")
    return tuple(dim)


def matrix_norm(A: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False, *,
                dtype=None) -> Tensor:
    """Frobenius, nuclear, 1, inf or spectral (2) norm of the matrices over ``dim``."""
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    d0, d1 = (_wrap_dim(d, A.ndim) for d in _matrix_dims(dim))
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({d0}, {d1})")
    if dtype is not None:
        A = A.to(dtype)
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    if ord in ("nuc", 2, -2):
        s = svdvals(A.movedim((d0, d1), (-2, -1)))
        out = s.sum(-1) if ord == "nuc" else s.amax(-1) if ord == 2 else s.amin(-1)
    elif ord in (1, -1, math.inf, -math.inf):
        # 1: largest column sum of |A|; inf: largest row sum (torch's vector_norm, then amax).
        inner, outer = (d0, d1) if abs(ord) == 1 else (d1, d0)
        sums = vector_norm(A, 1, inner, keepdim)
        outer -= outer > inner and not keepdim
        return sums.amax(outer, keepdim) if ord > 0 else sums.amin(outer, keepdim)
    else:
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if keepdim:
        out = out.unsqueeze(-1).unsqueeze(-1).movedim((-2, -1), (d0, d1))
    return out


def norm(A: Tensor, ord=None, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Vector norm for 1-D input or an int ``dim``; matrix norm for 2-D input or a 2-tuple."""
    if dim is not None and not isinstance(dim, int):
        dim = tuple(dim)
    if dim is None and ord is not None and A.ndim not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be "
                           f"1D or 2D. Got {A.ndim}D.")
    if isinstance(dim, tuple) and len(dim) == 2 or dim is None and A.ndim == 2 and \
            ord is not None:
        return matrix_norm(A, "fro" if ord is None else ord, dim or (-2, -1), keepdim,
                           dtype=dtype)
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """Dot products along ``dim``, broadcasting the other dims."""
    return (x * y).sum(dim)


def multi_dot(tensors) -> Tensor:
    """Product of a chain of matrices (first/last may be vectors), left to right."""
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    out = tensors[0]
    for t in tensors[1:]:
        out = matmul(out, t)
    return out


from ember._linalg_decomp import cholesky, eigh, eigvalsh, qr, svd, svdvals  # noqa: E402
from ember.ops._out import LINALG_RULES, add_out  # noqa: E402
from ember.ops.linalg_extra import linalg_cross as cross  # noqa: E402

add_out(globals(), LINALG_RULES, "linalg_")  # out= as in torch.linalg

# Added by the API coverage work (ember/_linalg_more.py).
from ember._linalg_more import (  # noqa: E402
    cholesky_ex,
    cond,
    diagonal,
    inv_ex,
    matrix_exp,
    solve_ex,
    tensorinv,
    tensorsolve,
    vander,
)

__all__ += ["cholesky_ex", "cond", "diagonal", "inv_ex", "matrix_exp", "solve_ex", "tensorinv",
            "tensorsolve", "vander"]
add_out(globals(), {n: LINALG_RULES[n] for n in ("cholesky_ex", "cond", "inv_ex", "solve_ex",
                                                   "tensorinv", "tensorsolve")}, "linalg_")

# LU, Householder products, LDL and least squares (ember/_linalg_lu.py,
# _linalg_householder.py, _linalg_ldl.py, _linalg_lstsq.py).
from ember._linalg_householder import householder_product  # noqa: E402
from ember._linalg_ldl import ldl_factor, ldl_factor_ex, ldl_solve  # noqa: E402
from ember._linalg_lstsq import lstsq  # noqa: E402
from ember._linalg_lu import lu, lu_factor, lu_factor_ex, lu_solve  # noqa: E402

__all__ += ["householder_product", "ldl_factor", "ldl_factor_ex", "ldl_solve", "lstsq", "lu",
            "lu_factor", "lu_factor_ex", "lu_solve"]
add_out(globals(), {n: LINALG_RULES[n] for n in ("householder_product", "ldl_factor",
                                                   "ldl_factor_ex", "ldl_solve", "lu",
                                                   "lu_factor", "lu_factor_ex", "lu_solve")},
        "linalg_")

from ember.amp import _casting  # noqa: E402

_casting.install()  # autocast's casts on the listed linalg ops
