"""The backward engine: what ``loss.backward()`` and ``autograd.grad`` run.

As in torch: an iterative walk from the roots counts, for every node, how many edges lead into
it; a heap keyed on creation order runs ready nodes newest-first; each node gets an input buffer
where incoming gradients are summed, and runs once all of its consumers have run. Per node:
tensor hooks, the retain_grad update, node pre-hooks, backward, node post-hooks.
"""

from __future__ import annotations

import heapq
import itertools
import math
import threading
from collections.abc import Sequence

import numpy as np

from ember.autograd import _grad_dtype, graph
from ember.autograd.anomaly_mode import warn_forward_trace
from ember.autograd.function import PROFILER
from ember.autograd.grad_mode import STATE
from ember.autograd.graph import grad_accumulator

_LOCAL = graph.LOCAL


def _root_edge(t):
    if type(t) is graph.GradientEdge:
        return t.node, t.output_nr
    t._sync()
    if t._grad_fn is not None:
        return t._grad_fn, t._output_nr
    if t._rg:
        return grad_accumulator(t), 0
    return None, 0


def _edge_root_grad(edge, g):
    """The gradient fed to a GradientEdge output: ``g``, or ones for a scalar output whose
    shape the node recorded (ember's nodes know their outputs' shapes only for multi-output
    ops and leaves)."""
    from ember._tensor import Tensor

    if g is not None:
        return g if g._rg else g._alias()
    node, nr = edge.node, edge.output_nr
    if isinstance(node, graph.AccumulateGrad):
        shape, dtype = node.variable.shape, node.variable._data.dtype
    elif node._out_meta is not None:
        shape, dtype = node._out_meta[nr]
    else:
        raise RuntimeError("grad_outputs must be given for a GradientEdge output whose node does "
                           f"not record its output's shape ({node.name()})")
    if math.prod(shape) != 1:
        raise RuntimeError("grad can be implicitly created only for scalar outputs")
    return Tensor._make(np.ones(shape, dtype=dtype))


def _make_root_grads(tensors, grads):
    from ember._creation import ones_like
    from ember._tensor import Tensor

    out = []
    for i, (t, g) in enumerate(zip(tensors, grads)):
        if type(t) is graph.GradientEdge:
            out.append(_edge_root_grad(t, g))
            continue
        if g is None:
            if t.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not t.dtype.is_floating_point:
                raise RuntimeError("grad can be implicitly created only for real scalar outputs"
                                   f" but got {t.dtype}")
            a = t._data
            # (a CPU array directly: ones_like's argument and device handling is most of a
            # small compiled step's engine time)
            g = Tensor._make(np.ones(a.shape, a.dtype)) if type(a) is np.ndarray else \
                ones_like(t)
        elif not isinstance(g, Tensor):
            g = Tensor(g, dtype=t.dtype)
        else:
            if g.shape != t.shape:
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and "
                    f"output[{i}] has a shape of {t.shape}."
                )
            if not g._rg:  # a new handle, so the caller's tensor is never stored as .grad
                g = g._alias()
        out.append(g)
    return out


def _dependencies(roots):
    """Count incoming edges per node reachable from the roots (iterative: no recursion limit)."""
    deps: dict = {}
    seen = set(roots)
    stack = list(roots)
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is not None:
                deps[nxt] = deps.get(nxt, 0) + 1
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
    return deps, seen


def _runnable(nodes, targets, accumulate: bool) -> set:
    """With ``inputs`` given, only nodes on a path to an input run (as in torch)."""
    reach = set(targets)
    runs = set(targets) if accumulate else set()
    # Children were created before their parents (AccumulateGrad has no children), so one
    # pass in creation order settles every node.
    for node in sorted(nodes, key=lambda n: n._seq):
        if any(n in reach for n, _ in node.next_functions):
            reach.add(node)
            runs.add(node)
    return runs


def run_backward(tensors: Sequence, grad_tensors: Sequence, retain_graph: bool,
                 create_graph: bool, inputs=None, accumulate: bool = True) -> list:
    """Run the graph from ``tensors``; accumulate into leaves, or return grads for ``inputs``."""
    roots = []
    for i, t in enumerate(tensors):
        node, nr = _root_edge(t)
        if node is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have "
                               "a grad_fn")
        roots.append((node, nr))
    grads = _make_root_grads(tensors, grad_tensors)
    capture = _captures(inputs, accumulate) if inputs is not None else None
    root_nodes = list(dict.fromkeys(n for n, _ in roots))
    deps, nodes = _dependencies(root_nodes)
    runs = _runnable(nodes, {n for n, _ in capture}, accumulate) if capture is not None else None
    if accumulate and capture is not None:
        # backward(inputs=...) as torch: input nodes run, and non-leaf inputs retain .grad.
        capture = None
        for t in inputs:
            if type(t) is not graph.GradientEdge and t._grad_fn is not None:
                t.retain_grad()
    buffers: dict = {}
    for (node, nr), g in zip(roots, grads):
        _add_to_buffer(buffers, node, nr, g)
    # Ties (leaves' AccumulateGrad all share the top sequence number) go first-in, first-out.
    tick = itertools.count().__next__
    ready = [(-n._seq, tick(), n) for n in root_nodes if n not in deps]
    heapq.heapify(ready)
    results = [None] * (len(inputs) if inputs is not None else 0)
    prev = STATE.enabled
    STATE.enabled = create_graph
    callbacks: list = []
    _TASKS.stack.append((next(_task_ids), nodes, runs,
                         {n for n, _ in capture} if capture else (), callbacks))
    # Gradient formulas meet inf * 0 and the like (relu of an lp_pool's zero window): torch
    # gives inf / NaN silently, so NumPy must not warn.
    quiet = np.errstate(divide="ignore", invalid="ignore", over="ignore")
    quiet.__enter__()  # (a with block would re-indent the loop; this costs ~1 us per backward)
    tr = _LOCAL.trace
    try:
        if tr is not None:
            tr.queue(None, (), ready, buffers)
        while ready:
            node = heapq.heappop(ready)[2]
            buf = buffers.pop(node, None)
            outs = ()
            if buf is not None:
                if capture:
                    _capture(node, buf, capture, results, node in runs)
                if runs is None or node in runs:
                    try:
                        prof = PROFILER[0]
                        outs = _run_node(node, buf) if prof is None else \
                            prof.node(node, _run_node, buf)
                    except Exception:
                        if graph.ANOMALY[0]:
                            warn_forward_trace(node)
                        raise
                    if not retain_graph:
                        node._release()
            del buf
            _distribute(node, outs, buffers)
            sent = outs if tr is not None else ()  # a trace sees them after the queue moves
            del outs
            for nxt, _ in node.next_functions:
                if nxt is not None:
                    d = deps[nxt] - 1
                    deps[nxt] = d
                    if d == 0:
                        heapq.heappush(ready, (-nxt._seq, tick(), nxt))
            if tr is not None:
                tr.queue(node, sent, ready, buffers)
        while callbacks:  # a callback may queue another, as in torch
            callbacks.pop(0)()
    finally:
        quiet.__exit__(None, None, None)
        STATE.enabled = prev
        _TASKS.stack.pop()
    return results


class _Tasks(threading.local):
    def __init__(self) -> None:
        # (id, reachable nodes, nodes that run or None, captured nodes, final callbacks)
        self.stack: list = []


_TASKS = _Tasks()
_task_ids = itertools.count()


def current_graph_task_id() -> int:
    """Id of the backward pass running in this thread, -1 outside one."""
    return _TASKS.stack[-1][0] if _TASKS.stack else -1


def will_engine_execute_node(node) -> bool:
    """Whether the running backward pass will run ``node`` (or capture its gradient)."""
    if not _TASKS.stack:
        raise RuntimeError("_will_engine_execute_node should only be called during the backward "
                           "pass")
    _, nodes, runs, captured, _ = _TASKS.stack[-1]
    if runs is None:
        return node in nodes
    return node in runs or node in captured


def queue_callback(callback) -> None:
    """Run ``callback()`` once the running backward pass has finished all its nodes (torch's
    ``Variable._execution_engine.queue_callback``; DDP waits for its all-reduces there)."""
    if not _TASKS.stack:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    _TASKS.stack[-1][4].append(callback)


def _captures(inputs, accumulate: bool) -> dict:
    capture: dict = {}
    for i, t in enumerate(inputs):
        node, nr = _root_edge(t)
        if node is None:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        capture.setdefault((node, nr), []).append(i)
    return capture


def _capture(node, buf, capture, results, will_run: bool) -> None:
    """Record gradients for ``autograd.grad``'s inputs. As in torch, tensor hooks apply to the
    captured value only when the node will not run (otherwise they run once, in the node)."""
    for nr, g in enumerate(buf):
        idx = capture.get((node, nr))
        if idx is not None and g is not None:
            if not will_run:
                g = _apply_tensor_hooks(node, nr, g)
                buf[nr] = g
            if type(node) is graph.AccumulateGrad:  # a leaf's grad_dtype applies here too
                g = _grad_dtype.cast_incoming(node.variable, g)
            if _LOCAL.trace is not None:
                _LOCAL.trace.capture(node, nr, g)
            for i in idx:
                results[i] = g


def _distribute(node, outs, buffers) -> None:
    shapes = node._shapes
    for i, ((nxt, nr), g) in enumerate(zip(node.next_functions, outs)):
        if nxt is None or g is None:
            continue
        if shapes is not None and g.shape != shapes[i]:
            g = _sum_to(g, shapes[i], node, i)
        _add_to_buffer(buffers, nxt, nr, g)


def _add_to_buffer(buffers: dict, node, nr: int, g) -> None:
    buf = buffers.get(node)
    if buf is None:
        meta = node._out_meta
        buf = buffers[node] = [None] * (len(meta) if meta else 1)
    old = buf[nr]
    if old is None:
        buf[nr] = g
    elif STATE.enabled or old._data.dtype != g._data.dtype or old._data.shape != g._data.shape:
        buf[nr] = old + g  # create_graph (the sum is part of the graph), or promotion
    else:  # a plain backward adds the arrays (what ``old + g`` computes, without the op)
        from ember._tensor import Tensor

        buf[nr] = Tensor._make(old._data + g._data)


def _sum_to(g, shape: tuple, node, i: int):
    """Undo broadcasting: check ``g`` can be summed down to ``shape``, then do it."""
    from ember._tensor import Tensor

    lead = g.ndim - len(shape)
    if lead < 0 or any(s != 1 and s != gs for s, gs in zip(shape, g.shape[lead:])):
        raise RuntimeError(
            f"Function {node.name()} returned an invalid gradient at index {i} - got "
            f"{list(g.shape)} but expected shape compatible with {list(shape)}"
        )
    if STATE.enabled:  # create_graph: the sum is part of the graph
        return g.sum_to_size(shape)
    # A plain backward sums the array directly (what sum_to_size computes, without the ops).
    a = g._data
    dims = tuple(range(lead)) + tuple(lead + k for k, s in enumerate(shape)
                                      if s == 1 and a.shape[lead + k] != 1)
    if dims:
        dt = a.dtype
        if dt.itemsize == 2 and dt.kind in "fV" and isinstance(a, np.ndarray):
            # float16 / bfloat16 sum in float32 and round once, as ``sum`` does (and torch):
            # NumPy would add in the half type, rounding at every step, and slowly.
            a = a.astype(np.float32).sum(axis=dims, dtype=np.float32, keepdims=True).astype(dt)
        else:
            a = a.sum(axis=dims, dtype=dt, keepdims=True)
    return Tensor._make(a.reshape(shape) if lead else a)


def _apply_tensor_hooks(node, nr: int, g):
    th = node._tensor_hooks
    if th:
        hooks = th.get(nr)
        if hooks:
            for fn in tuple(hooks.values()):
                r = fn(g)
                if _LOCAL.trace is not None:
                    _LOCAL.trace.hook("tensor_hook", node, fn, g, r, nr)
                if r is not None:
                    g = _checked(fn, g, r)
    return g


def _checked(fn, old, new):
    """A hook's replacement gradient must be a tensor of the same shape and dtype (torch)."""
    from ember._dtype import TYPE_NAMES
    from ember._tensor import Tensor

    name = getattr(fn, "__name__", type(fn).__name__)
    if not isinstance(new, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(new).__name__}'")
    if old is None:
        return new
    if new.shape != old.shape:
        raise RuntimeError(f"hook '{name}' has changed the size of value")
    if new.dtype is not old.dtype:
        raise RuntimeError(f"hook '{name}' has changed the type of value (was "
                           f"{TYPE_NAMES[old.dtype]} got {TYPE_NAMES[new.dtype]})")
    return new


def _checked_all(fn, old, new) -> list:
    return [n if n is None or o is None else _checked(fn, o, n) for o, n in zip(old, new)]


def _run_node(node, grads: list) -> tuple:
    """One node, in torch's order: tensor hooks, retain_grad, pre-hooks, backward, post-hooks."""
    tr = _LOCAL.trace
    if node._tensor_hooks:
        # Grouped by output, in order of each output's first hook; torch calls them even
        # for an output that received no gradient (with None).
        for nr, hooks in tuple(node._tensor_hooks.items()):
            g = grads[nr]
            for fn in tuple(hooks.values()):
                r = fn(g)
                if tr is not None:
                    tr.hook("tensor_hook", node, fn, g, r, nr)
                if r is not None:
                    g = _checked(fn, g, r)
            grads[nr] = g
    if node._retain_hooks:
        for nr, ref in node._retain_hooks.items():
            t = ref()
            g = grads[nr]
            if t is not None and g is not None:
                t._grad = g.clone() if t._grad is None else t._grad + g
                if tr is not None:
                    tr.hook("retain_grad", node, None, g, t._grad, nr)
    if node._pre_hooks:
        for fn in tuple(node._pre_hooks.values()):
            r = fn(tuple(grads))
            if tr is not None:
                tr.hook("pre_hook", node, fn, grads, r)
            if r is not None:
                grads = _checked_all(fn, grads, r)
    if all(g is None for g in grads):
        outs = (None,) * len(node.next_functions)
    else:
        if tr is not None:
            tr.node(node, grads)
        outs = node._call(grads)
        if tr is not None:
            tr.node_outputs(outs)
    if graph.ANOMALY[0] and graph.ANOMALY[1]:
        _check_nan(node, outs)
    if node._post_hooks:
        shapes = node._shapes
        if shapes is not None:  # post-hooks see grads already summed to the inputs' shapes
            outs = tuple(g if g is None or g.shape == shapes[i] else _sum_to(g, shapes[i], node, i)
                         for i, g in enumerate(outs))
        for fn in tuple(node._post_hooks.values()):
            r = fn(outs, tuple(grads))
            if tr is not None:
                tr.hook("post_hook", node, fn, outs, r)
            if r is not None:
                outs = tuple(_checked_all(fn, outs, r))
    return outs


def _check_nan(node, outs) -> None:
    import numpy as np

    for i, g in enumerate(outs):
        if g is not None and g.dtype.is_floating_point and np.isnan(g._data).any():
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th "
                               "output.")
