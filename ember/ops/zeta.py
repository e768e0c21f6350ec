"""``special.zeta(x, q)``: the Hurwitz zeta function sum_k (k + q)^-x, with torch's Cephes
kernel (ATen/native/Math.h) computed in float64 as torch's CPU kernel does (its accumulate type)
and rounded to the result dtype.

The direct sum runs for at least 9 terms and until the term base passes 9, stopping early where
a term no longer changes the sum; the rest is the Euler-Maclaurin tail with up to 12 Bernoulli
terms. Both loops run over all elements at once, each element leaving at torch's test.

Only ``q`` has a derivative, ``-x * zeta(x + 1, q)``; asking for the one of ``x`` raises torch's
NotImplementedError at backward, and forward AD raises torch's NotImplementedError.
"""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor
from ember.autograd import forward_ad
from ember.autograd.engine import will_engine_execute_node
from ember.autograd.function import Op
from ember.ops._cephes import Piecewise, blockwise, check_pair, pair_dtype
from ember.ops._promote import binary_args

_MACHEP = 1.11022302462515654042e-16
# (2k)! / B_2k, k = 1..12
_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
      -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
      1.8152105401943546773e17, -7.1661652561756670113e18)


def _hurwitz(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """zeta(x, q) of flat float64 arrays."""
    pw = Piecewise(x.size, np.float64)
    pw.case(x == 1.0, np.inf)
    pw.case(x < 1.0, np.nan)
    pole = q <= 0.0
    pw.case(pole & (q == np.floor(q)), np.inf)
    pw.case(pole & (x != np.floor(x)), np.nan)
    return pw.rest(lambda i: _sum(x[i], q[i]))


def _sum(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    s, a, b = q ** -x, q.copy(), np.zeros_like(x)
    idx = np.arange(x.size)
    tails = []  # (indices, s, a, b) of the elements that go on to the tail
    i = 0
    while idx.size:
        i += 1
        a += 1.0
        b = a ** -x[idx]
        s += b
        small = (-_MACHEP * s < b) & (b < _MACHEP * s)
        out[idx[small]] = s[small]
        leave = ~small & (i >= 9) & ~(a <= 9.0)
        if leave.any():
            tails.append((idx[leave], s[leave], a[leave], b[leave]))
        keep = ~small & ~leave
        idx, s, a, b = idx[keep], s[keep], a[keep], b[keep]
    for idx, s, w, b in tails:
        out[idx] = _tail(x[idx], s, w, b)
    return out


def _tail(x: np.ndarray, s: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The Euler-Maclaurin correction after the direct sum ``s`` up to base ``w``, whose last
    term is ``b``; each element stops at the first term below MACHEP relative to the sum."""
    s = s + b * w / (x - 1.0)
    s -= 0.5 * b
    a = np.ones_like(x)
    active = np.ones(x.shape, bool)
    k = 0.0
    for coef in _A:
        a *= x + k
        b = b / w
        t = a * b / coef
        s = np.where(active, s + t, s)
        active &= ~(np.abs(t / s) < _MACHEP)
        if not active.any():
            break
        k += 1.0
        a *= x + k
        b = b / w
        k += 1.0
    return s


def _zeta(x: np.ndarray, q: np.ndarray, dtype) -> np.ndarray:
    with np.errstate(all="ignore"):  # poles and float32 overflow give torch's inf / nan
        shape = np.broadcast_shapes(x.shape, q.shape)
        x, q = (np.broadcast_to(a.astype(np.float64), shape).ravel() for a in (x, q))
        return blockwise(_hurwitz, x, q).reshape(shape).astype(dtype, copy=False)


def _no_x_grad():
    return NotImplementedError("the derivative for 'zeta' is not implemented.")


class Zeta(Op):
    node_name = "SpecialZetaBackward0"
    saves = (0, 1)
    broadcasts = True

    @staticmethod
    def forward(ctx, x, q):
        return _zeta(x, q, x.dtype)

    @staticmethod
    def backward(ctx, g):
        if ctx.needs_input_grad[0] and will_engine_execute_node(ctx.next_functions[0][0]):
            raise _no_x_grad()  # torch asks only for the gradients this backward pass needs
        x, q = ctx.saved_tensors
        return None, g * -x * zeta(x + 1.0, q)


class ZetaScalarSelf(Op):
    """zeta(number, tensor): only q has an edge."""

    node_name = "SpecialZetaBackward1"
    saves = (0,)

    @staticmethod
    def forward(ctx, q, x=2.0):
        ctx.x = x
        return _zeta(np.array(x, q.dtype), q, q.dtype)

    @staticmethod
    def backward(ctx, g):
        (q,) = ctx.saved_tensors
        return g * -ctx.x * zeta(ctx.x + 1.0, q)


class ZetaScalarOther(Op):
    """zeta(tensor, number): the only edge is x's, which has no derivative."""

    node_name = "SpecialZetaBackward2"

    @staticmethod
    def forward(ctx, x, q=1.0):
        return _zeta(x, np.array(q, x.dtype), x.dtype)

    @staticmethod
    def backward(ctx, g):
        raise _no_x_grad()


def zeta(input, other) -> Tensor:
    """The Hurwitz zeta function ``sum_k (k + other)^-input``; ``zeta(x, 1)`` is Riemann's."""
    check_pair("zeta", ("input", "other"), input, other)
    pair_dtype("zeta", input, other)  # torch's errors for dtypes without a kernel
    if forward_ad.active((input, other)):
        raise NotImplementedError(
            "Trying to use forward AD with special_zeta that does not support it because it has "
            "not been implemented yet.\nPlease file an issue to PyTorch at https://github.com/"
            "pytorch/pytorch/issues/new?template=feature-request.yml so that we can prioritize "
            "its implementation or submit a PR adding the implementation to derivatives.yaml")
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        return Zeta.apply(*binary_args(input, other, float_result=True))
    if isinstance(input, Tensor):
        x, _ = binary_args(input, other, float_result=True)
        return ZetaScalarOther.apply(x, q=other)
    q, _ = binary_args(other, input, float_result=True)
    return ZetaScalarSelf.apply(q, x=input)
