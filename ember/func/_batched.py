"""BatchedTensor: what ``vmap``'s function sees, one tensor standing for a whole batch.

A BatchedTensor of level ``L`` wraps a *physical* tensor whose dim 0 is the batch and whose
other dims are the *logical* tensor the function thinks it holds (torch's BatchedTensor idea,
with the batch dim always kept in front). ``shape``, ``dtype``, ``ndim`` report the logical
tensor. Every op reaches ``Op.apply``, whose one vmap check sends it here: the op's batching
rule (``_batching_rules``) runs ordinary ember ops on the physical tensors and the result is
wrapped again. So autograd records the physical computation, nested vmaps recurse (a rule's
ops may meet BatchedTensors of an outer level), and backward formulas need no rules at all.

The ops that ember computes on arrays outside ``Op.apply`` (comparisons, logical ops,
``argmax`` along a dim, a mask's ``np.broadcast_to``) meet the BatchedTensor's ``_Meta``
through NumPy's protocols: they run on the physical array and ``Tensor._make`` of the result
is a BatchedTensor again. Anything else that needs the raw array (``item()``, data-dependent
Python, in-place writes) raises ``Unbatchable``; ``vmap`` then runs the function once per
sample instead, as ember did before it had batching rules.
"""

from __future__ import annotations

from ember._tensor import Tensor
from ember.autograd import function

LEVELS: list = []  # (level, batch size) of the vmaps running batched, innermost last


class Unbatchable(Exception):
    """Raised where a batched run cannot go on; vmap falls back to its per-sample loop."""


class _Meta:
    """A BatchedTensor's ``_data``: the logical shape and dtype that ember's Python-level
    checks read (``x._data.shape``), and an error for anything that reads the values."""

    __slots__ = ("shape", "dtype", "ndim", "size", "itemsize", "nbytes", "_physical", "_level")

    def __init__(self, physical, shape: tuple, dtype, level: int) -> None:
        self._physical, self._level = physical, level
        self.shape, self.dtype, self.ndim = shape, dtype, len(shape)
        n = 1
        for s in shape:
            n *= s
        self.size, self.itemsize, self.nbytes = n, dtype.itemsize, n * dtype.itemsize

    def reshape(self, shape, **kw) -> None:
        """``reshape``'s "is a view possible" probe, asked of the physical array (ValueError
        when not: reshape then copies first, as it does for a plain tensor)."""
        import numpy as np

        np.reshape(self._physical, (self._physical.shape[0], *shape), **kw)

    def astype(self, dtype, copy: bool = True) -> _Meta:
        """The array an op takes as a keyword argument (nll_loss's target): still batched,
        so ``Op.apply``'s hook finds it and the rule gets the physical array."""
        p = self._physical.astype(dtype, copy=copy)
        return _Meta(p, self.shape, p.dtype, self._level)

    def __array_ufunc__(self, ufunc, method: str, *inputs, **kwargs):
        """A NumPy ufunc called on the arrays of BatchedTensors (the comparisons and logical
        ops, which ember computes on ``_data`` outside ``Op.apply``): run on the physical
        arrays, aligned as the batching rules align tensors, and batched again, so that
        ``Tensor._make`` of the result is a BatchedTensor."""
        level = max(x._level for x in inputs if type(x) is _Meta)
        if method != "__call__" or "out" in kwargs or any(
                type(x) is _Meta and (x._level != level or type(x._physical) is _Meta)
                for x in inputs):
            raise Unbatchable(f"NumPy {ufunc.__name__}.{method} on a BatchedTensor's array")
        rank = max(x.ndim if hasattr(x, "ndim") else 0 for x in inputs)
        phys = [x._physical.reshape((x._physical.shape[0],) + (1,) * (rank - x.ndim)
                                    + x.shape) if type(x) is _Meta else x for x in inputs]
        out = ufunc(*phys, **kwargs)
        if type(out) is tuple:
            return tuple(_Meta(o, o.shape[1:], o.dtype, level) for o in out)
        return _Meta(out, out.shape[1:], out.dtype, level)

    def __array_function__(self, func, types, args, kwargs):
        """NumPy functions on a BatchedTensor's array: ``np.broadcast_to`` (a mask broadcast
        to its tensor's shape) per sample; the others as NumPy runs them (through the methods
        above: reshape's probe, argmax; anything else reads the values)."""
        import numpy as np

        if func is np.broadcast_to and args[0] is self and type(self._physical) is not _Meta:
            shape = tuple(args[1] if len(args) > 1 else kwargs["shape"])
            p = self._physical
            p = p.reshape((p.shape[0],) + (1,) * (len(shape) - self.ndim) + self.shape)
            p = np.broadcast_to(p, (p.shape[0], *shape))
            return _Meta(p, shape, p.dtype, self._level)
        return func._implementation(*args, **kwargs)

    @property
    def flags(self):
        """The physical array's: C-contiguous with the batch in front is C-contiguous for
        each sample (``contiguous()`` keeps a batched tensor that is)."""
        return self._physical.flags

    def _arg_extreme(self, fn, axis, out, keepdims):
        if axis is None or out is not None or type(self._physical) is _Meta:
            raise Unbatchable("a flat argmax / argmin of a BatchedTensor's array")
        p = fn(self._physical, axis=axis % self.ndim + 1, keepdims=keepdims)
        return _Meta(p, p.shape[1:], p.dtype, self._level)

    def argmax(self, axis=None, out=None, *, keepdims=False) -> _Meta:
        """``np.argmax`` along a dim, per sample (argmax / argmin with ``dim``)."""
        import numpy as np

        return self._arg_extreme(np.argmax, axis, out, keepdims)

    def argmin(self, axis=None, out=None, *, keepdims=False) -> _Meta:
        import numpy as np

        return self._arg_extreme(np.argmin, axis, out, keepdims)

    def _values(self, *args, **kwargs):
        raise Unbatchable("the function reads a BatchedTensor's values")

    __array__ = __getitem__ = __setitem__ = __iter__ = __len__ = __bool__ = _values
    __float__ = __int__ = __index__ = _values

    def __getattr__(self, name: str):
        raise Unbatchable(f"the function reads a BatchedTensor's array (.{name})")


class BatchedTensor(Tensor):
    """A logical tensor of one vmap level, backed by a physical tensor with the batch first."""

    __slots__ = ("_value", "_level", "_meta")
    _data = property(lambda self: self._meta)
    # Always "requires grad" to ember's Python-level fast paths (views, x[i], reshape), which
    # skip Op.apply for tensors that need no graph: a BatchedTensor must meet its batching
    # rule there. Writes (an int result's ``_rg = False``) are ignored.
    _rg = property(lambda self: True, lambda self, value: None)

    # shape, size(), ndim, numel(), dtype: Tensor's own, reading the logical _Meta

    @property
    def device(self):
        return self._value.device

    @property
    def is_cuda(self) -> bool:
        return self._value.is_cuda

    @property
    def is_cpu(self) -> bool:
        return self._value.is_cpu

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    @property
    def requires_grad(self) -> bool:
        return self._value.requires_grad

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        self._value.requires_grad_(requires_grad)
        return self

    @property
    def grad_fn(self):
        return self._value.grad_fn

    @property
    def is_leaf(self) -> bool:
        return self._value.is_leaf

    def detach(self) -> Tensor:
        return wrap(self._value.detach(), self._level)

    def __repr__(self, *, tensor_contents=None) -> str:
        return f"BatchedTensor(lvl={self._level}, bdim=0, value=\n{self._value!r}\n)"


def wrap(value: Tensor, level: int) -> BatchedTensor:
    t = object.__new__(BatchedTensor)
    t._value, t._level = value, level
    t._meta = _Meta(value._data, tuple(value.shape[1:]), value._data.dtype, level)
    t._grad_fn, t._grad, t._vc = None, None, [0]
    t._base, t._output_nr, t._aux = None, 0, None
    return t


def level_of(t) -> int:
    return t._level if type(t) is BatchedTensor else 0


def physical(t, level: int, size: int):
    """``t``'s physical tensor at ``level``: batched ones unwrapped, others expanded."""
    if type(t) is BatchedTensor and t._level == level:
        return t._value
    return t.unsqueeze(0).expand(size, *t.shape)


def dispatch(cls, inputs: tuple, kw: dict):
    """``Op.apply``'s vmap hook: the op through its batching rule, or None (no batched input)."""
    from ember.func._batching_rules import apply_rule

    level = 0
    for t in inputs:
        if type(t) is BatchedTensor and t._level > level:
            level = t._level
    for t in kw.values():
        if type(t) in (BatchedTensor, _Meta) and t._level > level:
            level = t._level
    if not level:
        return None
    size = next(s for lvl, s in LEVELS if lvl == level)
    vals = [t._value if type(t) is BatchedTensor and t._level == level else t for t in inputs]
    bd = [type(t) is BatchedTensor and t._level == level for t in inputs]
    kwb = {k: type(v) in (BatchedTensor, _Meta) and v._level == level for k, v in kw.items()}
    kw = {k: (v._value if type(v) is BatchedTensor else v._physical) if kwb[k] else v
          for k, v in kw.items()}
    out = apply_rule(cls, vals, bd, kw, kwb, size)
    if type(out) is tuple:
        return tuple(wrap(o, level) for o in out)
    return wrap(out, level)


class batched_level:
    """The extent of one batched vmap: pushes its level and installs the Op.apply hook."""

    def __init__(self, size: int) -> None:
        self.size = size

    def __enter__(self) -> int:
        self.level = (LEVELS[-1][0] if LEVELS else 0) + 1
        LEVELS.append((self.level, self.size))
        function.VMAP[0] = dispatch
        return self.level

    def __exit__(self, *exc) -> None:
        LEVELS.pop()
        if not LEVELS:
            function.VMAP[0] = None


def _full_physical(t):
    """``t`` as a plain tensor with one leading dim per running vmap level (outermost first):
    batched levels unwrapped, the others expanded (ops at the lower levels)."""
    for lvl, size in reversed(LEVELS):
        t = t._value if level_of(t) == lvl else t.unsqueeze(0).expand(size, *t.shape)
    return t


def _rewrap(p):
    for lvl, _ in LEVELS:
        p = wrap(p, lvl)
    return p


def _wrapped_at_every_level(t) -> bool:
    for lvl, _ in reversed(LEVELS):
        if level_of(t) != lvl:
            return False
        t = t._value
    return True


def grad_input(x):
    """``grad``'s fresh handle on ``x`` inside batched vmaps: per-sample gradients need an
    input with a physical dim for every level (an unbatched one is expanded, a stride-0
    view, first); the gradient of the summed losses with respect to it is then one slice per
    sample."""
    if not isinstance(x, Tensor):
        return None
    p = _full_physical(x)
    return _rewrap(p.view_as(p) if p.requires_grad else p.detach().requires_grad_(
        p.dtype.is_floating_point))


def batched_grads(outputs, inputs, cotangents) -> list | None:
    """``_grads`` inside batched vmaps: autograd on the physical tensors (samples never mix,
    so the gradient of the summed outputs is per sample)."""
    from ember._creation import zeros_like
    from ember.autograd import grad

    if not LEVELS:
        return None
    if not all(_wrapped_at_every_level(x) for x in inputs):
        # an input from outside the vmap (vmap over a vjp_fn): its per-sample gradients have
        # no physical tensor to land on
        raise Unbatchable("a gradient with respect to a tensor from outside the vmap")
    xs = [_full_physical(x) for x in inputs]
    pairs = [(_full_physical(o), _full_physical(c))
             for o, c in zip(outputs, cotangents) if o.requires_grad]
    if not pairs:
        return [_rewrap(zeros_like(x)) for x in xs]
    gs = grad([o for o, _ in pairs], xs, [c for _, c in pairs], retain_graph=True,
              create_graph=True, allow_unused=True)
    return [_rewrap(zeros_like(x) if g is None else g) for g, x in zip(gs, xs)]


def unwrap_output(t, level: int, size: int, out_dim: int):
    """A batched vmap's result: the physical tensor with its batch dim moved to ``out_dim``
    (a result that does not depend on the batch is expanded, as torch does)."""
    p = physical(t, level, size)
    return p if out_dim == 0 else p.movedim(0, out_dim)
