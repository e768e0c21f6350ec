"""Guards: what a captured program assumes, as one hashable signature per call.

A program is valid for the same shapes, dtypes, strides, devices and ``requires_grad`` of the
tensor arguments and of the *roots* (the parameters, buffers, gradients and optimizer state the
function reaches: through the module it was compiled from, its closure, the globals it names,
or the object a bound method belongs to); the same Python values of the other arguments and
of the modules' plain attributes (``p`` of Dropout, ``eps``...) and the optimizers'
hyper-parameters; the same grad mode and autocast state; the same ``training`` flags; and no
hooks anywhere. Computing the signature is on every call's path, so the walk over modules is
planned once (``_Plan``) and only re-planned when the module tree or an attribute changes.
"""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor
from ember.amp import autocast_mode
from ember.autograd.grad_mode import STATE
from ember.nn.modules.module import Module
from ember.optim.optimizer import Optimizer

_KINDS = (Module, Optimizer, Tensor)

_PLAIN = (bool, int, float, str, type(None), tuple)
_MISSING = object()


def _tensor_key(t) -> tuple:
    a = t._data
    return (a.shape, a.dtype, a.strides, t._rg, type(a))


def _spec(obj, leaves: list):
    """The structure of the arguments with tensors taken out (into ``leaves``)."""
    if isinstance(obj, Tensor):
        leaves.append(obj)
        return _tensor_key(obj)
    if type(obj) in (tuple, list):
        return (type(obj), tuple(_spec(o, leaves) for o in obj))
    if type(obj) is dict:
        return (dict, tuple((k, _spec(v, leaves)) for k, v in obj.items()))
    if isinstance(obj, np.ndarray):
        return ("a", id(obj))
    try:
        hash(obj)
    except TypeError:
        return ("id", id(obj))
    return (type(obj), obj)


def _arg_key(args, kwargs, leaves: list):
    """The arguments' part of the signature; the common case (tensors only) in one pass."""
    if not kwargs and all(type(a) is Tensor for a in args):
        leaves.extend(args)
        return tuple(_tensor_key(a) for a in args)
    return _spec((args, kwargs), leaves)


def reached_objects(cf) -> list:
    """The modules, optimizers and tensors a compiled function can reach without arguments."""
    if cf.owner is not None:
        return [cf.owner]
    fn = cf.fn
    found = []
    bound = getattr(fn, "__self__", None)
    if isinstance(bound, _KINDS):
        found.append(bound)
    fn = getattr(fn, "__func__", fn)
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            obj = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if isinstance(obj, _KINDS):
            found.append(obj)
    # default arguments (``def f(x, m=model)``) are reached as closures are
    defaults = (*(getattr(fn, "__defaults__", None) or ()),
                *(getattr(fn, "__kwdefaults__", None) or {}).values())
    found.extend(obj for obj in defaults if isinstance(obj, _KINDS))
    code, glob = getattr(fn, "__code__", None), getattr(fn, "__globals__", {})
    for name in code.co_names if code is not None else ():
        obj = glob.get(name)
        if isinstance(obj, _KINDS):
            found.append(obj)
    return found


def _attributes(m) -> tuple:
    """A module's plain Python attributes: the program has their values baked in."""
    return tuple((k, v) for k, v in m.__dict__.items()
                 if isinstance(v, _PLAIN) and k != "training")


class _Plan:
    """The module tree and optimizers a compiled function reaches, walked once: per call,
    only the roots are read (and the tree checked for changes)."""

    def __init__(self, objects: list) -> None:
        self.objects = objects
        self.modules, self.optimizers, self.tensors = [], [], []
        seen: set = set()
        for k, obj in enumerate(objects):
            if isinstance(obj, Module):
                for name, m in obj.named_modules():
                    if id(m) not in seen:
                        seen.add(id(m))
                        self.modules.append((m, f"{name}." if name else "", len(m._modules),
                                             _attributes(m)))
            elif isinstance(obj, Optimizer):
                self.optimizers.append(obj)
            elif isinstance(obj, Tensor):
                self.tensors.append((f"t{k}", obj))

    def valid(self, objects: list) -> bool:
        if len(objects) != len(self.objects) or any(
                a is not b for a, b in zip(objects, self.objects)):
            return False
        for m, _, n, attrs in self.modules:
            if len(m._modules) != n:
                return False
            d = m.__dict__
            for k, v in attrs:
                if d.get(k, _MISSING) is not v and d.get(k, _MISSING) != v:
                    return False
        return True

    def roots(self) -> tuple:
        """(name, tensor) for every root now, and the modules' and optimizers' flags."""
        roots, flags, seen = [], [], set()
        for m, prefix, _, _ in self.modules:
            flags.append(m.training)
            flags.append(bool(m._forward_hooks or m._forward_pre_hooks or m._backward_hooks
                              or m._backward_pre_hooks))
            for group in (m._parameters, m._buffers):
                for name, t in group.items():
                    if t is not None and id(t) not in seen:
                        seen.add(id(t))
                        roots.append((prefix + name, t))
        for opt in self.optimizers:
            for g, group in enumerate(opt.param_groups):
                flags.append(tuple((k, v) for k, v in group.items()
                                   if k != "params" and isinstance(v, _PLAIN)))
                for i, p in enumerate(group["params"]):
                    for name, t in ((f"param_{g}_{i}", p), (f"grad_{g}_{i}", p._grad)):
                        if t is not None and id(t) not in seen:
                            seen.add(id(t))
                            roots.append((name, t))
                    for key, s in opt.state.get(p, {}).items():
                        if isinstance(s, Tensor) and id(s) not in seen:
                            seen.add(id(s))
                            roots.append((f"state_{g}_{i}_{key}", s))
        roots.extend(self.tensors)
        return roots, flags


def signature(cf, args, kwargs) -> tuple:
    """The cache key of a call, its tensor arguments (flattened), and the roots it reaches
    (name, tensor)."""
    leaves: list = []
    spec = _arg_key(args, kwargs, leaves)
    objects = reached_objects(cf)
    plan = cf.plan
    if plan is None or not plan.valid(objects):
        plan = cf.plan = _Plan(objects)
    roots, flags = plan.roots()
    ac = autocast_mode._state
    key = (spec, tuple(_tensor_key(t) for _, t in roots), tuple(flags), STATE.enabled,
           tuple(ac.enabled.values()), tuple(ac.dtype.values()))
    return key, leaves, roots


def has_hooks(cf, roots: list) -> str | None:
    """Why a region with these roots cannot be captured (hooks run Python), or None."""
    from ember.nn.modules import _hooks

    if _hooks.any_global_call_hooks():
        return "global module hooks are registered"
    for m, _, _, _ in cf.plan.modules:
        if m._forward_hooks or m._forward_pre_hooks or m._backward_hooks \
                or m._backward_pre_hooks:
            return f"module {type(m).__name__} has forward or backward hooks"
    for name, t in roots:
        aux = t._aux
        if aux is not None and (any((aux.hooks or {}).values()) or aux.post_acc_hooks):
            return f"tensor {name} has hooks"
    return None
