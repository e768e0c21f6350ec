"""The IR: a flat list of NumPy calls over named values, as torch.fx's Graph is over ops.

A ``Value`` is one array of the program: a placeholder (an input, a parameter, an upstream
gradient), a constant captured by reference, or the result of a ``Node``. A ``Node`` is one
recorded call — a ufunc (``np.add``, ``np.add.reduce``), an ``np.*`` function, an array
method (``v.reshape``, ``v.__setitem__``) or a random draw — with its arguments as a nested
structure of Values and plain Python objects. ``Graph.format`` prints a program as the Python
that ``codegen`` compiles.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False)
class Value:
    """One array of the program. ``storage`` is the value whose memory it views (itself if it
    owns its memory), so that writes through views are seen."""

    name: str
    shape: tuple = ()
    dtype: Any = None
    kind: str = "result"  # "placeholder", "constant" or "result"
    const: Any = None  # the array, for constants
    storage: Value | None = None

    def root(self) -> Value:
        v = self
        while v.storage is not None and v.storage is not v:
            v = v.storage
        return v

    def __repr__(self) -> str:
        return self.name


@dataclass(eq=False)
class Node:
    """One recorded call. ``kind`` is ("ufunc", ufunc, method), ("function", fn),
    ("method", name), ("random", generator, method), or ("alias",) (a persistent buffer
    standing for an allocation, see ``passes``); ``outputs`` are the Values it makes
    (a tuple when the call returns several); ``writes`` the Values it writes in place."""

    kind: tuple
    args: tuple
    kwargs: dict
    outputs: tuple
    writes: tuple = ()
    context: str = ""  # the module and op that made the call, for comments and names
    tuple_result: bool = False

    @property
    def effectful(self) -> bool:
        """Writes, draws random numbers, or returns nothing (a ``traced.check``): kept even
        when no value it makes is needed."""
        return bool(self.writes) or self.kind[0] == "random" or not self.outputs

    def inputs(self) -> list:
        """Every Value among the arguments, in order."""
        out: list = []
        _values((self.args, self.kwargs), out)
        return out


def _values(obj, out: list) -> None:
    if isinstance(obj, Value):
        out.append(obj)
    elif isinstance(obj, tuple | list):
        for o in obj:
            _values(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _values(o, out)
    elif isinstance(obj, slice):
        _values((obj.start, obj.stop, obj.step), out)


@dataclass(eq=False)
class Graph:
    """A program: placeholders in, nodes in order, outputs out."""

    placeholders: list = field(default_factory=list)
    nodes: list = field(default_factory=list)
    outputs: list = field(default_factory=list)  # Values (or None) returned, in order

    def format(self, name: str = "program") -> str:
        from ember.compiler.codegen import python_source

        return python_source(self, name)[0]

    def __str__(self) -> str:
        return self.format()
