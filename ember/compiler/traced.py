"""The array type capture hands to ember's code, and how its NumPy calls are recorded.

While a function is captured, every array that holds a value of the program (an input, a
parameter, a result) is a ``Traced`` array: a NumPy subclass whose NumPy calls (ufuncs, ``np.*``
functions, array methods, indexing) run for real on plain arrays *and* go to the active
recorder (``capture.Recorder``). Reading a value into Python (``bool``, ``float``, ``item``,
``tolist``) cannot be recorded: it raises ``GraphBreak``, and the function runs eagerly.
Outside a capture, a ``Traced`` array left behind (held by the first call's graph) computes like
a plain one and hands back plain arrays.
"""

from __future__ import annotations

import numpy as np

ACTIVE: list = [None]  # the recorder of the capture in progress
_VIEW = np.ndarray.view  # Traced overrides .view (it is recorded)


class GraphBreak(Exception):
    """The captured code did something a flat program cannot replay."""


class Traced(np.ndarray):
    """A NumPy array whose NumPy calls are recorded while a capture is active."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _dispatch(("ufunc", ufunc, method), inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return _dispatch(("function", func), args, kwargs)

    def __getitem__(self, key):
        return _dispatch(("method", "__getitem__"), (self, key), {})

    def __setitem__(self, key, value) -> None:
        _dispatch(("method", "__setitem__"), (self, key, value), {})

    def __iter__(self):
        if not self.ndim:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(len(self)))

    @property
    def T(self):  # noqa: N802 - NumPy's name
        return _dispatch(("method", "transpose"), (self,), {})

    @property
    def mT(self):  # noqa: N802 - NumPy's name
        return _dispatch(("method", "swapaxes"), (self, -1, -2), {})

    def __repr__(self) -> str:
        return repr(plain(self)) if ACTIVE[0] is None else _data_read(self, "repr")


def _method(name: str):
    def method(self, *args, **kwargs):
        return _dispatch(("method", name), (self, *args), kwargs)
    method.__name__ = name
    return method


def _reader(name: str):
    """A method that turns values into Python objects: a graph break during capture."""
    base = getattr(np.ndarray, name)

    def method(self, *args, **kwargs):
        if ACTIVE[0] is None:
            return base(plain(self), *args, **kwargs)
        return _data_read(self, name)
    method.__name__ = name
    return method


def _data_read(a, name: str):
    raise GraphBreak(f"data-dependent Python: the value of a tensor was read ({name}) "
                     f"{_place()}")


def _place() -> str:
    where = ACTIVE[0].where()
    return f"in {where} at {caller()}" if where else f"at {caller()}"


def caller() -> str:
    """Where the captured code stands: the innermost frame outside ember (the user's line),
    and, when that is not where the data was read, the innermost frame inside ember."""
    import os
    import sys

    ember_dir = os.path.dirname(os.path.dirname(__file__))
    skip = (os.path.dirname(__file__), os.path.dirname(np.__file__))
    frame, inner = sys._getframe(1), None
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith(skip):
            if not name.startswith(ember_dir):
                break
            inner = inner or frame
        frame = frame.f_back
    where = "?" if frame is None else _frame(frame)
    return where if inner is None else f"{where}, via {_frame(inner)}"


def _frame(frame) -> str:
    return f"{frame.f_code.co_filename}:{frame.f_lineno} ({frame.f_code.co_name})"


# Array methods that compute, return views or write: recorded as calls on the value.
_RECORDED = (
    "all", "any", "argmax", "argmin", "argpartition", "argsort", "astype", "choose", "clip",
    "compress", "conj", "conjugate", "copy", "cumprod", "cumsum", "diagonal", "dot", "fill",
    "flatten", "max", "mean", "min", "nonzero", "partition", "prod", "put", "ravel", "repeat",
    "reshape", "resize", "round", "searchsorted", "sort", "squeeze", "std", "sum", "swapaxes",
    "take", "trace", "transpose", "var", "view", "__copy__", "__deepcopy__",
)
_READERS = ("item", "tolist", "tobytes", "__bool__", "__float__", "__int__", "__index__",
            "__complex__", "__str__", "__format__")
for _name in _RECORDED:
    setattr(Traced, _name, _method(_name))
for _name in _READERS:
    setattr(Traced, _name, _reader(_name))


def plain(a):
    """``a`` as a plain NumPy array (the same memory) if it is a Traced one."""
    return _VIEW(a, np.ndarray) if isinstance(a, Traced) else a


def unwrap(obj):
    """``obj`` with every Traced array inside tuples, lists and dicts made plain."""
    if isinstance(obj, Traced):
        return _VIEW(obj, np.ndarray)
    if type(obj) in (tuple, list):
        return type(obj)(unwrap(o) for o in obj)
    if type(obj) is dict:
        return {k: unwrap(v) for k, v in obj.items()}
    return obj


def _call(kind, args, kwargs):
    if kind[0] == "ufunc":
        fn = kind[1] if kind[2] == "__call__" else getattr(kind[1], kind[2])
        return fn(*args, **kwargs)
    if kind[0] == "function":
        return kind[1](*args, **kwargs)
    self, *rest = args
    return getattr(np.ndarray, kind[1])(self, *rest, **kwargs)


# NumPy's conversion and creation functions are C functions that hand back plain arrays
# without asking anyone (only ``like=`` dispatches). While a capture runs, ``numpy``'s
# attributes point at wrappers (``patch_numpy``): a conversion of a Traced array is recorded,
# and an array created from nothing is recorded as an allocation and handed out Traced, so
# that what the captured code then writes into it (``buf[i] = ...``) is recorded too.
_CONVERSIONS = ("asarray", "asanyarray", "ascontiguousarray", "asfortranarray", "array",
                "require")
_CREATIONS = ("empty", "zeros", "ones", "full", "arange", "eye", "identity", "linspace")
_ORIGINAL = {name: getattr(np, name) for name in _CONVERSIONS + _CREATIONS}


def _conversion(name: str):
    original = _ORIGINAL[name]

    def convert(a, *args, **kwargs):
        rec = ACTIVE[0]
        if rec is None:
            return original(a, *args, **kwargs)
        if isinstance(a, Traced):
            return _dispatch(("function", original), (a, *args), kwargs)
        out = original(a, *args, **kwargs)
        if isinstance(out, np.ndarray) and not (isinstance(a, np.ndarray)
                                                and np.may_share_memory(out, a)):
            return rec.fresh(out)  # a new array from Python data: the program makes it too
        return out
    convert.__name__ = name
    return convert


def _creation(name: str):
    original = _ORIGINAL[name]

    def create(*args, **kwargs):
        rec = ACTIVE[0]
        if rec is None or kwargs.get("like") is not None:  # like= dispatches by itself
            return original(*args, **kwargs)
        return rec.record(("function", original), args, kwargs, _call)
    create.__name__ = name
    return create


_WRAPPED = {**{name: _conversion(name) for name in _CONVERSIONS},
            **{name: _creation(name) for name in _CREATIONS}}


_UNPATCHED = {fn: _ORIGINAL[name] for name, fn in _WRAPPED.items()}


def patch_numpy(on: bool) -> None:
    """Point numpy's conversion and creation functions at the recording wrappers (or
    back)."""
    for name, fn in _WRAPPED.items():
        setattr(np, name, fn if on else _ORIGINAL[name])


def capturing() -> bool:
    """Whether ember.compile is capturing: op code that takes a fast path after looking at
    the data (``if mask.all(): ...``) takes its general path instead, which a replay can
    follow."""
    return ACTIVE[0] is not None


def refuse(what: str) -> None:
    """Under a capture, break the graph: ``what`` hands tensor data to Python (printing a
    tensor, ``Tensor.numpy()``)."""
    if ACTIVE[0] is not None:
        raise GraphBreak(f"{what} hands tensor data to Python, {_place()}")


def check(fn, *arrays) -> None:
    """Run ``fn(*arrays)``, a validation that raises on bad data (a target out of range,
    say); under a capture, also record it, so every replay checks its own data."""
    if ACTIVE[0] is None:
        fn(*arrays)
    else:
        _dispatch(("function", fn), arrays, {})


def record_function(fn, *args, **kwargs):
    """Call ``fn`` (a NumPy function that does not dispatch to subclasses) and record it."""
    return _dispatch(("function", fn), args, kwargs)


def _dispatch(kind, args, kwargs):
    if kind[0] == "function" and kind[1] in _UNPATCHED:
        # NumPy's like= dispatch looks the function up on the (patched) module
        kind = ("function", _UNPATCHED[kind[1]])
    rec = ACTIVE[0]
    if rec is None:
        return _call(kind, unwrap(args), unwrap(kwargs))
    return rec.record(kind, args, kwargs, _call)
