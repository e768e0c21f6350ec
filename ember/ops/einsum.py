"""einsum: forward by ``np.einsum(optimize=True)`` (contractions land in BLAS).

As in torch (without opt_einsum), more than two operands are contracted pairwise from the left,
each step keeping only the subscripts still needed; so each node has one or two operands and
saves what torch's bmm / mul save: each operand of a pair for the other's gradient.
Each operand's gradient is itself an einsum of the upstream gradient with the other operand,
so einsum is differentiable to any order. Repeated subscripts (diagonals, ``'ii'``) get their
gradient through an identity-matrix operand; subscripts summed over one operand alone come
back as a broadcast.
"""

from __future__ import annotations

import string

import numpy as np

from ember._tensor import Tensor
from ember.autograd.function import Op

_LETTERS = string.ascii_uppercase + string.ascii_lowercase


def _fresh(used: set) -> str:
    c = next(ch for ch in _LETTERS if ch not in used)
    used.add(c)
    return c


def _parse(equation: str, shapes: list) -> tuple[list, str]:
    """Explicit per-operand subscripts (ellipsis replaced by letters) and output subscript."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) > len(shapes):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the "
                           "equation")
    if len(terms) < len(shapes):
        raise RuntimeError("einsum(): more operands were provided than specified in the "
                           "equation")
    used = set(eq) - {".", ",", "-", ">"}
    n_ell = max((len(s) - len(t.replace("...", "")) for t, s in zip(terms, shapes)
                 if "..." in t), default=0)
    ell = "".join(_fresh(used) for _ in range(n_ell))
    subs = []
    for i, (t, shape) in enumerate(zip(terms, shapes)):
        if "..." in t:
            k = len(shape) - len(t.replace("...", ""))
            t = t.replace("...", ell[n_ell - k:] if k else "")
        elif len(t) != len(shape):
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(t)}) "
                               f"does not match the number of dimensions ({len(shape)}) for "
                               f"operand {i} and no ellipsis was given")
        subs.append(t)
    if arrow:
        out = rhs.replace("...", ell)
    else:
        counts = {c: "".join(subs).count(c) for c in "".join(subs)}
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    _check_sizes(subs, shapes, out)
    return subs, out


def _check_sizes(subs: list, shapes: list, out: str) -> None:
    seen: dict = {}
    for i, (t, shape) in enumerate(zip(subs, shapes)):
        for c, n in zip(t, shape):
            prev = seen.get(c)
            if prev is not None and n != prev and n != 1 and prev != 1:
                raise RuntimeError(f"einsum(): subscript {c} has size {n} for operand {i} which "
                                   f"does not broadcast with previously seen size {prev}")
            seen[c] = n if prev in (None, 1) else prev
    for c in out:
        if c not in seen:
            raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation "
                               "for any input operand")


class Einsum(Op):
    """A one-operand einsum (sums, diagonals, permutations): its gradient needs nothing saved."""

    node_name = "EinsumBackward0"
    broadcasts = True  # size-1 dims broadcast against other operands; grads are summed back

    @staticmethod
    def forward(ctx, *arrays, subs=(), out=""):
        ctx.subs, ctx.out = subs, out
        ctx.shapes = [a.shape for a in arrays]
        eq = ",".join(subs) + "->" + out
        return np.einsum(eq, *arrays, optimize=True)

    @staticmethod
    def backward(ctx, g):
        ops = ctx.saved_tensors
        return tuple(_operand_grad(ctx, g, ops, i) if need else None
                     for i, need in enumerate(ctx.needs_input_grad))


def _operand_grad(ctx, g: Tensor, ops, i: int) -> Tensor:
    subs, shape = ctx.subs, ctx.shapes[i]
    used = set("".join(subs) + ctx.out)
    target, terms, tensors, seen = "", [ctx.out], [g], set()
    for c, n in zip(subs[i], shape):
        if c in seen:  # a diagonal: route the gradient through an identity matrix
            c2 = _fresh(used)
            terms.append(c + c2)
            tensors.append(Tensor._make(np.eye(n, dtype=g._data.dtype)))
            c = c2
        seen.add(c)
        target += c
    for j, (t, op) in enumerate(zip(subs, ops)):
        if j != i:
            terms.append(t)
            tensors.append(op)
    present = set("".join(terms))
    kept = "".join(c for c in target if c in present)
    r = _einsum(terms, kept, tensors)
    if kept != target:  # letters summed over this operand alone: the gradient is broadcast
        r = r.reshape([n if c in present else 1 for c, n in zip(target, shape)]).expand(shape)
    return r


class EinsumPair(Einsum):
    """A two-operand einsum: each operand is saved for the other's gradient."""

    node_name = "EinsumBackward0"
    saves = (0, 1)
    save_for = ((1,), (0,))


def _einsum(subs: list, out: str, tensors) -> Tensor:
    if len(tensors) > 2:  # torch's order: the first two, then the result with the next
        rest = "".join(subs[2:]) + out
        keep = "".join(dict.fromkeys(c for c in subs[0] + subs[1] if c in rest))
        first = _einsum(subs[:2], keep, tensors[:2])
        return _einsum([keep, *subs[2:]], out, [first, *tensors[2:]])
    op = EinsumPair if len(tensors) == 2 else Einsum
    return op.apply(*tensors, subs=tuple(subs), out=out)


def einsum(equation: str, *operands) -> Tensor:
    """Sum of products over the subscripts of ``equation`` (``'ij,jk->ik'`` is a matmul)."""
    if len(operands) == 1 and isinstance(operands[0], list | tuple):
        operands = tuple(operands[0])
    dt = operands[0]._data.dtype if operands else None
    for t in operands[1:]:
        if t._data.dtype != dt:
            from ember.ops.linalg import _cap

            raise RuntimeError(f"expected scalar type {_cap(operands[0])} but found {_cap(t)}")
    subs, out = _parse(equation, [t.shape for t in operands])
    return _einsum(subs, out, operands)


FUNCTIONS = {"einsum": einsum}
