"""Elementwise fusion for the GPU: runs of elementwise NumPy calls in a program become one
generated ``cupy.ElementwiseKernel`` each.

A run is consecutive fresh ufunc calls (no ``out=``) on arrays of one floating dtype, all of
one result shape, whose array inputs broadcast to it and whose other inputs are finite
numbers. The run's values that something after it reads (a later call, the program's outputs,
the values saved for backward) are the kernel's outputs; the others live in registers. The
kernel computes in ``float`` (``double`` for float64) and rounds once on the way out, as
torch's fused kernels do. ``FusedKernel`` builds the CuPy kernel on first use, so this module
imports without CuPy.
"""

from __future__ import annotations

import math

import numpy as np

from ember.compiler.ir import Graph, Node, Value

# ufunc name -> C expression of its operands {0}, {1} (in the compute type)
_C = {
    "add": "({0} + {1})", "subtract": "({0} - {1})", "multiply": "({0} * {1})",
    "divide": "({0} / {1})", "true_divide": "({0} / {1})", "negative": "(-{0})",
    "positive": "({0})", "square": "({0} * {0})", "reciprocal": "(({c})1 / {0})",
    "exp": "exp({0})", "expm1": "expm1({0})", "log": "log({0})", "log1p": "log1p({0})",
    "log2": "log2({0})", "sqrt": "sqrt({0})", "tanh": "tanh({0})", "sin": "sin({0})",
    "cos": "cos({0})", "absolute": "fabs({0})", "fabs": "fabs({0})", "power": "pow({0}, {1})",
    # NumPy's maximum/minimum propagate a NaN from either side
    "maximum": "(({0}) > ({1}) || ({0}) != ({0}) ? ({0}) : ({1}))",
    "minimum": "(({0}) < ({1}) || ({0}) != ({0}) ? ({0}) : ({1}))",
}
_CTYPE = {np.dtype(np.float16): "float", np.dtype(np.float32): "float",
          np.dtype(np.float64): "double"}
_CANON = {np.dtype(t): np.dtype(t) for t in (np.float16, np.float32, np.float64)}
_NAME = {np.dtype(np.float16): "float16", np.dtype(np.float32): "float32",
         np.dtype(np.float64): "float64"}


class FusedKernel:
    """One generated elementwise kernel: ``kernel(*inputs)`` returns its output (or a tuple
    of them). ``source`` is the CUDA C it runs, shown by ``show_code``."""

    def __init__(self, name: str, in_params: str, out_params: str, body: str, n_out: int):
        self.__name__ = name
        self.in_params, self.out_params, self.body = in_params, out_params, body
        self.n_out = n_out
        self._kernel = None

    def __call__(self, *arrays):
        if self._kernel is None:
            import cupy  # noqa: PLC0415 - only programs that run on the GPU get here

            self._kernel = cupy.ElementwiseKernel(self.in_params, self.out_params, self.body,
                                                  self.__name__)
        return self._kernel(*arrays)

    def __repr__(self) -> str:
        return f"FusedKernel({self.__name__}: {self.body})"


def _fusible(node: Node) -> np.dtype | None:
    """The dtype of a fresh elementwise call the generator can write, else None."""
    kind = node.kind
    if (kind[0] != "ufunc" or kind[2] != "__call__" or node.kwargs or len(node.outputs) != 1
            or node.writes or getattr(kind[1], "__name__", None) not in _C):
        return None
    out = node.outputs[0]
    if out.dtype is None or np.dtype(out.dtype) not in _CTYPE or not out.shape \
            or len(node.args) != kind[1].nin:
        return None
    dt = _CANON[np.dtype(out.dtype)]  # one object per dtype, compared with ``is``
    for a in node.args:
        if isinstance(a, Value):
            if a.dtype is None or np.dtype(a.dtype) != dt or len(a.shape) > len(out.shape):
                return None
        elif not (isinstance(a, int | float | np.floating) and not isinstance(a, bool)
                  and math.isfinite(float(a))):
            return None
    return dt


def _literal(x, ctype: str) -> str:
    return f"(({ctype}){float(x)!r})"


def _kernel_for(run: list, needed: set, n: int) -> Node | None:
    """The node calling one kernel for the run (None if the run reads none of its own)."""
    dt = np.dtype(run[0].outputs[0].dtype)
    ctype, made = _CTYPE[dt], {}
    inputs: list = []
    lines: list = []
    for k, node in enumerate(run):
        ops = []
        for a in node.args:
            if not isinstance(a, Value):
                ops.append(_literal(a, ctype))
            elif id(a) in made:
                ops.append(made[id(a)])
            else:
                if all(a is not b for b in inputs):
                    inputs.append(a)
                ops.append(f"(({ctype})in{next(i for i, b in enumerate(inputs) if b is a)})")
        expr = _C[node.kind[1].__name__].format(*ops, c=ctype)
        lines.append(f"{ctype} t{k} = {expr};")
        made[id(node.outputs[0])] = f"t{k}"
    outs = [nd.outputs[0] for nd in run if id(nd.outputs[0]) in needed]
    if not outs:
        return None
    lines += [f"out{i} = t{next(k for k, nd in enumerate(run) if nd.outputs[0] is v)};"
              for i, v in enumerate(outs)]
    ins = ", ".join(f"{_NAME[np.dtype(v.dtype)]} in{i}" for i, v in enumerate(inputs))
    outp = ", ".join(f"{_NAME[dt]} out{i}" for i in range(len(outs)))
    ops = "_".join(nd.kind[1].__name__ for nd in run)
    kernel = FusedKernel(f"ember_fused_{n}_{ops}"[:80], ins, outp, " ".join(lines), len(outs))
    context = run[0].context if all(nd.context == run[0].context for nd in run) else \
        f"fused: {run[0].context} .. {run[-1].context}"
    return Node(("function", kernel), tuple(inputs), {}, tuple(outs), context=context,
                tuple_result=len(outs) > 1)


def fuse_elementwise(graph: Graph, keep: tuple) -> int:
    """Replace each run of two or more fusible calls by one kernel call. Returns how many
    kernels were made."""
    read_by: dict = {}
    for i, node in enumerate(graph.nodes):
        for v in node.inputs():
            read_by.setdefault(id(v), []).append(i)
    kept = {id(v) for v in (*keep, *graph.outputs) if v is not None}
    out_nodes: list = []
    made = 0
    i = 0
    nodes = graph.nodes
    while i < len(nodes):
        dt = _fusible(nodes[i])
        j = i + 1
        shape = nodes[i].outputs[0].shape if dt is not None else None
        # (not ``_fusible(...) == dt``: NumPy's dtype equality reads None as float64)
        while dt is not None and j < len(nodes) and _fusible(nodes[j]) is dt \
                and nodes[j].outputs[0].shape == shape:
            j += 1
        if dt is None or j - i < 2:
            out_nodes.append(nodes[i])
            i += 1
            continue
        run = nodes[i:j]
        needed = {id(nd.outputs[0]) for nd in run
                  if id(nd.outputs[0]) in kept or any(r >= j for r in read_by.get(
                      id(nd.outputs[0]), ()))}
        node = _kernel_for(run, needed, made)
        if node is None:
            out_nodes.extend(run)
        else:
            out_nodes.append(node)
            made += 1
        i = j
    graph.nodes[:] = out_nodes
    return made
