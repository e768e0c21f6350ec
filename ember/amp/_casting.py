"""Autocast's casts, applied where every call of a listed op passes: the op's function itself.

torch casts in its dispatcher, on the way to each op on its autocast lists. ember has no
dispatcher, so ``install`` replaces each listed function (``_lists.py``), in the module that
defines it and everywhere ember imported it, by a wrapper that costs one thread-local check
while no autocast region is on. Inside a region the wrapper casts the op's floating tensor
arguments by the op's policy, as torch's ``autocast_mode.cpp`` does:

- ``lower_precision_fp``: to the region's dtype (bfloat16 / float16);
- ``fp32``: to float32;
- ``promote``: to the widest floating type among them;

float64 tensors and tensors on another device are left alone. The op then runs with autocast
off, as torch excludes its autocast key while the op runs: what a listed op calls inside is
not cast again. A call with ``out=`` is not cast (torch's out= overloads are not on the lists).
Casts of float32 leaf tensors that require grad (the weights) are cached until the outermost
region exits, so a weight used by several ops is cast once and shares one ToCopyBackward0.
"""

from __future__ import annotations

import functools
import sys
import weakref

import numpy as np

from ember import _dtype
from ember._tensor import Tensor
from ember.amp import _lists
from ember.amp.autocast_mode import _state
from ember.compiler.traced import capturing
from ember.ops.pointwise import to_copy

# The modules of the names in _lists ("F.linear" -> ember.nn.functional.linear); other names
# are ember's ("mm", "Tensor.index_copy").
_NAMESPACES = {"F": "ember.nn.functional", "linalg": "ember.linalg", "nn": "ember.nn"}


def _device(args: tuple, kwargs: dict) -> str | None:
    """The device type of the op's first tensor argument (torch dispatches on it)."""
    for a in (*args, *kwargs.values()):
        if isinstance(a, list | tuple):
            a = next((t for t in a if isinstance(t, Tensor)), None)
        if isinstance(a, Tensor):
            return "cpu" if isinstance(a._data, np.ndarray) else "cuda"
    return None


def _eligible(t: Tensor, dev: str) -> bool:
    """Floating, not float64, on the region's device (torch's ``is_eligible``)."""
    d = t._data
    return (d.dtype.kind in "fV" and d.dtype.itemsize != 8  # float64
            and isinstance(d, np.ndarray) == (dev == "cpu"))


def _cast(t: Tensor, to: _dtype.dtype, dev: str):
    """``t`` in ``to`` when eligible; a float32 weight's cast to the region's dtype comes from
    (and goes to) the cache, as torch's ``cached_cast`` (not while ember.compile captures: its
    program must cast the weights it is given, not reuse this region's casts)."""
    if not isinstance(t, Tensor):
        return t
    dt = t.dtype
    if dt is to or not _eligible(t, dev):
        return t
    if (t._rg and t._grad_fn is None and t._base is None and dt is _dtype.float32
            and to is _state.dtype[dev] and _state.cache and not capturing()):
        hit = _state.casts.get(id(t))
        if hit is not None and hit[0]() is t and hit[1].dtype is to:
            return hit[1]
        cast = to_copy(t, to)
        _state.casts[id(t)] = (weakref.ref(t), cast)
        return cast
    return to_copy(t, to)


def _widest(args: tuple, kwargs: dict, dev: str) -> _dtype.dtype:
    """torch's ``promote_type``: float32 if any eligible input is, else the region's dtype;
    float64 inputs are ignored (and not cast)."""
    low = _state.dtype[dev]
    out = low
    for a in (*args, *kwargs.values()):
        for t in a if isinstance(a, list | tuple) else (a,):
            if isinstance(t, Tensor) and _eligible(t, dev):
                if out is _dtype.float32 or t.dtype is _dtype.float32:
                    out = _dtype.float32
                elif t.dtype is not low:
                    raise RuntimeError("Unexpected floating ScalarType in "
                                       "at::autocast::prioritize")
    return out


def _cast_all(value, to: _dtype.dtype, dev: str):
    if isinstance(value, list | tuple):
        return type(value)(_cast(v, to, dev) for v in value)
    if isinstance(value, dict):  # nn.LSTM's weights of a layer
        return {k: _cast(v, to, dev) for k, v in value.items()}
    return _cast(value, to, dev)


def _run(fn, policies: dict, args: tuple, kwargs: dict):
    """Call ``fn`` as its autocast policy says (the wrapper's slow path: a region is on)."""
    dev = _device(args, kwargs)
    policy = policies.get(dev)
    if policy is not None and not isinstance(policy, str):
        policy = policy(*args, **kwargs)
    if policy is None or not _state.enabled[dev] or kwargs.get("out") is not None:
        return fn(*args, **kwargs)
    if policy == "banned":
        raise RuntimeError(_BANNED)
    if policy == "fp32_set_opt_dtype":
        return _with_float32_dtype(fn, args, kwargs, dev)
    if policy == "lower_precision_fp":
        to = _state.dtype[dev]
    elif policy == "fp32":
        to = _dtype.float32
    else:
        to = _widest(args, kwargs, dev)
    args = tuple(_cast_all(a, to, dev) for a in args)
    kwargs = {k: _cast_all(v, to, dev) for k, v in kwargs.items()}
    return _unlisted(fn, args, kwargs)


def _unlisted(fn, args: tuple, kwargs: dict):
    """Run a listed op with autocast off, as torch excludes its autocast key while the op runs:
    what it calls inside is not cast again."""
    _state.on = False
    try:
        return fn(*args, **kwargs)
    finally:
        _state.on = True


_BANNED = (
    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using torch.nn.functional."
    "binary_cross_entropy_with_logits\nor torch.nn.BCEWithLogitsLoss.  "
    "binary_cross_entropy_with_logits and BCEWithLogits are\nsafe to autocast.")


def _with_float32_dtype(fn, args: tuple, kwargs: dict, dev: str):
    """torch's fp32_set_opt_dtype: a reduction or softmax whose first argument is eligible and
    that was given no dtype runs with ``dtype=float32`` (its input is not cast)."""
    first = args[0] if args else next(iter(kwargs.values()), None)
    given = kwargs.get("dtype") is not None or any(isinstance(a, _dtype.dtype) for a in args)
    if isinstance(first, Tensor) and _eligible(first, dev) and not given:
        kwargs = {**kwargs, "dtype": _dtype.float32}
    return _unlisted(fn, args, kwargs)


def _wrap(fn, policies: dict):
    @functools.wraps(fn)
    def autocast_op(*args, **kwargs):
        if _state.on:
            return _run(fn, policies, args, kwargs)
        return fn(*args, **kwargs)

    autocast_op._autocast_policies = policies
    return autocast_op


def _targets() -> dict:
    """id -> (function, its wrapper) for every listed op whose namespace is loaded and that is
    not wrapped yet: the public function, and what it wraps in turn (``out=``'s wrapper wraps
    the function that Tensor's method and ember's own modules call)."""
    swaps: dict = {}
    for name, policies in _lists.POLICIES.items():
        if "cpu" not in policies and not _CUDA[0]:
            continue  # a CUDA-only name: wrapped once a CUDA region is first entered
        path = name.split(".")
        mod = sys.modules.get(_NAMESPACES.get(path[0], "ember"))
        if mod is None:
            continue
        fn = mod
        for attr in path[1:] if path[0] in _NAMESPACES else path:
            fn = getattr(fn, attr, None)
        while fn is not None and not hasattr(fn, "_autocast_policies"):
            swaps.setdefault(id(fn), (fn, _wrap(fn, policies)))
            fn = getattr(fn, "__wrapped__", None)
    return swaps


def _swap(fn, swaps: dict):
    """The wrapper replacing ``fn``: its own, or a new one if ``fn`` wraps a listed function
    under another name (``ember.concat`` is ``cat`` with its ``out=``)."""
    hit = swaps.get(id(fn))
    if hit is None:
        inner = getattr(fn, "__wrapped__", None)
        found = swaps.get(id(inner)) if callable(fn) and inner is not None else None
        if found is None or found[0] is not inner or hasattr(fn, "_autocast_policies"):
            return None
        hit = swaps[id(fn)] = (fn, _wrap(fn, found[1]._autocast_policies))
    return hit


def _rebind(namespace: dict, swaps: dict, setter) -> None:
    for key, value in list(namespace.items()):
        inner = value.__func__ if isinstance(value, staticmethod) else value
        hit = _swap(inner, swaps)
        if hit is not None and hit[0] is inner:
            setter(key, staticmethod(hit[1]) if inner is not value else hit[1])


_CUDA = [False]  # whether the names on torch's CUDA lists alone are wrapped too


def install(cuda: bool = False) -> None:
    """Wrap the listed ops of every loaded namespace; point every reference in ember's loaded
    modules (globals, and class attributes such as Tensor's methods and layers' ``_fn``) at
    the wrappers. Called once each namespace is loaded: ember, ember.nn, ember.linalg. The
    ops on torch's CUDA lists alone (``sum``, ``exp``, ``pow``, ``softmax``, ...) are wrapped
    only from the first CUDA autocast region on (``cuda=True``): until then their calls pay
    no wrapper frame (about 0.3 us of a 5 us ``sum``)."""
    if cuda:
        if _CUDA[0]:
            return
        _CUDA[0] = True
    swaps = _targets()
    if not swaps:
        return
    for name, mod in list(sys.modules.items()):
        if mod is None or not (name == "ember" or name.startswith("ember.")):
            continue
        space = vars(mod)
        _rebind(space, swaps, space.__setitem__)
        for cls in list(space.values()):
            if isinstance(cls, type) and cls.__module__ == name:
                _rebind(dict(vars(cls)), swaps, functools.partial(setattr, cls))
    _rebind(dict(vars(Tensor)), swaps, functools.partial(setattr, Tensor))
