"""``ember.autograd.trace()``: watch a backward pass as it runs.

Inside the block the engine reports, in order, every node it executes (with the shapes of the
gradients flowing in and out), every hook it fires, every gradient accumulated into a leaf's
``.grad`` (shape and norm) and every gradient captured by ``autograd.grad``. ``events`` holds
them as data; ``str(tr)`` (or ``tr.print()``) is a readable log.

>>> with ember.autograd.trace() as tr:
...     loss.backward()
>>> print(tr)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ember.autograd import graph


@dataclass
class Event:
    """One thing the engine did. ``kind`` is one of: node, tensor_hook, retain_grad, pre_hook,
    post_hook, accumulate, post_accumulate_grad_hook, capture."""

    step: int
    kind: str
    node: str
    output_nr: int | None = None
    hook: str | None = None
    grads_in: list = field(default_factory=list)
    grads_out: list = field(default_factory=list)
    norm: float | None = None
    replaced: bool = False

    def __str__(self) -> str:
        head = f"{self.step:3d}  {self.kind:<25} {self.node}"
        if self.kind == "node":
            return f"{head}  grads {_shapes(self.grads_in)} -> {_shapes(self.grads_out)}"
        if self.kind in ("accumulate", "capture"):
            out = f"[{self.output_nr}]" if self.kind == "capture" else ".grad"
            return f"{head}{out} {_shapes(self.grads_in)}  norm={self.norm:.6g}"
        where = f" output {self.output_nr}" if self.output_nr is not None else ""
        fn = f" {self.hook}" if self.hook else ""
        changed = " -> replaced " + _shapes(self.grads_out) if self.replaced else ""
        return f"{head}{where}{fn}  {_shapes(self.grads_in)}{changed}"


def _shape(g):
    return None if g is None else tuple(g.shape)


def _shapes(shapes) -> str:
    return "[" + ", ".join(str(s) for s in shapes) + "]"


def _norm(g) -> float:
    return float(np.linalg.norm(np.asarray(g._data, dtype=np.float64)))


def _many(x) -> list:
    from ember._tensor import Tensor

    if x is None or isinstance(x, Tensor):
        return [_shape(x)]
    return [_shape(g) for g in x]


class trace:
    """Context manager recording the backward passes run inside it (see module docstring)."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._names: dict = {}
        self._counts: dict = {}

    def __enter__(self) -> trace:
        self._prev = graph.LOCAL.trace
        graph.LOCAL.trace = self
        return self

    def __exit__(self, *exc) -> None:
        graph.LOCAL.trace = self._prev
        self._names = {}  # let the graph's nodes go

    def __str__(self) -> str:
        return "\n".join(str(e) for e in self.events)

    def print(self) -> None:
        print(self)

    def _name(self, node) -> str:
        """``MulBackward0#2``: the type name, numbered per type in order of first appearance."""
        name = self._names.get(node)
        if name is None:
            base = type(node).__name__
            k = self._counts[base] = self._counts.get(base, 0) + 1
            name = self._names[node] = f"{base}#{k}"
        return name

    def _add(self, kind: str, node, **kw) -> None:
        self.events.append(Event(len(self.events) + 1, kind, self._name(node), **kw))

    # --- called by the engine --------------------------------------------------------------
    def node(self, node, grads) -> None:
        self._add("node", node, grads_in=_many(grads))
        self._last_node = self.events[-1]

    def node_outputs(self, outs) -> None:
        self._last_node.grads_out = _many(outs)

    def hook(self, kind: str, node, fn, before, after, output_nr=None) -> None:
        name = getattr(fn, "__qualname__", type(fn).__name__) if fn is not None else None
        self._add(kind, node, output_nr=output_nr, hook=name, grads_in=_many(before),
                  grads_out=_many(after) if after is not None else [],
                  replaced=after is not None and kind not in ("retain_grad",))

    def accumulate(self, node, var) -> None:
        self._add("accumulate", node, grads_in=[_shape(var._grad)], norm=_norm(var._grad))

    def capture(self, node, output_nr: int, g) -> None:
        self._add("capture", node, output_nr=output_nr, grads_in=[_shape(g)], norm=_norm(g))

    def queue(self, node, sent, ready: list, buffers: dict) -> None:
        """The engine is done with ``node`` (None: before the first): ``sent`` went along its
        ``next_functions``, ``ready`` is the heap of ``(-seq, tick, node)`` still to run and
        ``buffers`` maps each waiting node to its input buffer. The log keeps none of it;
        ``ember.viz.explore``'s recorder snapshots it."""


__all__ = ["Event", "trace"]
