"""Linear algebra at ``torch.<name>``: addr, adjoint, vander, matrix_exp, pinverse,
chain_matmul, cholesky_solve/cholesky_inverse (with torch's gradient formulas), the deprecated
triangular_solve, nuclear_norm and frobenius_norm.
"""

from __future__ import annotations

import warnings

import numpy as np

from ember import _dtype
from ember._tensor import Tensor
from ember._warn import warn_user
from ember.autograd.function import Op
from ember.ops._promote import scalar
from ember.ops.linalg import matmul
from ember.ops.pointwise_more import _CNAME, not_for
from ember.ops.shape import broadcast_shapes


def _linalg():
    from ember import linalg

    return linalg


# --- addr ----------------------------------------------------------------------------------


class Addr(Op):
    node_name = "AddrBackward0"
    saves = (1, 2)
    save_for = ((2,), (1,))
    broadcasts = True

    @staticmethod
    def forward(ctx, x, v1, v2, beta=1, alpha=1):
        ctx.beta, ctx.alpha = beta, alpha
        prod = np.multiply.outer(v1, v2)
        if alpha != 1:
            prod = prod * scalar(alpha, prod.dtype)
        if beta == 0:  # beta = 0 ignores input, NaN and inf included, as torch
            return np.broadcast_to(prod, np.broadcast_shapes(x.shape, prod.shape)).copy()
        return (x if beta == 1 else x * scalar(beta, x.dtype)) + prod

    @staticmethod
    def backward(ctx, g):
        v1, v2 = ctx.saved_tensors
        need = ctx.needs_input_grad
        a, b = ctx.alpha, ctx.beta
        gx = (g if b == 1 else g * b) if need[0] else None
        g1 = (g.mv(v2) if a == 1 else g.mv(v2) * a) if need[1] else None
        g2 = (g.t().mv(v1) if a == 1 else g.t().mv(v1) * a) if need[2] else None
        return gx, g1, g2


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)``."""
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        if v.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {v.ndim}-D")
    dt = _dtype.result_type((input, vec1, vec2))
    if dt is _dtype.bool_ and (isinstance(beta, float) or isinstance(alpha, float)):
        raise RuntimeError("Boolean beta only supported for Boolean results.")
    if not dt.is_floating_point and (isinstance(beta, float) or isinstance(alpha, float)):
        raise RuntimeError("For integral input tensors, argument beta must not be a floating "
                           "point number.")
    input, vec1, vec2 = (t if t.dtype is dt else t.to(dt) for t in (input, vec1, vec2))
    input.expand(vec1.shape[0], vec2.shape[0])  # torch's errors for an input that won't fit
    return Addr.apply(input, vec1, vec2, beta=beta, alpha=alpha)


# --- small compositions --------------------------------------------------------------------


def adjoint(input: Tensor) -> Tensor:
    """The conjugate transpose of the last two dims (a view)."""
    if input.ndim < 2:
        raise RuntimeError("tensor.adjoint() is only supported on matrices or batches of "
                           f"matrices. Got {input.ndim}-D tensor.")
    return input.transpose(-2, -1)


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """``x[i] ** (N - 1 - j)`` (or ``** j`` when ``increasing``): composed as torch does it,
    ones, then the cumulative product written in place, then a flip."""
    from ember._creation import ones

    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dt = _dtype.promote_types(x.dtype, _dtype.int64)
    out = ones((x.shape[0], n), dtype=dt)
    if n > 1:
        out[:, 1:] = x.unsqueeze(1)
        out[:, 1:] = out[:, 1:].cumprod(1)
    return out if increasing else out.flip(1)


def matrix_exp(input: Tensor) -> Tensor:
    return _linalg().matrix_exp(input)


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """The pseudo-inverse, with singular values below ``rcond * max`` treated as zero."""
    return _linalg().pinv(input, rtol=rcond)


def chain_matmul(*matrices) -> Tensor:
    """Deprecated: ``linalg.multi_dot(matrices)``."""
    warn_user("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
              "release. Use torch.linalg.multi_dot instead, which accepts a list of two or "
              "more tensors rather than multiple parameters.")
    if len(matrices) == 1 and isinstance(matrices[0], list | tuple):
        matrices = tuple(matrices[0])
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for i, m in enumerate(matrices):
        if not isinstance(m, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(m).__name__}")
        if m.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {m.ndim}, expected 2 instead.")
    if len(matrices) == 1:
        return matrices[0].clone()
    return _linalg().multi_dot(list(matrices))


def _deprecated_norm(name: str, replacement: str) -> None:
    warn_user(f"at::{name} is deprecated and it is just left for JIT compatibility. It will "
              f"be removed in a future PyTorch release. Please use `{replacement}` instead")


def nuclear_norm(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """Deprecated: ``linalg.matrix_norm(input, 'nuc', dim, keepdim)``."""
    _deprecated_norm("nuclear_norm", "linalg.matrix_norm(A, 'nuc', dim, keepdim)")
    if isinstance(dim, bool):  # nuclear_norm(input, keepdim)
        dim, keepdim = None, dim
    return _linalg().matrix_norm(input, "nuc", (-2, -1) if dim is None else tuple(dim), keepdim)


def frobenius_norm(input: Tensor, dim, keepdim: bool = False) -> Tensor:
    """Deprecated: ``linalg.vector_norm(input, 2, dim, keepdim)``."""
    _deprecated_norm("frobenius_norm", "linalg.vector_norm(A, 2., dim, keepdim)")
    dim = tuple(dim)
    if len(dim) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dim)} dimensions "
                           "instead.")
    return input.norm(2, dim, keepdim)


# --- Cholesky-based solves ----------------------------------------------------------------


def _solve_with_factor(b: np.ndarray, low: np.ndarray) -> np.ndarray:
    """``(L L^T)^-1 b`` for lower-triangular ``low``: two triangular solves (inf and NaN for
    a zero on the diagonal, as torch's potrs)."""
    solve = _linalg().solve_triangular_arrays
    return solve(np.swapaxes(low, -1, -2), solve(low, b, False), True)


def _lower(factor: np.ndarray, upper: bool) -> np.ndarray:
    """The lower factor, reading only the triangle torch reads."""
    return np.swapaxes(np.triu(factor), -1, -2) if upper else np.tril(factor)


class CholeskySolve(Op):
    """torch's node saves b as well (its formula's signature lists it), though the gradients
    read only the factor and the solution."""

    node_name = "CholeskySolveBackward0"
    saves = (0, 1)
    saves_output = True
    broadcasts = True

    @staticmethod
    def forward(ctx, b, factor, upper=False):
        ctx.upper = upper
        return _solve_with_factor(b, _lower(factor, upper)).astype(b.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        _, factor, x = ctx.saved_tensors
        gb = cholesky_solve(g, factor, ctx.upper)
        if not ctx.needs_input_grad[1]:
            return gb, None
        common = matmul(gb, x.mT)
        common = common + common.mT
        gf = -matmul(factor, common) if ctx.upper else -matmul(common, factor)
        return gb, gf


def _same_dtype(prefix: str, b: Tensor, a: Tensor) -> None:
    if b.dtype is not a.dtype:
        raise RuntimeError(f"{prefix}Expected b and A to have the same dtype, but found b of "
                           f"type {_CNAME[b.dtype.name]} and A of type {_CNAME[a.dtype.name]} "
                           "instead.")


def _square_factor(prefix: str, a: Tensor) -> None:
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"{prefix}A must be batches of square matrices, but they are "
                           f"{a.shape[-2] if a.ndim > 1 else 1} by {a.shape[-1]} matrices")


def _float_kernel(kernel: str, a: Tensor) -> None:
    """LAPACK's solves exist for float and double only, as torch's CPU kernels."""
    if a.dtype not in (_dtype.float32, _dtype.float64):
        raise not_for(kernel, a.dtype)


def _check_factor(name: str, a: Tensor, b: Tensor | None = None) -> None:
    _square_factor(f"{name}: ", a)
    if b is not None:
        _same_dtype(f"{name}: ", b, a)
    _float_kernel(f"{name}_cpu", a)


def cholesky_solve(input: Tensor, input2: Tensor, upper: bool = False) -> Tensor:
    """``X`` with ``A X = input`` for ``A = L L^T`` given its Cholesky factor ``input2``."""
    _check_factor("cholesky_solve", input2, input)
    if input.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {input.ndim} "
                           "dimensions instead")
    return CholeskySolve.apply(input, input2, upper=upper)


class CholeskyInverse(Op):
    node_name = "CholeskyInverseBackward0"
    saves = (0,)
    saves_output = True

    @staticmethod
    def forward(ctx, factor, upper=False):
        ctx.upper = upper
        zero = np.diagonal(factor, axis1=-2, axis2=-1) == 0
        if zero.any():
            flat = zero.reshape(-1, zero.shape[-1])
            batch = int(np.argmax(flat.any(-1)))
            where = f"(Batch element {batch}): " if factor.ndim > 2 else ""
            raise _linalg().LinAlgError(
                f"cholesky_inverse: {where}The diagonal element {int(np.argmax(flat[batch])) + 1}"
                " is zero, the inversion could not be completed because the input matrix is "
                "singular.")
        eye = np.broadcast_to(np.eye(factor.shape[-1], dtype=factor.dtype), factor.shape)
        return _solve_with_factor(eye, _lower(factor, upper)).astype(factor.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        factor, inv = ctx.saved_tensors
        common = matmul(inv, matmul(g + g.mT, inv))
        return -matmul(factor, common) if ctx.upper else -matmul(common, factor)


def cholesky_inverse(input: Tensor, upper: bool = False) -> Tensor:
    """``(L L^T)^-1`` from a Cholesky factor ``L`` (or ``U^T U`` with ``upper``)."""
    _check_factor("cholesky_inverse", input)
    return CholeskyInverse.apply(input, upper=upper)


class TriangularSolve(Op):
    """``(X, A.clone())`` from one node, both broadcast to the batch, saving b, A and X as
    torch's node (torch's triangular_solve_backward)."""

    node_name = "TriangularSolveBackward0"
    saves = (0, 1)
    saves_output = (0,)
    broadcasts = True

    @staticmethod
    def forward(ctx, b, a, upper=True, transpose=False, unit=False):
        ctx.flags = (upper, transpose, unit)
        batch = np.broadcast_shapes(b.shape[:-2], a.shape[:-2])
        op_a = np.swapaxes(a, -1, -2) if transpose else a
        x = _linalg().solve_triangular_arrays(op_a, b, upper != transpose, unit=unit)
        return x.astype(b.dtype, copy=False), np.broadcast_to(a, batch + a.shape[-2:]).copy()

    @staticmethod
    def backward(ctx, g_x, g_a):
        b, a, x = ctx.saved_tensors
        upper, transpose, unit = ctx.flags
        gb = ga = None
        if g_x is not None:
            gb = triangular_solve_quiet(g_x, a, upper, not transpose, unit)
            if ctx.needs_input_grad[1]:
                ga = -matmul(x, gb.mT) if transpose else -matmul(gb, x.mT)
                ga = ga.triu(int(unit)) if upper else ga.tril(-int(unit))
        if gb is None:
            gb = b.new_zeros(()).expand(b.shape)
        if g_a is not None and ctx.needs_input_grad[1]:
            ga = g_a if ga is None else ga + g_a
        return gb, ga


def triangular_solve_quiet(b: Tensor, A: Tensor, upper: bool, transpose: bool,
                           unitriangular: bool) -> Tensor:
    """The solution of ``triangular_solve`` without its deprecation warning (for backward)."""
    return TriangularSolve.apply(b, A, upper=upper, transpose=transpose, unit=unitriangular)[0]


def triangular_solve(input: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False):
    """Deprecated: ``(X, A.clone())`` with ``op(A) X = input``, reading one triangle of ``A``."""
    from ember.return_types import triangular_solve as result

    for name, t in (("b", input), ("A", A)):
        if t.ndim < 2:
            raise RuntimeError(f"torch.triangular_solve: Expected {name} to have at least 2 "
                               f"dimensions, but it has {t.ndim} dimensions instead")
    _same_dtype("", input, A)
    _square_factor("", A)
    if input.shape[-2] != A.shape[-1]:
        raise RuntimeError(f"Incompatible matrix sizes for triangular_solve: each A matrix is "
                           f"{A.shape[-1]} by {A.shape[-1]} but each b matrix is "
                           f"{input.shape[-2]} by {input.shape[-1]}")
    broadcast_shapes(input.shape[:-2], A.shape[:-2])
    _float_kernel("triangular_solve_cpu", A)

    warnings.warn("torch.triangular_solve is deprecated in favor of "
                  "torch.linalg.solve_triangularand will be removed in a future PyTorch release."
                  "\ntorch.linalg.solve_triangular has its arguments reversed and does not "
                  "return a copy of one of the inputs.\nX = torch.triangular_solve(B, "
                  "A).solution\nshould be replaced with\nX = torch.linalg.solve_triangular(A, "
                  "B).", UserWarning, stacklevel=2)
    return result(*TriangularSolve.apply(input, A, upper=upper, transpose=transpose,
                                         unit=unitriangular))


FUNCTIONS = {
    "addr": addr, "adjoint": adjoint, "vander": vander, "matrix_exp": matrix_exp,
    "pinverse": pinverse, "chain_matmul": chain_matmul, "nuclear_norm": nuclear_norm,
    "frobenius_norm": frobenius_norm, "cholesky_solve": cholesky_solve,
    "cholesky_inverse": cholesky_inverse, "triangular_solve": triangular_solve,
}
METHODS = {name: FUNCTIONS[name] for name in (
    "addr", "adjoint", "matrix_exp", "pinverse", "cholesky_solve", "cholesky_inverse",
    "triangular_solve")}
