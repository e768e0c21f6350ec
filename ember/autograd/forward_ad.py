"""Forward-mode AD (``torch.autograd.forward_ad``): dual tensors carry a tangent, and every op
maps its inputs' tangents to its outputs' (the Jacobian-vector product).

Where torch declares a forward formula per op in derivatives.yaml, ember derives every op's
from its backward formula, the way torch's ``auto_linear`` does: the vector-Jacobian product
``g -> J^T g`` is linear in ``g``, so ``J t`` is the gradient with respect to ``g`` of
``<J^T g, t>`` (at any ``g``: zeros). Backward formulas are ember ops, so this is two
reverse passes over the op alone, and it works for every differentiable op, forward-over-
reverse (Hessian-vector products) included. The cost is about three times the op's.

    >>> with forward_ad.dual_level():
    ...     y = f(forward_ad.make_dual(x, v))
    ...     jvp = forward_ad.unpack_dual(y).tangent
"""

from __future__ import annotations

import itertools
import weakref
from typing import NamedTuple

from ember.autograd.grad_mode import STATE, _DecoratorContextManager

LEVEL: list = [None]  # the dual level in use (one at a time, as in torch), or None
# id -> tensor holding a tangent at that level (not a WeakSet: Tensor's == is elementwise)
_DUALS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_levels = itertools.count()


def enter_dual_level() -> int:
    """Start a dual level; tangents made in it are dropped when it exits."""
    if LEVEL[0] is not None:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    LEVEL[0] = next(_levels)
    return LEVEL[0]


def exit_dual_level(*, level: int | None = None) -> None:
    if LEVEL[0] is None or level is not None and level != LEVEL[0]:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that "
                           "was created. This is not supported.")
    for t in list(_DUALS.values()):
        t._aux.tangent = None
    _DUALS.clear()
    LEVEL[0] = None


class dual_level(_DecoratorContextManager):  # noqa: N801 - torch's name
    """Context manager (and decorator) for a dual level."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc) -> None:
        exit_dual_level()


class UnpackedDualTensor(NamedTuple):
    primal: object
    tangent: object


def _check_level(level) -> None:
    if LEVEL[0] is None:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, "
                           "make sure to enter_dual_level() first.")
    if level is not None and level != LEVEL[0]:
        raise RuntimeError(f"Invalid dual level {level}: the current level is {LEVEL[0]}")


def tangent_of(t):
    """``t``'s tangent at the current level, or None."""
    aux = t._aux
    return getattr(aux, "tangent", None) if aux is not None else None


def set_tangent(t, tangent) -> None:
    t._get_aux().tangent = tangent
    _DUALS[id(t)] = t


def make_dual(tensor, tangent, *, level: int | None = None):
    """A view of ``tensor`` whose tangent is ``tangent`` (kept by reference, as torch)."""
    from ember._tensor import Tensor

    _check_level(level)
    if not (isinstance(tensor, Tensor) and isinstance(tangent, Tensor)):
        raise TypeError("make_dual expects Tensors")
    if not tensor.dtype.is_floating_point:
        raise ValueError(f"Expected primal to be floating point or complex, but got: "
                         f"{str(tensor.dtype).replace('ember.', 'torch.')}")
    if not tangent.dtype.is_floating_point:
        raise ValueError(f"Expected tangent to be floating point or complex, but got: "
                         f"{str(tangent.dtype).replace('ember.', 'torch.')}")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError("Trying to set a forward gradient that has a different size than "
                           "that of the original Tensor, this is not supported. Tensor is of "
                           f"size {list(tensor.shape)} while the given forward gradient is of "
                           f"size {list(tangent.shape)}.")
    out = tensor.view_as(tensor)
    set_tangent(out, tangent)
    return out


def unpack_dual(tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """The primal (a view of ``tensor`` without a tangent) and the tangent (or None)."""
    tangent = tangent_of(tensor) if LEVEL[0] is not None else None
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    return UnpackedDualTensor(tensor.view_as(tensor), tangent)


def after_inplace(x, src, r) -> None:
    """``x`` was overwritten in place with ``r`` (computed from ``src``, which stood for x):
    x's tangent becomes r's, written into x's tangent tensor when it has one (torch updates
    tangents in place, so a tangent shared with another dual changes there too)."""
    if LEVEL[0] is None:
        return
    new = tangent_of(r)
    if new is None:
        return
    old = tangent_of(x)
    if old is None or old is new:
        set_tangent(x, new)
    else:
        old._data[...] = new._data
        old._vc[0] += 1


def before_inplace(x, src) -> None:
    """``src`` stands for ``x`` in an in-place op: it carries x's tangent."""
    if LEVEL[0] is not None and tangent_of(x) is not None:
        set_tangent(src, tangent_of(x))


_BUSY = [False]  # computing tangents: the ops run for it propagate none themselves


def active(inputs) -> bool:
    """Whether an op on ``inputs`` must propagate tangents (one cheap check when off)."""
    from ember._tensor import Tensor

    return (LEVEL[0] is not None and not _BUSY[0]
            and any(isinstance(t, Tensor) and tangent_of(t) is not None for t in inputs))


def propagate(cls, inputs: tuple, kw: dict, outputs) -> None:
    """Give the outputs of op ``cls`` (already computed) their tangents: ``J t`` from the
    op's vector-Jacobian product, as the module docstring says."""
    from ember._creation import zeros_like
    from ember._tensor import Tensor
    from ember.autograd import grad
    from ember.autograd.grad_mode import enable_grad

    outs = outputs if isinstance(outputs, tuple) else (outputs,)
    floats = [o for o in outs if isinstance(o, Tensor) and o.dtype.is_floating_point]
    pairs = [(i, t, tangent_of(t)) for i, t in enumerate(inputs)
             if isinstance(t, Tensor) and tangent_of(t) is not None]
    if not floats or not pairs:
        return
    keep = STATE.enabled and any(t.requires_grad or v.requires_grad for _, t, v in pairs)
    _BUSY[0] = True
    try:
        with enable_grad():
            # A fresh handle per position: an input used twice (x * x) gets its two partial
            # derivatives apart; view_as keeps the input's own graph (reverse-over-forward).
            ins = [t if not isinstance(t, Tensor) or not t.dtype.is_floating_point
                   else t.view_as(t) if t.requires_grad else t.detach().requires_grad_()
                   for t in inputs]
            ys = cls.apply(*ins, **kw)
            ys = [y for y in (ys if isinstance(ys, tuple) else (ys,))
                  if isinstance(y, Tensor) and y.dtype.is_floating_point]
            gs = [zeros_like(y).requires_grad_() for y in ys]
            used = [(i, v) for i, _, v in pairs if ins[i].requires_grad]
            vjps = grad([y for y in ys if y.requires_grad],
                        [ins[i] for i, _ in used],
                        [g for y, g in zip(ys, gs) if y.requires_grad],
                        create_graph=True, allow_unused=True)
            terms = [(p * v).sum() for p, (_, v) in zip(vjps, used) if p is not None]
            if not terms:
                return
            total = terms[0]
            for term in terms[1:]:
                total = total + term
            dots = grad(total, gs, create_graph=keep, allow_unused=True)
    finally:
        _BUSY[0] = False
    for o, d in zip(floats, dots):
        set_tangent(o, d if d is not None else zeros_like(o))
        node = o._grad_fn
        if node is not None:  # a backward that reads this output sees its tangent too
            node.__dict__.setdefault("_out_tangents", {})[o._output_nr] = tangent_of(o)


__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level",
           "make_dual", "unpack_dual"]
