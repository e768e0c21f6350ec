"""Capture: run a function once on real inputs with every array a ``Traced`` one, and record
the NumPy calls it makes — the forward, then (for outputs that require grad) a trial backward
through ember's own engine — into one ``ir.Graph``. Everything the run wrote in place (buffers,
the random generators) is restored afterwards: the first call's result comes from replaying
the program, like every later call's.
"""

from __future__ import annotations

import builtins
import sys

import numpy as np

from ember.compiler import traced
from ember.compiler.ir import Graph, Node, Value
from ember.compiler.traced import GraphBreak, Traced, plain

# np.* functions whose result is metadata, not data: called as they are, never recorded.
_STATIC = {np.shape, np.ndim, np.size, np.result_type, np.may_share_memory, np.shares_memory,
           np.iscomplexobj, np.isrealobj, np.can_cast, np.min_scalar_type, np.broadcast_shapes}
# Calls whose result's shape depends on the data: a replayed program could not follow them.
_DATA_SHAPED = {np.nonzero, np.flatnonzero, np.argwhere, np.unique, np.compress, np.extract,
                np.trim_zeros}
_WRITING_METHODS = {"__setitem__", "fill", "sort", "partition", "put", "resize"}


class Recorder:
    """Builds the graph while a capture runs (``traced.ACTIVE`` points here)."""

    def __init__(self, module_names: dict | None = None) -> None:
        self.graph = Graph()
        self.known: dict = {}  # id(array) -> Value, for every array seen
        self.keep: list = []  # the arrays behind ``known``: their ids must stay unique
        self.names: dict = {}
        self.used: set = set()  # every name handed out
        self.module_names = module_names or {}
        self.snapshots: dict = {}  # id(placeholder value) -> (array, copy before writes)
        self.plain: dict = {}  # id(plain array) -> (array, copy as the program last left it)
        self.generators: dict = {}  # id(generator) -> (generator, state before draws)

    # --- values -----------------------------------------------------------------------------
    def _new_name(self, hint: str) -> str:
        # Unique across hints too: hint "t" numbered 1 and a root named "t1" must not meet.
        while True:
            n = self.names.get(hint, 0)
            self.names[hint] = n + 1
            if hint[-1].isdigit():
                name = f"{hint}_{n}" if n else hint
            else:
                name = f"{hint}{n}" if n or hint in _RESERVED else hint
            if name not in self.used:
                self.used.add(name)
                return name

    def placeholder(self, array, hint: str) -> Traced:
        """A program input: returns the Traced view the captured code computes with."""
        v = Value(self._new_name(hint), array.shape, array.dtype, kind="placeholder")
        v.storage = v
        self.graph.placeholders.append(v)
        return self._register(plain(array).view(Traced), v)

    def _register(self, arr, v: Value):
        self.known[id(arr)] = v
        self.keep.append(arr)
        return arr

    def value_of(self, arr) -> Value:
        """The Value of an array the captured code handed to NumPy."""
        v = self.known.get(id(arr))
        if v is not None:
            if id(arr) in self.plain:
                self._unchanged(arr)
            return v
        base = arr.base
        while base is not None:  # a plain view NumPy made of a traced array (np.asarray)
            bv = self.known.get(id(base))
            if bv is not None and isinstance(base, np.ndarray) and _same_layout(arr, base):
                self._register(arr, bv)
                return bv
            base = getattr(base, "base", None)
        if isinstance(arr, Traced):
            raise GraphBreak(f"an array of unknown origin in {self.where()}")
        v = Value(self._new_name("c"), arr.shape, arr.dtype, kind="constant", const=arr)
        v.storage = v
        self._register(arr, v)
        self._remember(arr)
        return v

    # A plain array (one the captured code made before the capture, or holds in a cache) can
    # be written by code no recorder sees (``buf *= 2``). Its contents are remembered as the
    # program last left them and compared at each recorded use: a change is a graph break.
    def _remember(self, arr) -> None:
        self.plain[id(arr)] = (arr, arr.copy())

    def _unchanged(self, arr) -> None:
        _, copy = self.plain[id(arr)]
        if not np.array_equal(arr, copy, equal_nan=arr.dtype.kind in "fc"):
            raise GraphBreak("an array was changed by code the capture cannot see (a NumPy "
                             f"call on plain arrays only), in {self.where()}")

    def _symbolic(self, obj):
        if isinstance(obj, np.ndarray):
            return self.value_of(obj)
        if type(obj) in (tuple, list):
            return type(obj)(self._symbolic(o) for o in obj)
        if type(obj) is dict:
            return {k: self._symbolic(o) for k, o in obj.items()}
        if isinstance(obj, slice):
            return slice(*(self._symbolic(x) for x in (obj.start, obj.stop, obj.step)))
        return obj

    # --- calls ------------------------------------------------------------------------------
    def record(self, kind, args, kwargs, call):
        if kind[0] == "function" and kind[1] in _STATIC:
            return call(kind, traced.unwrap(args), traced.unwrap(kwargs))
        context = self.where()
        self._check_replayable(kind, args, context)
        for o in _out_arrays(kind, args, kwargs):
            self._allocation(o, context)
        sargs, skw = self._symbolic(args), self._symbolic(kwargs)
        writes = self._writes(kind, sargs, skw)
        for w in writes:
            self._before_write(w, context)
        plain_args = traced.unwrap(args)
        traced.ACTIVE[0] = None  # NumPy's own Python code inside the call runs plain
        try:
            result = call(kind, plain_args, traced.unwrap(kwargs))
        finally:
            traced.ACTIVE[0] = self
        for a in _written_arrays(kind, args, kwargs):
            if id(a) in self.plain:
                self._remember(a)
        if not writes and isinstance(result, np.ndarray):
            same = next((a for a, p in zip(args, plain_args) if p is result), None)
            if same is not None:  # an identity here (asarray of an array): no call to replay
                return same
        outs, res = self._outputs(kind, result, args, kwargs, writes, context)
        self.graph.nodes.append(Node(kind, sargs, skw, outs, writes, context,
                                     tuple_result=isinstance(result, tuple | list)))
        return res

    def fresh(self, arr) -> Traced:
        """An array the captured code made from Python data (``np.array([...])``), handed
        out Traced so that what is done to it is recorded. A scalar stays a constant (a write
        into it is a graph break); a table is, in the program, a copy of a constant, so that
        writes into it are replayed on a new copy each time."""
        if arr.size <= 1:  # a private copy, read-only: ``passes.simplify`` may fold it
            copy = arr.copy()
            copy.flags.writeable = False
            const = self.value_of(copy)
            return self._register(arr.view(Traced), const)
        const = self.value_of(arr.copy())
        v = Value(self._new_name("table"), arr.shape, arr.dtype)
        v.storage = v
        self.graph.nodes.append(Node(("function", np.copy), (const,), {}, (v,),
                                     context=self.where()))
        return self._register(arr.view(Traced), v)

    def _allocation(self, arr, context: str) -> None:
        """A plain array that owns its memory, first seen as the target of ``out=``: the
        captured code made it (``np.empty``) to fill it, so the program allocates it too."""
        if isinstance(arr, Traced) or id(arr) in self.known or arr.base is not None:
            return
        v = Value(self._new_name("buf"), arr.shape, arr.dtype)
        v.storage = v
        self.graph.nodes.append(Node(("function", np.empty), (arr.shape,),
                                     {"dtype": arr.dtype}, (v,), context=context))
        self._register(arr, v)
        self._remember(arr)

    def _check_replayable(self, kind, args, context: str) -> None:
        if kind[0] == "function" and kind[1] in _DATA_SHAPED or kind == ("method", "nonzero"):
            raise GraphBreak(f"{_call_name(kind)}: an output shape that depends on the data, "
                             f"in {context}")
        if kind == ("method", "__getitem__") or kind == ("method", "__setitem__"):
            keys = args[1] if isinstance(args[1], tuple) else (args[1],)
            if any(isinstance(k, np.ndarray) and k.dtype == bool for k in keys):
                raise GraphBreak("indexing with a boolean mask: an output shape that depends "
                                 f"on the data, in {context}")

    def _writes(self, kind, sargs, skw) -> tuple:
        if kind[0] == "ufunc":
            out = skw.get("out")
            if kind[2] == "at":
                return (sargs[0],)
            if out is None:
                return ()
            return tuple(o for o in (out if isinstance(out, tuple) else (out,))
                         if isinstance(o, Value))
        if kind[0] == "method" and kind[1] in _WRITING_METHODS:
            return (sargs[0],)
        if kind[0] == "function":
            out = skw.get("out")
            if isinstance(out, Value):
                return (out,)
            if kind[1] in (np.copyto, np.put, np.put_along_axis, np.place, np.putmask,
                           np.fill_diagonal) and isinstance(sargs[0], Value):
                return (sargs[0],)
        return ()

    def _before_write(self, v: Value, context: str) -> None:
        """Keep a copy of a placeholder's memory before the capture run first writes it."""
        root = v.root()
        if root.kind == "placeholder" and id(root) not in self.snapshots:
            arr = next(a for a in self.keep if self.known.get(id(a)) is root)
            self.snapshots[id(root)] = (plain(arr), plain(arr).copy())
        elif root.kind == "constant":
            raise GraphBreak(f"a write into an array of unknown origin in {context}")

    def _outputs(self, kind, result, args, kwargs, writes, context: str):
        """Values for what the call returned, and what the captured code gets back: a call
        with ``out=`` returns its (traced) out arrays themselves."""
        if result is None:
            return (), None
        outs_given = _out_arrays(kind, args, kwargs)
        if outs_given:
            vals = tuple(self.known[id(o)] for o in outs_given)
            return vals, (outs_given[0] if len(outs_given) == 1 else tuple(outs_given))
        many = isinstance(result, tuple | list)
        items = list(result) if many else [result]
        outs, back = [], []
        flat_in = list(_flat_arrays((args, kwargs)))
        for r in items:
            if not isinstance(r, np.ndarray | np.generic):
                raise GraphBreak(f"{_call_name(kind)} returned a Python {type(r).__name__} "
                                 f"computed from tensor data, in {context}")
            arr = traced._ORIGINAL["asarray"](r)
            v = Value(self._new_name(_hint(kind, context)), arr.shape, arr.dtype)
            v.storage = self._storage(arr, flat_in) or v
            outs.append(v)
            back.append(self._register(arr.view(Traced), v))
        if many:
            return tuple(outs), type(result)(back)
        return (outs[0],), back[0]

    def _storage(self, arr, inputs) -> Value | None:
        for a in inputs:
            if isinstance(a, np.ndarray) and a.size and np.may_share_memory(arr, plain(a)):
                return self.known[id(a)].root() if id(a) in self.known else None
        return None

    def random(self, generator, method: str, n: int):
        """A draw from one of ember's generators (``generator.<method>(n)``, run here outside
        the capture): replayed as the same draw, so the stream advances as in eager runs."""
        if id(generator) not in self.generators:
            self.generators[id(generator)] = (generator, generator._snapshot())
        traced.ACTIVE[0] = None
        try:
            result = getattr(generator, method)(n)
        finally:
            traced.ACTIVE[0] = self
        v = Value(self._new_name("rand"), result.shape, result.dtype)
        v.storage = v
        self.graph.nodes.append(Node(("random", generator, method), (n,), {}, (v,),
                                     context=self.where()))
        return self._register(result.view(Traced), v)

    def rollback(self) -> None:
        """Undo what the capture run wrote: placeholders' memory, generators' states."""
        for arr, copy in self.snapshots.values():
            np.copyto(arr, copy)
        for gen, state in self.generators.values():
            gen._restore(state)

    # --- where am I -------------------------------------------------------------------------
    def where(self) -> str:
        """The innermost module and op on the Python stack, e.g. ``net.0 (Linear) / Addmm``."""
        from ember.autograd.function import Function
        from ember.autograd.graph import Node

        op = mod = grad_node = None
        frame = sys._getframe(2)
        for _ in range(60):
            if frame is None:
                break
            loc = frame.f_locals
            name = frame.f_code.co_name
            if op is None and name in ("apply", "_apply_tracked"):
                cls = loc.get("cls")
                if isinstance(cls, type) and issubclass(cls, Function):
                    op = cls.__name__
            if grad_node is None and name == "_call" and isinstance(loc.get("self"), Node):
                grad_node = type(loc["self"]).__name__
                break  # in backward: the node being differentiated says where
            if mod is None:
                mod = self.module_names.get(id(loc.get("self")))
            frame = frame.f_back
        if grad_node is not None:
            return " / ".join(x for x in (grad_node, op) if x and x != grad_node[:len(x)])
        return " / ".join(x for x in (mod, op) if x)


_RESERVED = {"np", "c", "rand", "out", *dir(builtins)}


def _same_layout(a, b) -> bool:
    return (a.shape == b.shape and a.strides == b.strides
            and a.__array_interface__["data"][0] == b.__array_interface__["data"][0])


def _out_arrays(kind, args, kwargs) -> tuple:
    """The arrays a ufunc or np.* call was asked to write its results into (``out=``)."""
    if kind[0] not in ("ufunc", "function"):
        return ()
    out = kwargs.get("out")
    if out is None:
        return ()
    return tuple(o for o in (out if isinstance(out, tuple) else (out,))
                 if isinstance(o, np.ndarray))


def _written_arrays(kind, args, kwargs) -> tuple:
    """The arrays a call writes: its ``out=`` arrays, or the array a writing method is on."""
    if kind[0] == "method":
        return (args[0],) if kind[1] in _WRITING_METHODS else ()
    if kind[0] == "ufunc" and kind[2] == "at":
        return (args[0],)
    return _out_arrays(kind, args, kwargs)


def _flat_arrays(obj):
    if isinstance(obj, np.ndarray):
        yield obj
    elif isinstance(obj, tuple | list):
        for o in obj:
            yield from _flat_arrays(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _flat_arrays(o)


def _call_name(kind) -> str:
    if kind[0] == "ufunc":
        return kind[1].__name__ if kind[2] == "__call__" else f"{kind[1].__name__}.{kind[2]}"
    if kind[0] == "function":
        return kind[1].__name__
    return str(kind[1])


def _hint(kind, context: str) -> str:
    """A short name for a result: the op that made it, else the NumPy call."""
    op = context.rpartition("/ ")[2].strip()
    name = op if op and "(" not in op and "." not in op else _call_name(kind)
    return "".join(ch for ch in name.lower() if ch.isalnum() or ch == "_").strip("_") or "v"
