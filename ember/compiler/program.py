"""From one capture to a ``Program``: split the recorded graph into the forward and backward
programs (the backward reads what the forward saves), prune them, generate their code, and
replay them on later calls.
"""

from __future__ import annotations

import threading

import numpy as np

from ember.autograd.grad_mode import STATE, enable_grad
from ember.compiler import guards, passes, traced
from ember.compiler.capture import Recorder
from ember.compiler.codegen import compile_graph
from ember.compiler.fusion import fuse_elementwise
from ember.compiler.gpu import GraphReplay, host
from ember.compiler.gpu import namespace as gpu_namespace
from ember.compiler.ir import Graph, Node, Value
from ember.compiler.traced import GraphBreak
from ember.compiler.validate import validate


def _flatten(obj, leaves: list):
    """``obj`` with every tensor replaced by its index in ``leaves``."""
    from ember._tensor import Tensor

    if isinstance(obj, Tensor):
        leaves.append(obj)
        return _Leaf(len(leaves) - 1)
    if type(obj) in (tuple, list):
        return type(obj)(_flatten(o, leaves) for o in obj)
    if type(obj) is dict:
        return {k: _flatten(v, leaves) for k, v in obj.items()}
    return obj


def _unflatten(spec, leaves: list):
    if isinstance(spec, _Leaf):
        return leaves[spec.i]
    if type(spec) in (tuple, list):
        return type(spec)(_unflatten(s, leaves) for s in spec)
    if type(spec) is dict:
        return {k: _unflatten(v, leaves) for k, v in spec.items()}
    return spec


class _Leaf:
    __slots__ = ("i",)

    def __init__(self, i: int) -> None:
        self.i = i


def leaves_of(args, kwargs) -> list:
    leaves: list = []
    _flatten((args, kwargs), leaves)
    return leaves


def _ident(name: str) -> str:
    out = "".join(ch if ch.isalnum() else "_" for ch in name)
    return out if out[:1].isalpha() else f"p_{out}"


OVERWRITTEN = (
    "Error: accessing tensor output of CUDAGraphs that has been overwritten by a subsequent "
    "run. To prevent overwriting, clone the tensor outside of torch.compile() or call "
    "torch.compiler.cudagraph_mark_step_begin() before each model invocation.")


class Program:
    """A captured signature: the forward program, the backward program, and how to call
    them."""

    def __init__(self, cf, forward, fw_source, backward, bw_source, meta: dict) -> None:
        self.cf = cf
        # The programs' persistent buffers are shared by every call: one replay at a time.
        self.lock = threading.Lock()
        self.forward, self.fw_source = forward, fw_source
        self.backward, self.bw_source = backward, bw_source
        self.__dict__.update(meta)

    def code(self) -> str:
        parts = [self.fw_source]
        if self.bw_source:
            parts.append(self.bw_source)
        return "\n\n".join(parts)

    def run_backward(self, grads: list, saved: tuple, generation: int = 0) -> tuple:
        """The backward program on the engine's gradients for the outputs."""
        if self.graphs and generation != self.forward.generation and \
                self.forward.graph is not None:
            raise RuntimeError(OVERWRITTEN)
        arrays = self.upstream(grads)
        with self.lock:
            return self.backward(*arrays, *saved)

    def upstream(self, grads: list) -> list:
        """The backward program's gradient inputs: contiguous arrays, zeros where none came."""
        out = []
        xp = gpu_namespace() if self.gpu else np
        for g, (shape, dtype) in zip(grads, self.grad_meta):
            if g is None:
                out.append(xp.zeros(shape, dtype))
            else:  # (not np.ascontiguousarray: it turns a 0-d array into a 1-d one)
                a = g._data
                out.append(a if a.flags.c_contiguous else a.copy(order="C"))
        return out

    def run(self, args, kwargs, leaves: list, roots: list):
        from ember._tensor import Tensor
        from ember.compiler.runtime import CompiledFunctionBackward, edge

        inputs = leaves + [t for _, t in roots]
        states = [(g, g._snapshot()) for g in self.generators] if self.generators else None
        with self.lock:
            outs, saved = self.forward(*[t._data for t in inputs])
        for i in self.written:
            inputs[i]._vc[0] += 1
        node = None
        if self.diff_outputs and STATE.enabled:
            diff_in = [inputs[i] for i in self.diff_inputs]
            node = CompiledFunctionBackward.__new__(CompiledFunctionBackward)
            node._init_node(tuple(edge(t) for t in diff_in))
            node.program, node.saved_values = self, saved
            node.generation = self.forward.generation if self.graphs else 0
            node.rerun = _Rerun(self, args, kwargs, diff_in, states)
            node._out_meta = list(self.grad_meta)
        results, k = [], 0
        for i, arr in enumerate(outs):
            if node is not None and i in self.diff_outputs:
                res = Tensor._make(arr, node, k)
                k += 1
            else:
                res = Tensor._make(arr)
            if i in self.views:
                res._set_view_of(inputs[self.views[i]])
            results.append(res)
        return _unflatten(self.out_spec, results)


class _Rerun:
    """create_graph through a compiled region: run the region eagerly again (with the random
    draws of the forward replayed) and differentiate that."""

    def __init__(self, program, args, kwargs, diff_in, states) -> None:
        self.program, self.args, self.kwargs = program, args, kwargs
        self.diff_in, self.states = diff_in, states

    def __call__(self, grads):
        from ember.autograd import grad

        now = [(g, g._snapshot()) for g, _ in self.states] if self.states else []
        for g, state in self.states or ():
            g._restore(state)
        try:
            with enable_grad():
                leaves: list = []
                _flatten(self.program.cf.fn(*self.args, **self.kwargs), leaves)
        finally:
            for g, state in now:
                g._restore(state)
        outs = [leaves[i] for i in self.program.diff_outputs]
        return grad(outs, self.diff_in, grads, create_graph=True, allow_unused=True)


def build(cf, args, kwargs, roots) -> Program:
    """Capture ``cf.fn`` on these arguments and build its program (or raise GraphBreak)."""
    why = guards.has_hooks(cf, roots)
    if why:
        raise GraphBreak(f"hooks run Python that a program cannot replay: {why}")
    gpu = _on_gpu([*leaves_of(args, kwargs), *(t for _, t in roots)])
    names = {id(m): f"{prefix[:-1]} ({type(m).__name__})" if prefix else type(m).__name__
             for m, prefix, _, _ in cf.plan.modules}
    rec = Recorder(names)
    leaves: list = []
    spec = _flatten((args, kwargs), leaves)
    inputs = [t.detach().requires_grad_(t._rg) if t.dtype.is_floating_point else t.detach()
              for t in leaves]
    originals = [t._data for _, t in roots]
    on_host = [isinstance(t._data, np.ndarray) and not t._data.ndim
               for t in [*inputs, *(t for _, t in roots)]]
    traced.ACTIVE[0] = rec
    traced.patch_numpy(True)
    try:
        # A GPU program is captured on host copies: the recorded NumPy calls replay on CuPy.
        for i, t in enumerate(inputs):
            t._data = rec.placeholder(host(t._data) if gpu else t._data, f"x{i}")
        for name, t in roots:
            t._data = rec.placeholder(host(t._data) if gpu else t._data, _ident(name))
        cargs, ckwargs = _unflatten(spec, inputs)
        out = cf.fn(*cargs, **ckwargs)
        meta = _finish(rec, out, inputs + [t for _, t in roots])
    finally:
        traced.ACTIVE[0] = None
        traced.patch_numpy(False)
        for (_, t), arr in zip(roots, originals):
            t._data = arr
        rec.rollback()
    meta["generators"] = [g for g, _ in rec.generators.values()]
    fw_graph, bw_graph, saved = meta.pop("graphs")
    meta["kernels"] = 0
    for graph, keep in ((fw_graph, (*fw_graph.outputs, *saved)),
                        (bw_graph, tuple(bw_graph.outputs) if bw_graph else ())):
        if graph is not None:
            passes.prune(graph, keep)
            passes.simplify(graph, keep)
            if gpu:
                meta["kernels"] += fuse_elementwise(graph, keep)
            passes.reuse_dead_inputs(graph, keep)
            passes.persistent_buffers(graph, keep)
    # A CUDA graph would replay the same random draws, and bake in the host scalars it reads
    # (an optimizer's step count): such a program replays without one.
    meta["gpu"] = gpu
    graphs = meta["graphs"] = (gpu and cf.cudagraphs and not meta["generators"]
                               and not any(on_host))
    on_cpu = {id(v) for v, h in zip(fw_graph.placeholders, on_host) if h} if gpu else set()
    forward, fw_source = compile_graph(fw_graph, "forward", saved, gpu, on_cpu, graphs)
    backward = bw_source = None
    if bw_graph is not None:
        backward, bw_source = compile_graph(bw_graph, "backward", gpu=gpu, host=on_cpu,
                                            graphs=graphs)
    if meta["graphs"]:
        forward = GraphReplay(forward, static_tail=True)
        backward = backward and GraphReplay(backward, warm=2)
    prog = Program(cf, forward, fw_source, backward, bw_source, meta)
    prog.n_ops = len(fw_graph.nodes) + (len(bw_graph.nodes) if bw_graph else 0)
    validate(prog, args, kwargs, roots)
    return prog


def _on_gpu(tensors: list) -> bool:
    """Whether the program runs on the GPU: every tensor it reads is a CUDA tensor (or a
    0-d CPU one, which joins GPU ones in eager code too)."""
    cuda = [not isinstance(t._data, np.ndarray) for t in tensors]
    if not any(cuda):
        return False
    if not all(c or t._data.ndim == 0 for c, t in zip(cuda, tensors)):
        raise GraphBreak("tensors on both the CPU and cuda: a program runs on one device")
    from ember.amp.autocast_mode import _state

    if _state.enabled["cuda"]:
        raise GraphBreak("autocast on cuda tensors: ember.compile captures on host copies, "
                         "where the CUDA autocast lists do not apply")
    return True


def _finish(rec: Recorder, out, inputs: list) -> dict:
    """After the forward ran: outputs, the trial backward, and the split into programs."""
    from ember.autograd import grad

    out_leaves: list = []
    out_spec = _flatten(out, out_leaves)
    values = [_output_value(rec, t) for t in out_leaves]
    index = {id(v): i for i, v in enumerate(rec.graph.placeholders)}
    # An output that views an input (x.t(), x[1:]) is returned as a view of it, as in eager.
    views = {i: index[id(v.root())] for i, v in enumerate(values)
             if v.root().kind == "placeholder"}
    diff_outputs = [i for i, t in enumerate(out_leaves) if t._rg]
    diff_inputs = [i for i, t in enumerate(inputs) if t._rg]
    boundary = len(rec.graph.nodes)
    fw = Graph(list(rec.graph.placeholders), rec.graph.nodes[:boundary], values)
    meta = {"out_spec": out_spec, "diff_outputs": set(diff_outputs) if STATE.enabled else set(),
            "diff_inputs": diff_inputs, "grad_meta": [], "written": [], "views": views}
    bw = None
    if meta["diff_outputs"] and diff_inputs:
        ups = []
        for i in diff_outputs:
            a = out_leaves[i]._data
            meta["grad_meta"].append((a.shape, a.dtype))
            ups.append(rec.placeholder(np.ones(a.shape, a.dtype), f"grad_out{i}"))
        bw_inputs = rec.graph.placeholders[len(fw.placeholders):]
        from ember._tensor import Tensor

        grads = grad([out_leaves[i] for i in diff_outputs], [inputs[i] for i in diff_inputs],
                     [Tensor._make(u) for u in ups], allow_unused=True)
        bw_nodes = rec.graph.nodes[boundary:]
        bw_outs = [None if g is None else _output_value(rec, g, copy_into=bw_nodes)
                   for g in grads]
        bw = Graph(list(bw_inputs), bw_nodes, bw_outs)
    elif meta["diff_outputs"]:
        meta["diff_outputs"] = set()
    written = {id(r) for r in _written_roots(fw)}
    meta["written"] = [i for i, v in enumerate(fw.placeholders) if id(v) in written]
    saved = _saved_values(fw, bw) if bw is not None else ()
    if bw is not None:
        bw.placeholders = bw.placeholders + list(saved)
    meta["graphs"] = (fw, bw, saved)
    return meta


def _output_value(rec: Recorder, t, copy_into: list | None = None) -> Value:
    """The Value of an output tensor. A constant (made without recorded calls) is copied, and
    so is a gradient that is an input of the backward program: the caller owns what a call
    returns. (A forward output viewing an input stays a view; ``run`` makes it one.)"""
    v = rec.value_of(t._data)
    if v.root().kind == "result" or copy_into is None and v.root().kind == "placeholder":
        return v
    copy = Value(rec._new_name("out"), v.shape, v.dtype)
    copy.storage = copy
    (copy_into if copy_into is not None else rec.graph.nodes).append(
        Node(("function", np.copy), (v,), {}, (copy,), context="output"))
    return copy


def _written_roots(graph: Graph) -> list:
    return [w.root() for n in graph.nodes for w in n.writes]


def _saved_values(fw: Graph, bw: Graph) -> tuple:
    """The forward's values (results and placeholders) that the backward program reads."""
    defined = {id(v) for v in fw.placeholders}
    for n in fw.nodes:
        defined.update(id(v) for v in n.outputs)
    saved, seen = [], set()
    for n in bw.nodes:
        for v in n.inputs():
            if id(v) in defined and id(v) not in seen:
                seen.add(id(v))
                saved.append(v)
    for v in bw.outputs:
        if v is not None and id(v) in defined and id(v) not in seen:
            seen.add(id(v))
            saved.append(v)
    return tuple(saved)
