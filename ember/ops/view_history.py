"""A view's autograd history after in-place writes to its memory (torch's view + in-place rules).

A view shares its base's version counter. When the base or another view of it is written in
place under autograd, the base's history is rebased onto the in-place op's node, and every view
of it has to see that: torch regenerates a view's ``grad_fn`` (an ``AsStridedBackward0`` over
the base's new history) when the view is next used and its version differs from the one its
``grad_fn`` was made at. ember does the same in ``sync_view``, called where a view's history is
read (recording an op, the roots of a backward pass, ``grad_fn``, in-place ops).

A view's ``requires_grad`` is kept current eagerly instead: a view made from a base that does not
require grad registers with the base (``_Aux.add_view``), and ``rebase`` flags those views when
the base starts to require grad, so that every decision made on ``_rg`` sees it.

Where a view sits in its base is found from memory, not from the chain of view ops: ``view_index``
gives, for each element of the view, the flat (C-order) index of the base element it aliases,
whatever the strides of either. Writes through views and regenerated views are gathers and
scatters at those indices.
"""

from __future__ import annotations

import weakref

import numpy as np

from ember._creation import zeros
from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.autograd.grad_mode import STATE
from ember.ops.indexing import IndexGrad


def _offsets(a: np.ndarray, itemsize: int) -> np.ndarray:
    """Each element's memory offset from ``a``'s first element, in units of ``itemsize``."""
    off = np.zeros(a.shape, np.int64)
    for k, (n, s) in enumerate(zip(a.shape, a.strides)):
        off = off + (np.arange(n, dtype=np.int64) * (s // itemsize)).reshape(
            (n,) + (1,) * (a.ndim - k - 1))
    return off


def view_index(view: np.ndarray, base: np.ndarray) -> np.ndarray | None:
    """Flat base indices of ``view``'s elements (shaped like ``view``), or None if ``view`` does
    not lie on elements of ``base``."""
    isz = base.itemsize
    start = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    if view.dtype != base.dtype or start % isz or any(s % isz for s in view.strides):
        return None
    b = _offsets(base, isz).reshape(-1)
    v = _offsets(view, isz) + start // isz
    if not v.size:
        return v
    order = np.argsort(b, kind="stable")
    sb = b[order]
    pos = np.minimum(np.searchsorted(sb, v), sb.size - 1) if sb.size else None
    if pos is None or not np.array_equal(sb[pos], v):
        return None
    return order[pos]


def index_key(index: np.ndarray, shape: tuple) -> tuple:
    """An index key (steps, advanced index) of ember's indexing ops that picks the elements at
    flat indices ``index`` of an array of ``shape`` (a 0-d array is indexed through a new dim)."""
    if not shape:
        return ((2, 0, None),), (index,)
    return (), np.unravel_index(index, shape)


class ViewOfBase(Op):
    """A view regenerated over its base's current history (torch's AsStridedBackward0): the
    forward is the view's own memory, the backward scatters into the base's shape."""

    node_name = "AsStridedBackward0"

    @staticmethod
    def forward(ctx, base, view=None, key=None, through=False):
        ctx.shape, ctx.key, ctx.through = base.shape, key, through
        return view

    @staticmethod
    def backward(ctx, g):
        # torch's as_strided_backward gives an empty view zeros with no history; ``through``
        # (the old value of a view written in place: torch's CopySlices) keeps the history.
        if not g._data.size and not ctx.through:
            return zeros(ctx.shape, dtype=g.dtype)
        return IndexGrad.apply(g, key=ctx.key, shape=ctx.shape, accumulate=True)


def multi_view_error(t: Tensor, indirect: bool = True) -> RuntimeError:
    """torch's error for an in-place write that reaches an output of split/unbind/chunk (or a
    view of one)."""
    what = "its base or another view of its base has been" if indirect else "is being"
    if t._grad_fn is None:
        head = f"A view was created in no_grad mode and {what} modified inplace with grad mode " \
               "enabled."
    else:
        head = f"Output {t._output_nr} of {t._grad_fn.name()} is a view and {what} modified " \
               "inplace."
    return RuntimeError(head + " This view is the output of a function that returns multiple "
                        "views. Such functions do not allow the output views to be modified "
                        "inplace. You should replace the inplace operation by an out-of-place "
                        "one.")


def sync_view(t: Tensor) -> None:
    """Regenerate the history of view ``t`` if its memory was written since it was last made."""
    base = t._base
    if t._vv is None or (t._grad_fn is None and not base._rg):
        return
    if t._aux is not None and t._aux.multi_view:
        raise multi_view_error(t)
    index = view_index(t._data, base._data)
    if index is None:  # the base's storage was replaced (x.data = ...): keep the old history
        t._vv = t._vc[0]
        return
    prev = STATE.enabled
    STATE.enabled = True
    try:
        r = ViewOfBase.apply(base, view=t._data, key=index_key(index, base._data.shape))
    finally:
        STATE.enabled = prev
    old = t._grad_fn, t._output_nr
    t._grad_fn, t._output_nr, t._rg = r._grad_fn, 0, True
    t._vv = t._vc[0]
    _move_retain_grad(t, *old)


def _move_retain_grad(t: Tensor, old, old_nr: int) -> None:
    """A tensor's retain_grad follows it to its new history (torch moves that hook, and only
    that one: hooks registered on the old value stay with it)."""
    hooks = old._retain_hooks if old is not None else None
    if t._aux is None or not t._aux.retains_grad or not hooks or t._grad_fn is None:
        return
    hooks.pop(old_nr, None)
    node = t._grad_fn
    if node._retain_hooks is None:
        node._retain_hooks = {}
    node._retain_hooks[t._output_nr] = weakref.ref(t)


def rebase(x: Tensor, node, output_nr: int = 0, requires_grad: bool = True) -> None:
    """Give ``x`` (not a view) the history ``node``; if it starts to require grad, so do the
    views made of it while it did not."""
    was, old = x._rg, (x._grad_fn, x._output_nr)
    x._grad_fn, x._output_nr, x._rg = node, output_nr, requires_grad
    _move_retain_grad(x, *old)
    aux = x._aux
    if not was and x._rg and aux is not None and aux.views:
        for ref in aux.views:
            v = ref()
            if v is not None and v._base is x and v._vv is not None:
                v._rg = True
        aux.views = None
