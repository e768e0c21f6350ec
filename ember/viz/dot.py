"""See the autograd graph: ``make_dot`` (graphviz, torchviz's style) and ``print_graph`` (text).

Both walk ``grad_fn.next_functions`` from the output down to the leaves without recursion, so
graphs thousands of ops deep draw fine. ``make_dot`` needs the optional ``graphviz`` package;
``print_graph`` needs nothing.
"""

from __future__ import annotations

from ember._tensor import Tensor
from ember.autograd.function import BackwardCFunction
from ember.autograd.graph import FREED, OUT, PACKED, AccumulateGrad, Node

_NODE_ATTR = dict(style="filled", shape="box", align="left", fontsize="10", ranksep="0.1",
                  height="0.2", fontname="monospace")


def _size(shape) -> str:
    return "(" + ", ".join(str(int(s)) for s in shape) + ")"  # torchviz's "(3)" for 1-d


def _saved_named(fn: Node) -> list:
    """(name, tensor) for a node's live saved tensors; names follow torch's ``_saved_*``."""
    saved = fn._saved
    if not saved or saved is FREED:
        return []
    cls = getattr(type(fn), "_forward_cls", None)
    names = ["self", "other"] + [f"input{i}" for i in range(2, 8)]
    out = []
    for i, (t, version) in enumerate(saved):
        if t is None or t is PACKED:
            continue
        if t is OUT:
            t = Tensor._make(version[0])
            name = "result"
        elif isinstance(fn, BackwardCFunction) or cls is None or i >= len(cls.saves):
            name = ""
        else:
            name = names[cls.saves[i]] if cls.saves[i] < len(names) else f"saved{i}"
        out.append((name, t))
    return out


def _attrs(fn: Node) -> dict:
    attrs = {name or "saved": "[saved tensor]" for name, _ in _saved_named(fn)}
    for k, v in getattr(fn, "__dict__", {}).items():
        if not k.startswith("_") and k not in ("to_save", "needs_input_grad"):
            attrs[k] = str(v)
    return attrs


def _fn_label(fn: Node, show_attrs: bool, max_attr_chars: int) -> str:
    name = type(fn).__name__
    attrs = _attrs(fn) if show_attrs else {}
    if not attrs:
        return name
    max_attr_chars = max(max_attr_chars, 3)
    w1 = max(len(k) for k in attrs)
    w2 = min(max(len(v) for v in attrs.values()), max_attr_chars)
    sep = "-" * max(w1 + w2 + 2, len(name))

    def cut(s: str) -> str:
        return s[:w2 - 3] + "..." if len(s) > w2 else s
    return name + "\n" + sep + "\n" + "\n".join(f"{k:<{w1}}: {cut(v):>{w2}}"
                                                 for k, v in attrs.items())


def make_dot(var, params: dict | None = None, show_attrs: bool = False,
             show_saved: bool = False, max_attr_chars: int = 50):
    """A ``graphviz.Digraph`` of the graph that produced ``var`` (a tensor or tuple of them).

    Grey boxes are backward nodes; blue: leaves that will get ``.grad`` (named from
    ``params``); orange: saved tensors; green: the outputs.

    >>> make_dot(loss, params=dict(model.named_parameters())).render("graph", format="png")
    """
    try:
        from graphviz import Digraph
    except ImportError:
        raise ImportError("ember.viz.make_dot needs the graphviz Python package: "
                          "pip install graphviz (and the Graphviz 'dot' program to render "
                          "images)") from None
    param_map = {id(v): k for k, v in (params or {}).items()}
    dot = Digraph(node_attr=_NODE_ATTR, graph_attr=dict(size="12,12"))
    seen: set = set()
    keep: list = []  # saved outputs are rebuilt as tensors: keep them alive so ids stay unique

    def var_label(t, name: str | None = None) -> str:
        if not name:
            name = param_map.get(id(t), "")
        return f"{name}\n {_size(t.shape)}"

    def add_fn(root) -> None:
        stack = [root]
        while stack:
            fn = stack.pop()
            if fn in seen:
                continue
            seen.add(fn)
            saved = _saved_named(fn)
            if show_saved or isinstance(fn, BackwardCFunction):
                for name, t in saved:
                    keep.append(t)
                    seen.add(id(t))
                    dot.edge(str(id(fn)), str(id(t)), dir="none")
                    dot.node(str(id(t)), var_label(t, name), fillcolor="orange")
            if isinstance(fn, AccumulateGrad):
                v = fn.variable
                dot.node(str(id(v)), var_label(v), fillcolor="lightblue")
                dot.edge(str(id(v)), str(id(fn)))
            dot.node(str(id(fn)), _fn_label(fn, show_attrs, max_attr_chars))
            for nxt, _ in reversed(fn.next_functions):
                if nxt is not None:
                    dot.edge(str(id(nxt)), str(id(fn)))
                    stack.append(nxt)

    def add_tensor(t, color: str = "darkolivegreen1") -> None:
        if id(t) in seen:
            return
        seen.add(id(t))
        dot.node(str(id(t)), var_label(t), fillcolor=color)
        if t.grad_fn is not None:
            add_fn(t.grad_fn)
            dot.edge(str(id(t.grad_fn)), str(id(t)))
        if t._base is not None:
            add_tensor(t._base, color="darkolivegreen3")
            dot.edge(str(id(t._base)), str(id(t)), style="dotted")

    for t in var if isinstance(var, tuple | list) else (var,):
        add_tensor(t)
    size = max(12, len(dot.body) * 0.15)
    dot.graph_attr.update(size=f"{size},{size}")
    return dot


def graph_lines(var, params: dict | None = None) -> list[str]:
    """The graph as indented lines, output first; a node reached again is marked, not redrawn."""
    param_map = {id(v): k for k, v in (params or {}).items()}
    lines: list[str] = []
    seen: set = set()
    roots = var if isinstance(var, tuple | list) else (var,)
    stack = [(t.grad_fn, 0) for t in reversed(roots) if t.grad_fn is not None]
    for t in roots:
        if t.grad_fn is None:
            lines.append(f"{param_map.get(id(t), 'tensor')} {_size(t.shape)} (leaf, no graph)")
    while stack:
        fn, depth = stack.pop()
        label = type(fn).__name__
        if isinstance(fn, AccumulateGrad):
            v = fn.variable
            name = param_map.get(id(v))
            label += f" -> {name + ' ' if name else ''}{_size(v.shape)}"
        if fn in seen:
            lines.append("  " * depth + label + " (see above)")
            continue
        seen.add(fn)
        lines.append("  " * depth + label)
        stack.extend((n, depth + 1) for n, _ in reversed(fn.next_functions) if n is not None)
    return lines


def print_graph(var, params: dict | None = None) -> None:
    """Print the autograd graph behind ``var`` as an indented tree (no dependencies).

    >>> print_graph((x * w).sum())
    SumBackward0
      MulBackward0
        AccumulateGrad -> (3,)
        AccumulateGrad -> (3,)
    """
    print("\n".join(graph_lines(var, params)))


__all__ = ["graph_lines", "make_dot", "print_graph"]
