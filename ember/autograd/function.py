"""Function: the class every ember op is, and the one users subclass for custom ops.

A subclass's ``forward(ctx, ...)`` computes the result; ``backward(ctx, *grads)`` returns one
gradient per forward input. Each subclass gets a node class named ``<Name>Backward`` (or the
torch name given as ``node_name``); an instance of it is both the ctx and the graph node, as in
torch. Built-in ops derive from ``Op``: their forward runs on raw arrays for speed, their backward
on ember Tensors so that it is itself differentiable.
"""

from __future__ import annotations

import functools

from ember._backend import _Cuda, gpu_gaps, one_device
from ember._iter_layout import iterator_layout
from ember.autograd import forward_ad, graph
from ember.autograd.anomaly_mode import forward_stack
from ember.autograd.grad_mode import STATE, no_grad
from ember.autograd.graph import FREED, LOCAL, OUT, Node, grad_accumulator

UNSAVED = (None, 0)  # a saved-tensor slot left empty: no gradient formula that reads it runs
PROFILER: list = [None]  # the autograd.profiler recording in progress (Op.apply reports to it)
VMAP: list = [None]  # while ember.func.vmap runs batched: its dispatcher (None: no batched input)


class _Scratch:
    """ctx stand-in for ops run without grad: accepts attributes, saves nothing."""

    needs_input_grad = ()

    def save_extra(self, *arrays, for_=None) -> None:
        pass


class FunctionCtx:
    """The ``ctx`` API: save tensors and flags in forward, read them in backward."""

    __slots__ = ()

    def save_for_backward(self, *tensors) -> None:
        from ember._tensor import Tensor

        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError("save_for_backward can only save variables, but argument "
                                f"{i} is of type {type(t).__name__}")
        self.to_save = tensors

    def save_for_forward(self, *tensors) -> None:
        self.saved_for_forward = tensors

    def mark_dirty(self, *tensors) -> None:
        self.dirty_tensors = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        self.non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = value

    @property
    def saved_tensors(self) -> tuple:
        return self._unpack_saved()


class BackwardCFunction(FunctionCtx, Node):
    """Node of a user Function: calls the Function's backward with this node as ctx."""

    _forward_cls = None
    materialize_grads = True

    def __repr__(self) -> str:
        return f"<ember.autograd.function.{type(self).__name__} object at {hex(id(self))}>"

    def apply(self, *grads):
        return self._forward_cls.backward(self, *grads)

    def _call(self, grads: list) -> tuple:
        from ember._creation import zeros

        if self.materialize_grads:
            grads = [
                zeros(shape, dtype=dt) if g is None else g
                for g, (shape, dt) in zip(grads, self._out_meta)
            ]
        out = self._forward_cls.backward(self, *grads)
        if not isinstance(out, tuple):
            out = (out,)
        positions = self._arg_edges
        name = type(self).__name__
        if len(out) < len(positions) or (len(out) > len(positions) and any(
                g is not None for g in out[len(positions):])):
            raise RuntimeError(
                f"function {name} returned an incorrect number of gradients (expected "
                f"{len(positions)}, got {len(out)})"
            )
        return tuple(_check_grad(name, i, out[i], is_tensor, self._in_dtypes)
                     for i, is_tensor in enumerate(positions) if is_tensor or out[i] is not None)


def _check_grad(name: str, i: int, g, is_tensor: bool, dtypes: dict):
    """A user backward's gradient for forward input ``i``: validated, cast as torch does."""
    from ember._tensor import Tensor

    if g is None:
        return None
    if not isinstance(g, Tensor):
        raise RuntimeError(f"expected Variable or None (got {type(g).__name__})")
    if not is_tensor:
        raise RuntimeError(f"function {name} returned a gradient different than None at "
                           f"position {i + 1}, but the corresponding forward input was not a "
                           "Variable")
    dt = dtypes[i]
    return g if g.dtype is dt else g.to(dt)


class FunctionMeta(type):
    """Gives each Function subclass its backward node class, as torch's metaclass does."""

    def __init__(cls, name, bases, attrs) -> None:
        super().__init__(name, bases, attrs)
        node_name = attrs.get("node_name") or name + "Backward"
        base = getattr(cls, "_node_base", None) or BackwardCFunction
        cls._backward_cls = type(node_name, (base,), {"_forward_cls": cls,
                                                     "__module__": cls.__module__})


class Function(metaclass=FunctionMeta):
    """Base class for custom differentiable operations; call them with ``.apply``."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not overridden.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        from ember._tensor import Tensor

        if forward_ad.LEVEL[0] is not None and forward_ad.active(args) \
                and cls.jvp is Function.jvp:
            raise NotImplementedError("You must implement the jvp function for custom "
                                      "autograd.Function to use it with forward mode AD.")
        node = cls._backward_cls.__new__(cls._backward_cls)
        is_tensor = tuple(isinstance(a, Tensor) for a in args)
        tensors = [a for a in args if isinstance(a, Tensor)]
        track = STATE.enabled and any(t._rg for t in tensors)
        node.needs_input_grad = tuple(
            track and isinstance(a, Tensor) and a._rg for a in args)
        node._arg_edges = is_tensor
        node._init_node(_edges(tensors) if track else ())
        node.to_save = ()
        custom_setup = cls.setup_context is not Function.setup_context
        with no_grad():
            if custom_setup:
                out = cls.forward(*args, **kwargs)
                cls.setup_context(node, args, out)
            else:
                out = cls.forward(node, *args, **kwargs)
        single = not isinstance(out, tuple)
        outs = (out,) if single else out
        outs = tuple(_wrap_output(node, o, i, track, args) for i, o in enumerate(outs))
        if track:
            node._out_meta = [(o.shape, o.dtype) if isinstance(o, Tensor) else ((), None)
                              for o in outs]
            node._saved = _save(node.to_save, outs)
            if LOCAL.saved_hooks and node._saved:
                node._saved = graph.pack_saved(node, node._saved)
            node._shapes = tuple(t.shape for t in tensors)  # user grads are checked/summed
            node._in_dtypes = {i: a.dtype for i, a in enumerate(args) if isinstance(a, Tensor)}
            if graph.ANOMALY[0]:
                node._anomaly = forward_stack()
        else:
            node._saved = _save(node.to_save, outs)
        del node.to_save
        if forward_ad.LEVEL[0] is not None and forward_ad.active(args):
            _custom_jvp(cls, node, args, outs)
        return outs[0] if single else outs


def _custom_jvp(cls, ctx, args, outs) -> None:
    """A custom Function's tangents: its ``jvp(ctx, *input tangents)``, as torch calls it."""
    from ember._tensor import Tensor

    tangents = [forward_ad.tangent_of(a) if isinstance(a, Tensor) else None for a in args]
    res = cls.jvp(ctx, *tangents)
    res = res if isinstance(res, tuple) else (res,)
    for o, t in zip(outs, res):
        if isinstance(o, Tensor) and t is not None:
            forward_ad.set_tangent(o, t)


def _edges(tensors) -> tuple:
    for t in tensors:
        if t._base is not None and t._vv != t._vc[0]:
            t._sync()  # a view whose memory was written since its history was made
    return tuple(
        ((t._grad_fn, t._output_nr) if t._grad_fn is not None else (grad_accumulator(t), 0))
        if t._rg else (None, 0)
        for t in tensors
    )


def _save(to_save, outs) -> tuple:
    saved = []
    for t in to_save:
        if t is None:
            saved.append((None, 0))
        elif any(t is o for o in outs):
            nr = next(i for i, o in enumerate(outs) if o is t)
            saved.append((OUT, (t._data, t._vc, t._vc[0], nr)))
        else:
            saved.append((t, t._vc[0]))
    return tuple(saved)


def _wrap_output(node, o, i, track, args):
    from ember._tensor import Tensor

    if not isinstance(o, Tensor):
        return o
    dirty = getattr(node, "dirty_tensors", ())
    if any(o is d for d in dirty):
        if track and o._grad_fn is None and o._rg:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                               "operation.")
        o._vc[0] += 1
    elif any(o is a for a in args):
        o = o._alias()
    if not track:
        return o
    if any(o is n for n in getattr(node, "non_differentiable", ())) or \
            o.dtype._kind < 2:
        o._rg = False
        return o
    o._grad_fn = node
    o._output_nr = i
    o._rg = True
    return o


def once_differentiable(fn):
    """Decorate a backward that cannot itself be differentiated: it runs without grad."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        from ember._tensor import Tensor

        with no_grad():
            outputs = fn(ctx, *args)
        if not STATE.enabled or not any(isinstance(a, Tensor) and a._rg for a in args):
            return outputs
        # Under create_graph the results get an "Error" node: differentiating them raises.
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        res = _DelayedError.apply(*[
            None if o is None else o.detach().requires_grad_(True) for o in outs])
        return res if single or len(outs) > 1 else (res,)

    return wrapper


class _ErrorNode(BackwardCFunction):
    __repr__ = Node.__repr__  # a built-in node in torch: <Error object at ...>


class _DelayedError(Function):
    node_name = "Error"
    _node_base = _ErrorNode

    @staticmethod
    def forward(ctx, *grads):
        return grads[0] if len(grads) == 1 else grads

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError("trying to differentiate twice a function that was marked with "
                           "@once_differentiable")


# ---------------------------------------------------------------------------------------------
# Built-in ops: forward on arrays, backward on Tensors.


class OpNode(Node):
    """Node of a built-in op: ``backward(ctx, *grads)`` returns one gradient per input."""

    __slots__ = ("_extra",)
    _forward_cls = None

    @property
    def saved_tensors(self) -> tuple:
        return self._unpack_saved()

    def save_extra(self, *arrays, for_: tuple | None = None) -> None:
        """Save arrays that forward computed or took as arguments (indices, masks, statistics)
        for backward. They come after the saved inputs and outputs in ``saved_tensors``, as
        tensors, and pass through saved-tensor hooks as torch's saved tensors do. ``for_``:
        the inputs whose gradients read them (as in ``Op.save_for``); when none of them needs
        a gradient they are not saved and read as None."""
        if not _wanted(self.needs_input_grad, for_):
            arrays = (None,) * len(arrays)
        self._extra = arrays if self._extra is None else self._extra + arrays

    def _call(self, grads: list) -> tuple:
        g = grads[0]
        if g is not None and g._data.dtype.kind == "c":  # one cheap test for complex graphs
            from ember.ops._complex_grad import complex_call

            return complex_call(self, grads)
        out = self._forward_cls.backward(self, *grads)
        return out if isinstance(out, tuple) else (out,)

    def __getattr__(self, name: str):
        """torch's ``grad_fn._saved_self`` / ``_saved_other`` / ``_saved_result`` (saved
        tensors) and ``_saved_<attr>`` (what forward stashed on ctx)."""
        if name.startswith("_saved_"):
            key, cls = name[7:], self._forward_cls
            idx = {"self": 0, "other": 1}.get(key)
            if key == "result" and cls.saves_output is True:
                return self._unpack_saved()[len(cls.saves)]
            if idx is not None and idx in cls.saves:
                return self._unpack_saved()[cls.saves.index(idx)]
            if key in self.__dict__:
                return self.__dict__[key]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")


class Op(Function):
    """A built-in differentiable primitive.

    Class attributes declare what backward needs, so forward can stay a pure array function:
    ``saves`` (indices of inputs to save), ``saves_output`` (True, or for an op returning a
    tuple, the indices of the outputs to save, repeats allowed), ``save_for``, ``broadcasts``
    (the engine sums gradients back to each input's shape), ``view`` (the output is a view of
    input 0). ``save_for`` is torch's rule for what it saves: for each saved entry (the inputs
    in ``saves`` order, then the outputs), the inputs whose gradients need it, or None for
    always. An entry is saved only when one of those inputs needs a gradient, so ``x * w``
    with only ``w`` requiring grad keeps ``x`` alive but not ``w``; unsaved entries read as
    None in ``saved_tensors`` (a backward keeps shapes it needs on ``ctx``). torch guards an
    input that a single gradient formula reads, and saves the rest (inputs read by several
    formulas, outputs, ``save_extra``'s arrays) whenever the op is recorded
    (``ember.ops._common.save_plan``). Without ``save_for``, every entry is always saved.
    """

    _node_base = OpNode
    saves: tuple = ()
    saves_output = False
    save_for: tuple | None = None
    broadcasts = False
    view = False
    # How backward treats a complex gradient (ember/ops/_complex_grad.py): None (the op has
    # no complex derivative), "holomorphic" (the real formula, conjugated) or "own".
    complex_grad: str | None = None

    @classmethod
    def apply(cls, *inputs, **kw):
        from ember._tensor import Tensor

        if PROFILER[0] is not None:
            return PROFILER[0].op(cls, inputs, kw)
        if VMAP[0] is not None and (res := VMAP[0](cls, inputs, kw)) is not None:
            return res
        if forward_ad.LEVEL[0] is not None and forward_ad.active(inputs):
            return _dual_apply(cls, inputs, kw)
        if STATE.enabled:
            for t in inputs:
                if t._rg:
                    return cls._apply_tracked(inputs, kw)
        arrays = [t._data for t in inputs]
        if _Cuda.active:
            arrays = one_device(arrays)
            with gpu_gaps(cls):
                out = cls.forward(_Scratch(), *arrays, **kw)
        else:
            out = cls.forward(_Scratch(), *arrays, **kw)
        if cls.broadcasts:  # torch's layout for the result (NumPy's may differ)
            out = iterator_layout(out, arrays)
        if type(out) is tuple:
            return tuple(Tensor._make(o) for o in out)
        res = Tensor._make(out)
        if cls.view:
            res._set_view_of(inputs[0])
        return res

    @classmethod
    def _apply_tracked(cls, inputs, kw):
        from ember._tensor import Tensor

        node = cls._backward_cls.__new__(cls._backward_cls)
        node._init_node(_edges(inputs))
        node._extra = None
        need = node.needs_input_grad = tuple(t._rg for t in inputs)
        arrays = [t._data for t in inputs]
        if _Cuda.active:
            arrays = one_device(arrays)
            with gpu_gaps(cls):
                out = cls.forward(node, *arrays, **kw)
        else:
            out = cls.forward(node, *arrays, **kw)
        if cls.broadcasts:
            out = iterator_layout(out, arrays)
        if cls.saves:
            plan = cls.save_for
            if plan is None:
                node._saved = tuple((inputs[i], inputs[i]._vc[0]) for i in cls.saves)
            else:
                node._saved = tuple((inputs[i], inputs[i]._vc[0]) if _wanted(need, deps)
                                    else UNSAVED for i, deps in zip(cls.saves, plan))
        if cls.broadcasts:
            shapes = tuple(a.shape for a in arrays)
            if shapes.count(shapes[0]) != len(shapes):
                node._shapes = shapes
        if graph.ANOMALY[0]:
            node._anomaly = forward_stack()
        if type(out) is tuple:
            node._out_meta = [(o.shape, o.dtype) for o in out]
            res = tuple(Tensor._make(o, node, i) if o.dtype.kind in "fcV" else Tensor._make(o)
                        for i, o in enumerate(out))
            if cls.saves_output:
                _save_outputs(node, res, cls.saves_output, cls.save_for, need)
            if node._extra is not None:
                _save_extra(node)
            if LOCAL.saved_hooks and node._saved:
                node._saved = graph.pack_saved(node, node._saved)
            return res
        res = Tensor._make(out, node, 0)
        if cls.view:
            res._set_view_of(inputs[0])
        if cls.saves_output:
            plan = cls.save_for
            entry = (OUT, (res._data, res._vc, res._vc[0], 0)) \
                if plan is None or _wanted(need, plan[-1]) else UNSAVED
            node._saved = (*node._saved, entry) if node._saved else (entry,)
        if node._extra is not None:
            _save_extra(node)
        if LOCAL.saved_hooks and node._saved:
            node._saved = graph.pack_saved(node, node._saved)
        return res


def _dual_apply(cls, inputs: tuple, kw: dict):
    """An op on dual tensors: the op as usual, then its outputs' tangents."""
    forward_ad._BUSY[0] = True
    try:
        out = cls.apply(*inputs, **kw)
    finally:
        forward_ad._BUSY[0] = False
    forward_ad.propagate(cls, inputs, kw, out)
    return out


def _wanted(need: tuple, deps: tuple | None) -> bool:
    """Whether any of the inputs ``deps`` needs a gradient (one saved entry's rule; None:
    always)."""
    if deps is None:
        return True
    for d in deps:
        if need[d]:
            return True
    return False


def _save_outputs(node: OpNode, res: tuple, which: tuple, plan, need: tuple) -> None:
    """Save the outputs ``which`` of a multi-output op, each by its ``plan`` entry (after the
    inputs'; torch saves its ops' outputs whenever they are recorded, but a fused op's outputs
    may be intermediates that torch's composite saves under a guard); an integer output
    (indices) comes back without a grad_fn."""
    k = len(node._forward_cls.saves)
    entries = tuple((OUT, (res[i]._data, res[i]._vc, 0, i if res[i]._rg else -1))
                    if plan is None or _wanted(need, plan[k + j]) else UNSAVED
                    for j, i in enumerate(which))
    node._saved = (*node._saved, *entries) if node._saved else entries


def _save_extra(node: OpNode) -> None:
    """Append the arrays forward passed to ``ctx.save_extra`` to the node's saved entries."""
    from ember._tensor import Tensor

    extra = tuple((Tensor._make(a), 0) if a is not None else UNSAVED for a in node._extra)
    node._extra = None
    node._saved = (*node._saved, *extra) if node._saved else extra


__all__ = ["Function", "FunctionCtx", "Op", "once_differentiable", "FREED", "UNSAVED"]
