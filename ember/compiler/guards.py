"""Guards: what a captured program assumes, as one hashable signature per call.

A program is valid for the same shapes, dtypes, strides, devices and ``requires_grad`` of the
tensor arguments and of the *roots* (the parameters, buffers, gradients and optimizer state the
function reaches: through the module it was compiled from, its closure, the globals it names,
or the object a bound method belongs to); the same Python values of the other arguments; the
same grad mode and autocast state; the same ``training`` flags; and no hooks anywhere.
"""

from __future__ import annotations

import numpy as np

from ember.autograd.grad_mode import STATE


def _tensor_key(t) -> tuple:
    a = t._data
    return (type(a), a.shape, a.dtype, a.strides, t._rg)


def _spec(obj, leaves: list):
    """The structure of the arguments with tensors taken out (into ``leaves``)."""
    from ember._tensor import Tensor

    if isinstance(obj, Tensor):
        leaves.append(obj)
        return ("T", _tensor_key(obj))
    if type(obj) in (tuple, list):
        return (type(obj).__name__, tuple(_spec(o, leaves) for o in obj))
    if type(obj) is dict:
        return ("d", tuple((k, _spec(v, leaves)) for k, v in obj.items()))
    if isinstance(obj, np.ndarray):
        return ("a", id(obj))
    try:
        hash(obj)
    except TypeError:
        return ("id", id(obj))
    return ("v", type(obj), obj)


def reached_objects(cf) -> list:
    """The modules, optimizers and tensors a compiled function can reach without arguments."""
    from ember._tensor import Tensor
    from ember.nn.modules.module import Module
    from ember.optim.optimizer import Optimizer

    kinds = (Module, Optimizer, Tensor)
    if cf.owner is not None:
        return [cf.owner]
    fn = cf.fn
    found = []
    bound = getattr(fn, "__self__", None)
    if isinstance(bound, kinds):
        found.append(bound)
    fn = getattr(fn, "__func__", fn)
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            obj = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if isinstance(obj, kinds):
            found.append(obj)
    code, glob = getattr(fn, "__code__", None), getattr(fn, "__globals__", {})
    for name in code.co_names if code is not None else ():
        obj = glob.get(name)
        if isinstance(obj, kinds):
            found.append(obj)
    return found


def roots_of(objects: list) -> tuple:
    """(name, tensor) for every root, and the flags of the modules among ``objects``."""
    from ember._tensor import Tensor
    from ember.nn.modules.module import Module
    from ember.optim.optimizer import Optimizer

    roots, flags, seen = [], [], set()

    def add(name, t):
        if t is not None and id(t) not in seen:
            seen.add(id(t))
            roots.append((name, t))

    for k, obj in enumerate(objects):
        if isinstance(obj, Module):
            for mname, m in obj.named_modules():
                flags.append((m.training, bool(m._forward_hooks or m._forward_pre_hooks
                                               or m._backward_hooks or m._backward_pre_hooks),
                              _attributes(m)))
                prefix = f"{mname}." if mname else ""
                for pname, p in m._parameters.items():
                    add(prefix + pname, p)
                for bname, b in m._buffers.items():
                    add(prefix + bname, b)
        elif isinstance(obj, Optimizer):
            for g, group in enumerate(obj.param_groups):
                flags.append(tuple((k, v) for k, v in group.items()
                                   if k != "params" and isinstance(v, _PLAIN)))
                for i, p in enumerate(group["params"]):
                    add(f"param_{g}_{i}", p)
                    add(f"grad_{g}_{i}", p._grad)
                    for key, s in obj.state.get(p, {}).items():
                        if isinstance(s, Tensor):
                            add(f"state_{g}_{i}_{key}", s)
        elif isinstance(obj, Tensor):
            add(f"t{k}", obj)
    return roots, tuple(flags)


_PLAIN = (bool, int, float, str, type(None), tuple)


def _attributes(m) -> tuple:
    """A module's plain Python attributes (``p`` of Dropout, ``eps``, ``stride``...): the
    program has their values baked in."""
    return tuple((k, v) for k, v in m.__dict__.items()
                 if isinstance(v, _PLAIN) and k != "training")


def signature(cf, args, kwargs) -> tuple:
    """The cache key of a call, and the roots (name, tensor) it reaches."""
    from ember.amp import autocast_mode

    leaves: list = []
    spec = _spec((args, kwargs), leaves)
    roots, flags = roots_of(reached_objects(cf))
    ac = autocast_mode._state
    key = (spec, tuple((n, _tensor_key(t)) for n, t in roots), flags, STATE.enabled,
           tuple(ac.enabled.items()), tuple(ac.dtype.items()))
    return key, roots


def has_hooks(roots: list, flags: tuple) -> str | None:
    """Why a region with these roots cannot be captured (hooks run Python), or None."""
    from ember.nn.modules import _hooks

    if _hooks.any_global_call_hooks():
        return "global module hooks are registered"
    if any(f[1] for f in flags if len(f) == 3 and isinstance(f[1], bool)):
        return "a module has forward or backward hooks"
    for name, t in roots:
        aux = t._aux
        if aux is not None and (any((aux.hooks or {}).values()) or aux.post_acc_hooks):
            return f"tensor {name} has hooks"
    return None
