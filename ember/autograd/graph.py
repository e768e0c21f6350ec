"""Graph nodes: the backward half of every op, AccumulateGrad for leaves, saved tensors, hooks."""

from __future__ import annotations

import itertools
import re
import sys
import threading
import weakref
from collections import OrderedDict
from typing import NamedTuple

import numpy as np

from ember.autograd import _grad_dtype, forward_ad
from ember.utils.hooks import RemovableHandle

_seq = itertools.count()
next_seq = _seq.__next__

FREED = object()  # marks saved tensors released after backward
OUT = object()  # marks a saved entry that is one of the node's own outputs
ANOMALY = [False, True]  # detect_anomaly's switch and its check_nan, global as in torch
PACKED = object()  # marks a saved entry that went through a pack hook


class _ThreadState(threading.local):
    """Autograd state that torch keeps per thread (grad mode lives in grad_mode.STATE): hooks
    pushed, or a trace started, in one thread never see another thread's graph."""

    def __init__(self) -> None:
        self.saved_hooks: list = []  # stack of (pack, unpack) pairs from saved_tensors_hooks
        self.hooks_disabled: str | None = None  # disable_saved_tensors_hooks's message
        self.trace = None  # the active autograd.trace recorder


LOCAL = _ThreadState()

SECOND_BACKWARD = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call"
    " .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through "
    "the graph a second time or if you need to access saved tensors after calling backward."
)


class Node:
    """A backward function in the graph. ``next_functions`` are edges to the inputs' nodes."""

    __slots__ = (
        "next_functions", "_seq", "_saved", "_shapes", "_out_meta",
        "needs_input_grad", "_tensor_hooks", "_retain_hooks", "_pre_hooks", "_post_hooks",
        "_anomaly", "__dict__", "__weakref__",
    )

    def _init_node(self, next_functions: tuple) -> None:
        self.next_functions = next_functions
        self._seq = next_seq()
        self._saved = None
        self._shapes = None
        self._out_meta = None
        self._tensor_hooks = None
        self._retain_hooks = None
        self._pre_hooks = None
        self._post_hooks = None
        self._anomaly = None

    def name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {hex(id(self))}>"

    @property
    def metadata(self) -> dict:
        return self.__dict__.setdefault("_metadata", {})

    def _sequence_nr(self) -> int:
        return self._seq

    # --- hooks -----------------------------------------------------------------------------
    def register_hook(self, fn) -> RemovableHandle:
        """``fn(grad_inputs, grad_outputs)`` after this node runs; may return new grad_inputs."""
        if self._post_hooks is None:
            self._post_hooks = OrderedDict()
        return RemovableHandle.add(self._post_hooks, fn)

    def register_prehook(self, fn) -> RemovableHandle:
        """``fn(grad_outputs)`` before this node runs; may return new grad_outputs."""
        if self._pre_hooks is None:
            self._pre_hooks = OrderedDict()
        return RemovableHandle.add(self._pre_hooks, fn)

    def _add_tensor_hook(self, output_nr: int, fn) -> RemovableHandle:
        if self._tensor_hooks is None:
            self._tensor_hooks = {}
        return RemovableHandle.add(self._tensor_hooks.setdefault(output_nr, OrderedDict()), fn)

    # --- saved tensors ---------------------------------------------------------------------
    def _unpack_saved(self) -> tuple:
        saved = self._saved
        if saved is FREED:
            raise RuntimeError(SECOND_BACKWARD)
        if not saved:
            return ()
        out = []
        for t, version in saved:
            if t is OUT:
                t = self._unpack_output(*version)
            elif t is PACKED:
                t = version[1](version[0])
            elif t is not None and t._vc[0] != version:
                raise RuntimeError(_inplace_message(t, version, self))
            out.append(t)
        return tuple(out)

    def _unpack_output(self, data, vc, version, nr):
        from ember._tensor import Tensor

        t = Tensor._make(data, self, nr) if nr >= 0 else Tensor._make(data)  # -1: indices
        t._vc = vc
        if forward_ad.LEVEL[0] is not None:  # a saved output keeps its tangent
            tangent = self.__dict__.get("_out_tangents", {}).get(nr)
            if tangent is not None:
                forward_ad.set_tangent(t, tangent)
        if vc[0] != version:
            raise RuntimeError(_inplace_message(t, version, self))
        return t

    def _release(self) -> None:
        if self._saved:
            self._saved = FREED

    def _call(self, grads: list) -> tuple:
        raise NotImplementedError


class saved_tensors_hooks:
    """Within the block, tensors saved for backward go through ``pack_hook`` and come back
    through ``unpack_hook`` when backward needs them (e.g. to offload or recompute them).

    >>> with ember.autograd.graph.saved_tensors_hooks(lambda t: t.numpy().copy(),
    ...                                               lambda a: ember.from_numpy(a)):
    ...     y = x.exp()
    """

    def __init__(self, pack_hook, unpack_hook) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> None:
        if LOCAL.hooks_disabled is not None:
            raise RuntimeError(LOCAL.hooks_disabled)
        LOCAL.saved_hooks.append((self.pack_hook, self.unpack_hook))

    def __exit__(self, *exc) -> None:
        LOCAL.saved_hooks.pop()


class save_on_cpu(saved_tensors_hooks):
    """Keep saved tensors in CPU memory: ember's tensors always are, so they pass through."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        super().__init__(lambda t: t, lambda t: t)


class disable_saved_tensors_hooks:
    """Within the block, entering ``saved_tensors_hooks`` raises ``error_message``."""

    def __init__(self, error_message: str) -> None:
        self.error_message = error_message

    def __enter__(self) -> None:
        self.prev = LOCAL.hooks_disabled
        LOCAL.hooks_disabled = self.error_message

    def __exit__(self, *exc) -> None:
        LOCAL.hooks_disabled = self.prev


def pack_saved(node: Node, saved: tuple) -> tuple:
    """Run the innermost pack hook over a node's saved entries. Python numbers an op turned
    into 0-d tensors (``x * 0.5``) are kept as they are, as torch keeps its wrapped numbers."""
    from ember._tensor import WRAPPED_NUMBER

    pack, unpack = LOCAL.saved_hooks[-1]
    out = []
    for t, version in saved:
        if t is None or t is not OUT and t._aux is WRAPPED_NUMBER:
            out.append((t, version))
            continue
        if t is OUT:
            t = node._unpack_output(*version)
        out.append((PACKED, (pack(t), unpack)))
    return tuple(out)


def _inplace_message(t, version: int, node: Node) -> str:
    from ember._dtype import TYPE_NAMES

    tname = TYPE_NAMES.get(t.dtype, str(t.dtype))
    shape = list(t.shape)
    # torch 2.13 names the producing op without its "Backward0" suffix ("output 0 of Mul").
    op = re.sub(r"Backward\d*$", "", t.grad_fn.name()) if t.grad_fn else ""
    where = f", which is output {t._output_nr} of {op}," if t.grad_fn else ""
    return (
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: [{tname} {shape}]{where} is at version {t._vc[0]}; expected version "
        f"{version} instead. Hint: enable anomaly detection to find the operation that failed "
        "to compute its gradient, with ember.autograd.set_detect_anomaly(True, check_nan=False)."
    )


class AccumulateGrad(Node):
    """The node of a leaf tensor: writes incoming gradients into ``variable.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable) -> None:
        self._init_node(())
        self._seq = sys.maxsize  # torch runs leaf accumulation as soon as it is ready
        self.variable = variable
        self._tensor_hooks = variable._hooks_dict()

    def _call(self, grads: list) -> tuple:
        from ember.autograd.grad_mode import STATE

        var = self.variable
        g = grads[0]
        if g is None:
            return ()
        g = _grad_dtype.cast_incoming(var, g)
        old = var._grad
        if old is None:
            var._grad = g if STATE.enabled else _owned(g)
        elif STATE.enabled:
            var._grad = old + g
        else:
            np.add(old._data, g._data, out=old._data, casting="unsafe")
        tr = LOCAL.trace
        if tr is not None:
            tr.accumulate(self, var)
        aux = var._aux
        if aux is not None and aux.post_acc_hooks:
            for fn in tuple(aux.post_acc_hooks.values()):
                fn(var)
                if tr is not None:
                    tr.hook("post_accumulate_grad_hook", self, fn, var._grad, None)
        return ()


def _owned(g):
    """A gradient safe to store as ``.grad``: contiguous, writeable, aliased by no one else."""
    from ember._tensor import Tensor

    if _private(g):
        return g if g._grad_fn is None and g._base is None else Tensor._make(g._data)
    return Tensor._make(g._data.copy(order="C"))


def _private(g) -> bool:
    """Whether ``g``'s array is contiguous, writeable and reachable by no one but ``g``
    (torch's AccumulateGrad steals such a gradient instead of copying it).

    Counts are what ``sys.getrefcount`` sees with nothing else holding the object: the holder,
    a local name and the call's argument. A view (a transposed weight gradient, a bias gradient
    reshaped from keepdim) qualifies when it spans its whole base and the base is held only by
    the view and by ``g._base``, the tensor it was made from, which only ``g`` holds."""
    a = g._data
    # (CuPy arrays are always writeable and have no such flag.)
    if not (a.flags.c_contiguous and getattr(a.flags, "writeable", True)) \
            or sys.getrefcount(a) > 3:
        return False  # refs: g._data, local, argument
    base = a.base
    if base is None:
        return True
    if type(base) is not type(a) or base.base is not None or base.size != a.size:
        return False
    owner = g._base
    if owner is None:
        return sys.getrefcount(base) <= 3  # a.base, local, argument
    return owner._data is base and sys.getrefcount(owner) <= 3 and sys.getrefcount(base) <= 4


def grad_accumulator(t) -> AccumulateGrad:
    """The leaf's AccumulateGrad, shared while the graph that uses it is alive (as in torch)."""
    aux = t._get_aux()
    ref = aux.grad_acc
    node = ref() if ref is not None else None
    if node is None:
        node = AccumulateGrad(t)
        aux.grad_acc = weakref.ref(node)
    return node


class GradientEdge(NamedTuple):
    """An edge of the graph: input ``output_nr`` of ``node``, where the gradient of that output
    of the forward op arrives. ``autograd.grad`` and ``backward`` take one wherever they take a
    tensor, as inputs or outputs."""

    node: Node
    output_nr: int
    # torch's token keeps a C++ graph alive; an ember edge's node holds its graph itself
    ownership_token: Node | None = None


def get_gradient_edge(tensor) -> GradientEdge:
    """The edge where ``tensor``'s gradient is computed: ``autograd.grad(loss, input)`` equals
    ``autograd.grad(loss, get_gradient_edge(input))``."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does "
                           "not require gradients")
    node = tensor.grad_fn if tensor.grad_fn is not None else grad_accumulator(tensor)
    return GradientEdge(node, tensor.output_nr)


class _MultiHandle:
    """Removes every per-tensor hook of one ``register_multi_grad_hook``."""

    def __init__(self, handles: tuple) -> None:
        self.handles = handles

    def remove(self) -> None:
        for h in self.handles:
            h.remove()

    def __enter__(self) -> _MultiHandle:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


def register_multi_grad_hook(tensors, fn, *, mode: str = "all") -> _MultiHandle:
    """``mode="all"``: call ``fn(grads)`` once per backward, after the gradients of all
    ``tensors`` that this backward computes are ready (None for the others).
    ``mode="any"``: call ``fn(grad)`` with the first of them to be computed."""
    from ember.autograd.engine import current_graph_task_id, will_engine_execute_node

    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    if mode == "any":
        seen: set = set()

        def any_hook(grad):
            task = current_graph_task_id()
            if task not in seen:
                seen.add(task)
                fn(grad)
        return _MultiHandle(tuple(t.register_hook(any_hook) for t in tensors if t.requires_grad))

    nodes = [t.grad_fn if t.grad_fn is not None else grad_accumulator(t)
             for t in tensors if t.requires_grad]
    pending: dict = {}  # graph task id -> [calls left, grads]

    def make_hook(i: int):
        def hook(grad):
            task = current_graph_task_id()
            if task not in pending:
                pending[task] = [sum(map(will_engine_execute_node, nodes)), [None] * len(tensors)]
            state = pending[task]
            state[1][i] = grad
            state[0] -= 1
            if state[0] == 0:
                del pending[task]
                fn(state[1])
        return hook
    return _MultiHandle(tuple(t.register_hook(make_hook(i)) for i, t in enumerate(tensors)
                              if t.requires_grad))


def increment_version(tensor) -> None:
    """Count an in-place change made behind autograd's back (through ``.data``, NumPy, ...), so
    that a saved copy of the old value is detected at backward."""
    from ember._tensor import Tensor

    for t in (tensor,) if isinstance(tensor, Tensor) else tensor:
        t._vc[0] += 1
