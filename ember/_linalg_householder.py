"""Householder QR in LAPACK's compact form: ``geqrf`` (R above the diagonal, reflectors below
with their scales ``tau``), ``linalg.householder_product`` (= ``orgqr``: the first columns of
``Q = H_1 ... H_k``) and ``ormqr`` (``Q`` or ``Q^T`` times a matrix, from either side).

The gradients run the reflectors again with ember ops, one at a time: each step
``N -> N - tau v (v^T N)`` gives ``tau`` the gradient ``-v^T G N^T v``, ``v`` the gradient
``-tau (G N^T + N G^T) v`` and passes ``H^T G`` on.
"""

from __future__ import annotations

import numpy as np

from ember import _dtype, _lapack, return_types
from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.ops.linalg import matmul
from ember.ops.pointwise_more import _CNAME, not_for


def _reflector(a: Tensor, i: int) -> Tensor:
    """``v_i`` (..., m) as an ember op on ``a``'s column ``i`` (so it stays differentiable)."""
    m = a.shape[-2]
    mask = Tensor._make((np.arange(m) > i).astype(a._data.dtype))
    unit = Tensor._make((np.arange(m) == i).astype(a._data.dtype))
    return a[..., :, i] * mask + unit


def _vt(v: Tensor, n: Tensor) -> Tensor:
    """``v^T N`` as (..., cols)."""
    return matmul(v.unsqueeze(-2), n).squeeze(-2)


def reflectors_backward(a: Tensor, tau: Tensor, c: Tensor, order, g: Tensor) -> tuple:
    """Gradients ``(a, tau, c)`` of ``H_{order[-1]} ... H_{order[0]} c`` for its gradient ``g``."""
    vs = {i: _reflector(a, i) for i in order}
    steps = [c]  # the matrix each reflector was applied to
    for i in order[:-1]:
        n = steps[-1]
        steps.append(n - tau[..., i, None, None] * vs[i].unsqueeze(-1) * _vt(vs[i], n)
                     .unsqueeze(-2))
    g_tau, g_v = [None] * tau.shape[-1], [None] * a.shape[-1]  # columns past tau's: zero
    for i, n in zip(reversed(order), reversed(steps)):
        v, t = vs[i], tau[..., i]
        nv, gv = _vt(v, n), _vt(v, g)  # N^T v, G^T v
        g_tau[i] = -(gv * nv).sum(-1)
        g_v[i] = -t.unsqueeze(-1) * (matmul(g, nv.unsqueeze(-1)) +
                                     matmul(n, gv.unsqueeze(-1))).squeeze(-1)
        g = g - t[..., None, None] * v.unsqueeze(-1) * gv.unsqueeze(-2)
    zeros = a[..., :, 0].detach() * 0
    ga = _stack([gv if gv is not None else zeros for gv in g_v], -1).tril(-1)
    gt = _stack([x if x is not None else tau[..., 0].detach() * 0 for x in g_tau], -1)
    return ga, gt, g


def _stack(ts, dim: int) -> Tensor:
    from ember.ops.joining import stack

    return stack(ts, dim)


def _check_float(kernel: str, a: Tensor) -> None:
    if a.dtype not in (_dtype.float32, _dtype.float64):
        raise not_for(kernel, a.dtype)


def geqrf(input: Tensor):
    """``(a, tau)``: LAPACK's Householder QR (not differentiable, as in torch)."""
    if input.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    _check_float("geqrf_cpu", input)
    a, tau = Geqrf.apply(input)
    return return_types.geqrf(a, tau)


class Geqrf(Op):
    node_name = "GeqrfBackward0"

    @staticmethod
    def forward(ctx, a):
        return _lapack.geqrf(a)

    @staticmethod
    def backward(ctx, g_a, g_tau):
        raise NotImplementedError("the derivative for 'geqrf' is not implemented.")


class LinalgHouseholderProduct(Op):
    node_name = "LinalgHouseholderProductBackward0"
    saves = (0, 1)
    saves_output = True

    @staticmethod
    def forward(ctx, a, tau):
        m, n = a.shape[-2:]
        eye = np.broadcast_to(np.eye(m, n, dtype=a.dtype), a.shape)
        return _lapack.apply_reflectors(a, tau, eye, range(tau.shape[-1] - 1, -1, -1))

    @staticmethod
    def backward(ctx, g):
        a, tau, _ = ctx.saved_tensors
        k = tau.shape[-1]
        if not k:
            return a.detach() * 0, None
        eye = Tensor._make(np.broadcast_to(np.eye(*a.shape[-2:], dtype=a._data.dtype), a.shape))
        ga, gt, _ = reflectors_backward(a, tau, eye, list(range(k - 1, -1, -1)), g)
        return ga, gt


def householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """The first ``n`` columns of ``H_1 ... H_k``, ``H_i = I - tau_i v_i v_i^T`` with ``v_i``
    stored below the diagonal of ``A``'s column ``i`` (LAPACK's orgqr)."""
    name = "torch.linalg.householder_product"
    if A.ndim < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if A.shape[-2] < A.shape[-1]:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if A.shape[-1] < tau.shape[-1]:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    if A.ndim - tau.ndim != 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but "
                           f"got tau.ndim equal to {tau.ndim} and input.ndim is equal to "
                           f"{A.ndim}")
    if tau.shape[:-1] != A.shape[:-2]:
        raise RuntimeError(f"{name}: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {list(tau.shape[:-1])}")
    if tau.dtype is not A.dtype:
        raise RuntimeError(f"{name}: tau dtype {_CNAME[tau.dtype.name]} does not match input "
                           f"dtype {_CNAME[A.dtype.name]}")
    _check_float("orgqr_cpu", A)
    return LinalgHouseholderProduct.apply(A, tau)


def orgqr(input: Tensor, tau: Tensor) -> Tensor:
    """``linalg.householder_product`` under LAPACK's name."""
    return householder_product(input, tau)


def _order(k: int, left: bool, transpose: bool) -> list:
    """The reflectors in the order they reach the matrix: ``Q C = H_1 (... (H_k C))``,
    ``Q^T C = H_k (... (H_1 C))``; from the right, ``C Q`` is ``(Q^T C^T)^T``."""
    up = list(range(k))
    return up if left == transpose else up[::-1]


class Ormqr(Op):
    node_name = "OrmqrBackward0"
    saves = (0, 1, 2)
    saves_output = True

    @staticmethod
    def forward(ctx, a, tau, c, left=True, transpose=False):
        ctx.left, ctx.transpose = left, transpose
        order = _order(tau.shape[-1], left, transpose)
        if left:
            return _lapack.apply_reflectors(a, tau, c, order)
        return np.swapaxes(_lapack.apply_reflectors(a, tau, np.swapaxes(c, -1, -2), order),
                           -1, -2)

    @staticmethod
    def backward(ctx, g):
        a, tau, c, _ = ctx.saved_tensors
        left, transpose = ctx.left, ctx.transpose
        k = tau.shape[-1]
        if not k:
            return None, None, g
        order = _order(k, left, transpose)
        if left:
            ga, gt, gc = reflectors_backward(a, tau, c, order, g)
        else:
            ga, gt, gc = reflectors_backward(a, tau, c.mT, order, g.mT)
            gc = gc.mT
        need = ctx.needs_input_grad
        return ga if need[0] else None, gt if need[1] else None, gc


def ormqr(input: Tensor, input2: Tensor, input3: Tensor, left: bool = True,
          transpose: bool = False) -> Tensor:
    """``op(Q) C`` (``C op(Q)`` if not ``left``), ``Q = H_1 ... H_k`` from ``geqrf``'s
    ``(input, input2)`` and ``op(Q) = Q^T`` if ``transpose``."""
    a, tau, c = input, input2, input3
    name = "torch.ormqr"
    if a.ndim < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if c.ndim < 2:
        raise RuntimeError(f"{name}: other must have at least 2 dimensions.")
    side = -2 if left else -1
    if c.shape[side] != a.shape[-2]:
        raise RuntimeError(f"{name}: other.shape[{side}] must be equal to input.shape[-2]")
    if tau.ndim < 1 or tau.shape[-1] != min(c.shape[side], a.shape[-1]):
        raise RuntimeError(f"{name}: tau.shape[-1] must be equal to min(other.shape"
                           f"[{side}], input.shape[-1])")
    if tau.ndim != a.ndim - 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but "
                           f"got tau.ndim equal to {tau.ndim} and input.ndim is equal to "
                           f"{a.ndim}")
    if c.ndim != a.ndim:
        raise RuntimeError(f"{name}: Expected other to have the same number of dimensions as "
                           f"input, but got other.ndim equal to {c.ndim} and input.ndim is "
                           f"equal to {a.ndim}")
    for what, batch in (("tau", tau.shape[:-1]), ("other", c.shape[:-2])):
        if batch != a.shape[:-2]:
            raise RuntimeError(f"{name}: Expected batch dimensions of {what} to be equal to "
                               f"input.shape[:-2], but got {list(batch)}")
    for what, t in (("tau", tau), ("other", c)):
        if t.dtype is not a.dtype:
            # torch's message has no space after the first "dtype"
            raise RuntimeError(f"{name}: Expected input and {what} to have the same dtype, "
                               f"but input has dtype{_CNAME[a.dtype.name]} and {what} has "
                               f"dtype {_CNAME[t.dtype.name]}")
    _check_float("ormqr_cpu", a)
    return Ormqr.apply(a, tau, c, left=left, transpose=transpose)
