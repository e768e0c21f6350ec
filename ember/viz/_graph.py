"""The graph as data: nodes, edges, saved tensors, hooks and source snippets, all JSON-ready.

Node ``kind``: ``output`` (a tensor given to ``explore``), ``fn`` (a backward node, the
``grad_fn`` chain and the leaves' ``AccumulateGrad``) or ``leaf`` (a tensor that gets ``.grad``).
Edges point the way the forward ran, as in ``make_dot``: from ``src`` (an input's node) to
``dst`` (the node that used it), ``input`` being the place in ``dst.next_functions``.
"""

from __future__ import annotations

import inspect
import math
import os
import textwrap

import numpy as np

from ember.autograd.function import BackwardCFunction, OpNode
from ember.autograd.graph import FREED, OUT, PACKED, AccumulateGrad, Node, grad_accumulator

PREVIEW = 8  # values shown of a tensor


def dtype_name(dtype) -> str:
    return str(dtype).rsplit(".", 1)[-1]


def summary(t) -> dict | None:
    """Shape, dtype, norm, the first values and a NaN/inf marker of a tensor (None for None)."""
    if t is None:
        return None
    a = t._data
    if not isinstance(a, np.ndarray):
        a = t.detach().cpu().numpy()
    flat = a.reshape(-1)
    out = {"shape": list(a.shape), "dtype": dtype_name(t.dtype), "norm": None, "bad": None}
    if t.dtype.is_floating_point or t.dtype.is_complex:
        f = flat.astype(np.complex128 if t.dtype.is_complex else np.float64)
        norm = float(np.linalg.norm(f))
        if math.isfinite(norm):
            out["norm"] = norm
        elif np.isnan(f).any():
            out["bad"] = "nan"
        elif np.isinf(f).any():
            out["bad"] = "inf"
        vals = [f"{v:.4g}" for v in f[:PREVIEW].tolist()]
    else:
        vals = [str(v) for v in flat[:PREVIEW].tolist()]
    out["preview"] = "[" + ", ".join(vals) + (", …" if flat.size > PREVIEW else "") + "]"
    return out


def summaries(x) -> list:
    """``summary`` of each of a tensor, a sequence of them (None entries kept) or None."""
    from ember._tensor import Tensor

    if x is None or isinstance(x, Tensor):
        return [summary(x)]
    return [summary(g) for g in x]


# --- source snippets ---------------------------------------------------------------------------
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _where(path: str) -> str:
    """``ember/ops/pointwise.py`` for ember's files, a path relative to the cwd where shorter."""
    path = os.path.abspath(path)
    for base in (_ROOT, os.getcwd()):
        if path.startswith(base + os.sep):
            return os.path.relpath(path, base)
    return path


def snippet(obj) -> dict | None:
    """``{"file", "line", "code"}`` of a function's source, or None where inspect cannot."""
    obj = inspect.unwrap(obj) if callable(obj) else obj
    try:
        lines, start = inspect.getsourcelines(obj)
        path = inspect.getsourcefile(obj)
    except (OSError, TypeError):
        return None
    if path is None:
        return None
    return {"file": _where(path), "line": start, "code": textwrap.dedent("".join(lines)).rstrip()}


def sources(fn: Node) -> dict:
    """The forward (the op's or Function's) and backward code a node runs."""
    cls = getattr(type(fn), "_forward_cls", None)
    if cls is not None:
        return {"forward": snippet(cls.forward), "backward": snippet(cls.backward)}
    return {"forward": None, "backward": snippet(type(fn)._call)}


# --- saved tensors, attributes, hooks --------------------------------------------------------
def _saved_names(fn: Node, n: int) -> list:
    """An op's entries by its forward's argument names (torch's ``_saved_*`` use its own
    schema's), ``result`` and ``extra<i>``; ``saved_tensors[i]`` for a Function's."""
    cls = getattr(type(fn), "_forward_cls", None)
    if not isinstance(fn, OpNode) or cls is None:
        return [f"saved_tensors[{i}]" for i in range(n)]
    try:  # the names forward gives its inputs, as in the source shown beside them
        args = list(inspect.signature(cls.forward).parameters)[1:]
    except (TypeError, ValueError):
        args = []
    names = [args[i] if i < len(args) and not args[i].startswith("*") else f"input{i}"
             for i in cls.saves]
    if cls.saves_output:
        names.append("result")
    return names + [f"extra{i}" for i in range(n - len(names))]


def saved(fn: Node) -> dict:
    """``{"state": "live" | "freed" | "none", "tensors": [...]}`` for a node's saved tensors."""
    entries = fn._saved
    if entries is FREED:
        return {"state": "freed", "tensors": []}
    if not entries:
        return {"state": "none", "tensors": []}
    out = []
    for name, (t, version) in zip(_saved_names(fn, len(entries)), entries):
        row = {"name": name, "value": None, "version": None, "now": None, "note": None}
        if t is None:
            row["note"] = "not saved: no input whose gradient reads it requires grad"
        elif t is PACKED:
            row["note"] = f"packed by a saved_tensors_hooks pack hook ({type(version[0]).__name__})"
        elif t is OUT:
            data, vc, row["version"], _ = version
            from ember._tensor import Tensor
            row["value"], row["now"] = summary(Tensor._make(data)), vc[0]
        else:
            row["value"], row["version"], row["now"] = summary(t), version, t._vc[0]
        out.append(row)
    return {"state": "live", "tensors": out}


def attrs(fn: Node) -> dict:
    """What forward stashed on ctx besides tensors (``dim``, ``keepdim``, ...), as text."""
    out = {}
    for k, v in getattr(fn, "__dict__", {}).items():
        if not k.startswith("_") and k not in ("to_save", "needs_input_grad"):
            text = repr(v)
            out[k] = text if len(text) <= 120 else text[:117] + "..."
    return out


def _hook(kind: str, fn) -> dict:
    name = getattr(fn, "__qualname__", None) or type(fn).__name__
    return {"kind": kind, "name": name, "src": snippet(fn)}


def hooks(fn: Node) -> list:
    """The node's hooks, in the order the engine runs them."""
    out = []
    for nr, group in (fn._tensor_hooks or {}).items():
        out += [_hook(f"tensor hook (output {nr})", h) for h in group.values()]
    for nr in fn._retain_hooks or {}:
        out.append({"kind": f"retain_grad (output {nr})", "name": "retain_grad", "src": None})
    out += [_hook("pre-hook", h) for h in (fn._pre_hooks or {}).values()]
    out += [_hook("post-hook", h) for h in (fn._post_hooks or {}).values()]
    if isinstance(fn, AccumulateGrad):
        aux = fn.variable._aux
        post = getattr(aux, "post_acc_hooks", None) or {}
        out += [_hook("post-accumulate-grad hook", h) for h in post.values()]
    return out


# --- the walk ----------------------------------------------------------------------------------
def _size(shape) -> str:
    return "(" + ", ".join(str(int(s)) for s in shape) + ")"


class Graph:
    """Nodes and edges reachable from ``outputs``; ``ids`` maps each graph Node to its index."""

    def __init__(self, outputs: tuple, params: dict | None) -> None:
        self.names = {id(v): k for k, v in (params or {}).items()}
        self.nodes: list = []
        self.edges: list = []
        self.ids: dict = {}  # backward Node -> node index
        self.leaves: dict = {}  # id(tensor) -> node index
        self.sources: dict = {}
        self.tensors: list = []  # (leaf node, tensor, its AccumulateGrad node)
        for i, t in enumerate(outputs):
            self._output(t, i)

    def _add(self, kind: str, name: str, label: str, **kw) -> int:
        self.nodes.append({"id": len(self.nodes), "kind": kind, "name": name, "label": label,
                           "group": -1, **kw})
        return len(self.nodes) - 1

    def _output(self, t, i: int) -> None:
        label = f"output {i}\n{_size(t.shape)}" if t.grad_fn is not None or t.requires_grad \
            else f"output {i} (no grad)\n{_size(t.shape)}"
        out = self._add("output", f"output {i}", label, tensor=summary(t))
        root = t.grad_fn
        if root is None and t.requires_grad:
            root = grad_accumulator(t)
        if root is not None:
            self.edges.append({"src": self._walk(root), "dst": out, "input": 0,
                               "output_nr": t._output_nr if t.grad_fn is not None else 0})

    def _fn(self, fn: Node) -> int:
        key = type(fn).__qualname__ + "@" + type(fn).__module__
        if key not in self.sources:
            self.sources[key] = sources(fn)
        name = fn.name() if isinstance(fn, BackwardCFunction | OpNode) else type(fn).__name__
        label = type(fn).__name__
        if isinstance(fn, AccumulateGrad):
            label += "\n" + self.names.get(id(fn.variable), "") + " " + _size(fn.variable.shape)
        i = self._add("fn", name, label.strip(), seq=fn._seq if fn._seq < 2 ** 53 else None,
                      src=key, saved=saved(fn), attrs=attrs(fn), hooks=hooks(fn))
        self.ids[fn] = i
        return i

    def _leaf(self, fn: AccumulateGrad, acc: int) -> None:
        v = fn.variable
        name = self.names.get(id(v), "")
        i = self._add("leaf", name, f"{name}\n{_size(v.shape)}".strip(), tensor=summary(v))
        self.leaves[id(v)] = i
        self.tensors.append((i, v, acc))
        self.edges.append({"src": i, "dst": acc, "input": 0, "output_nr": 0})

    def _walk(self, root: Node) -> int:
        """Add ``root`` and all it reaches (iteratively: deep graphs need no recursion)."""
        if root in self.ids:
            return self.ids[root]
        first = self._fn(root)
        stack = [root]
        while stack:
            fn = stack.pop()
            dst = self.ids[fn]
            if isinstance(fn, AccumulateGrad):
                self._leaf(fn, dst)
            for k, (nxt, nr) in enumerate(fn.next_functions):
                if nxt is None:
                    continue
                if nxt not in self.ids:
                    self._fn(nxt)
                    stack.append(nxt)
                self.edges.append({"src": self.ids[nxt], "dst": dst, "input": k,
                                   "output_nr": nr})
        return first
