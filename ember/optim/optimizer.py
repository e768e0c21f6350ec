"""Optimizer: the base class every ember optimizer (and user optimizer) derives from.

Mirrors ``torch.optim.Optimizer``: ``param_groups`` (dicts of per-group options), ``state``
(keyed by parameter), ``zero_grad``, ``step(closure)``, ``add_param_group``, step hooks, and
``state_dict``/``load_state_dict`` in torch's exact structure (parameters as indices), so
optimizer checkpoints move between ember and torch.

Updates run on the raw NumPy arrays in place (``out=``-style ops, no autograd); each write to a
parameter bumps its version counter as torch's in-place ops do.
"""

from __future__ import annotations

import functools
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable
from copy import deepcopy
from itertools import chain
from typing import Any

import numpy as np

from ember import _dtype
from ember._tensor import Tensor
from ember.autograd.grad_mode import STATE, enable_grad
from ember.compiler.traced import capturing, record_function
from ember.utils.hooks import RemovableHandle

__all__ = ["Optimizer", "register_optimizer_step_post_hook", "register_optimizer_step_pre_hook",
           "required"]


class _RequiredParameter:
    """Singleton marking an option every param group must specify."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


def _typename(obj) -> str:
    """torch.typename: ``ember.FloatTensor`` for tensors, ``module.qualname`` otherwise."""
    if isinstance(obj, Tensor):
        return obj.type()
    cls = obj if isinstance(obj, type) else type(obj)
    module = getattr(cls, "__module__", "") or ""
    name = getattr(cls, "__qualname__", cls.__name__)
    return name if module in ("", "builtins") else f"{module}.{name}"


_global_pre_hooks: OrderedDict = OrderedDict()
_global_post_hooks: OrderedDict = OrderedDict()


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """``hook(optimizer, args, kwargs)`` runs before every optimizer's step."""
    return RemovableHandle.add(_global_pre_hooks, hook)


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """``hook(optimizer, args, kwargs)`` runs after every optimizer's step."""
    return RemovableHandle.add(_global_post_hooks, hook)


def _hooked_step(step: Callable, grad_off: bool) -> Callable:
    """Wrap a ``step`` so the optimizer's pre/post hooks run around it; ember's own optimizers
    also run with grad mode off (torch's ``_use_grad_for_differentiable``)."""

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        for hook in [*_global_pre_hooks.values(), *self._optimizer_step_pre_hooks.values()]:
            result = hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(f"{step} must return None or a tuple of (new_args, "
                                       f"new_kwargs), but got {result}.")
                args, kwargs = result
        if grad_off:
            prev = STATE.enabled
            STATE.enabled = bool(self.defaults.get("differentiable", False))
            try:
                out = step(self, *args, **kwargs)
            finally:
                STATE.enabled = prev
        else:
            out = step(self, *args, **kwargs)
        for hook in [*self._optimizer_step_post_hooks.values(), *_global_post_hooks.values()]:
            hook(self, args, kwargs)
        return out

    wrapper._hooked = True
    return wrapper


class Optimizer:
    """Base class for optimizers: ``Optimizer(params, defaults)``.

    ``params`` is an iterable of tensors, of ``(name, tensor)`` pairs, or of dicts (param groups
    with their own options); ``defaults`` holds the options a group does not specify.
    """

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_hooked", False):
            cls.step = _hooked_step(step, grad_off=cls.__module__.startswith("ember.optim."))

    def __init__(self, params, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._optimizer_step_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict = OrderedDict()
        self._optimizer_state_dict_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_state_dict_post_hooks: OrderedDict = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_load_state_dict_post_hooks: OrderedDict = OrderedDict()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + _typename(params))
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    # --- pickling / repr ------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state,
                "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        for name in ("step_pre", "step_post", "state_dict_pre", "state_dict_post",
                     "load_state_dict_pre", "load_state_dict_post"):
            self.__dict__.setdefault(f"_optimizer_{name}_hooks", OrderedDict())
        self.defaults.setdefault("differentiable", False)
        for group in self.param_groups:
            for key, value in self._group_fallbacks.items():
                group.setdefault(key, value)

    #: Options an old checkpoint's groups may lack, filled in on load (as torch's __setstate__).
    _group_fallbacks: dict[str, Any] = {}

    def __repr__(self) -> str:
        s = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        return s + ")"

    # --- param groups ---------------------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters (with its own options) to ``param_groups``."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        params = [p[1] if isinstance(p, tuple) else p for p in params]
        param_group["params"] = params
        if names:
            if len(names) != len(params):
                raise ValueError("all optimizer params should be with/without names. Some "
                                 "param names are missing")
            param_group["param_names"] = names
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(p))
            if not self.defaults.get("differentiable", None) and not (p.is_leaf
                                                                      or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)
        if len({id(p) for p in params}) != len(params):
            import warnings

            warnings.warn("optimizer contains a parameter group with duplicate parameters; in "
                          "future, this will cause an error; see "
                          "github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        seen: set[int] = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                txt = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {txt} to the optimizer")
        if not seen.isdisjoint(id(p) for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # --- gradients and steps --------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized tensors (to None by default)."""
        for group in self.param_groups:
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                if set_to_none:
                    p._grad = None
                else:
                    if g._grad_fn is not None:
                        g.detach_()
                    else:
                        g._rg = False
                    g._data[...] = 0
                    g._vc[0] += 1

    def step(self, closure: Callable[[], Any] | None = None):
        """Perform a single optimization step (subclasses implement this)."""
        raise NotImplementedError

    def _closure_loss(self, closure):
        if closure is None:
            return None
        with enable_grad():
            return closure()

    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` runs before each step; it may return new args."""
        return RemovableHandle.add(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` runs after each step."""
        return RemovableHandle.add(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False):
        return _add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False):
        return _add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False):
        return _add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False):
        return _add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # --- state dicts ----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """``{'state': {index: {...}}, 'param_groups': [{..., 'params': [indices]}]}``."""
        for hook in self._optimizer_state_dict_pre_hooks.values():
            hook(self)
        mapping: dict[int, int] = {}
        start = 0

        def pack(group):
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                mapping.setdefault(id(p), i)
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        groups = [pack(g) for g in self.param_groups]
        state = {(mapping[id(k)] if isinstance(k, Tensor) else k): v
                 for k, v in self.state.items()}
        sd = {"state": state, "param_groups": groups}
        for hook in self._optimizer_state_dict_post_hooks.values():
            result = hook(self, sd)
            if result is not None:
                sd = result
        return sd

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state dict made by ``state_dict()`` (here or in torch)."""
        state_dict = state_dict.copy()
        for hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = _cast(param, v, k, state_dict["param_groups"])
            else:
                state[k] = v
        for g, ng in zip(groups, saved_groups):
            ng["params"] = g["params"]
            if "param_names" in g and "param_names" not in ng:
                ng["param_names"] = g["param_names"]
        self.__setstate__({"state": state, "param_groups": saved_groups})
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)


def _add_hook(hooks: OrderedDict, hook: Callable, prepend: bool) -> RemovableHandle:
    handle = RemovableHandle.add(hooks, hook)
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


def _cast(param: Tensor, value, param_id, param_groups, key=None):
    """Copy loaded state onto ``param``: tensors go to its device, float ones take its dtype;
    ``step`` is kept as is (on the CPU) unless fused or capturable."""
    if isinstance(value, Tensor):
        if key == "step":
            fused = capturable = False
            for pg in param_groups:
                if param_id in pg["params"]:
                    fused, capturable = pg.get("fused", False), pg.get("capturable", False)
                    break
            return (value.to(dtype=_dtype.float32, device=param.device) if (fused or capturable)
                    else value)
        if param.is_floating_point():
            return value.to(dtype=param.dtype, device=param.device)
        return value.to(device=param.device)
    if isinstance(value, dict):
        return {k: _cast(param, v, param_id, param_groups, k) for k, v in value.items()}
    if isinstance(value, Iterable) and not isinstance(value, str | bytes):
        return type(value)(_cast(param, v, param_id, param_groups) for v in value)
    return value


# --- helpers shared by the optimizers -------------------------------------------------------
def scalar_float(x) -> float:
    """A hyper-parameter (Python number or 1-element tensor) as a Python float."""
    return float(x.item()) if isinstance(x, Tensor) else float(x)


def check_lr(lr) -> None:
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


def check_flags(fused, foreach, differentiable) -> None:
    """torch's checks on the implementation flags (``fused``/``foreach`` are speed hints here:
    ember runs the same NumPy update for all of them)."""
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    if differentiable:
        raise NotImplementedError("ember optimizers update parameters in place outside "
                                  "autograd; differentiable=True is not supported")


def check_capturable(group: dict, what: str = "params and state_steps",
                     xla: bool = False) -> None:
    """torch refuses ``capturable=True`` for CPU tensors (it is a CUDA-graph option); ``what``
    and ``xla`` (whether 'xla' ends its device list) follow each optimizer's wording."""
    if group.get("capturable"):
        devices = ["cuda", "xpu", "hpu", "privateuseone"] + (["xla"] if xla else [])
        raise AssertionError(f"If capturable=True, {what} must be on supported devices: "
                             f"{devices}.")


def step_tensor(value: float = 0.0) -> Tensor:
    """The 0-d ``step`` counter torch keeps in optimizer state (float32, or float64 default)."""
    dt = np.float64 if _dtype.get_default_dtype() is _dtype.float64 else np.float32
    return Tensor._make(np.array(value, dtype=dt))


def as_dtype(x, dt):
    """A scalar hyper-parameter derived in double precision (a Python float, NumPy float64,
    or a 0-d array under ember.compile) rounded to the parameter's scalar type ``dt``, as
    NumPy rounds a Python float it meets in float32 math."""
    return x.astype(dt) if isinstance(x, np.ndarray) else dt(x)


def bump_step(state: dict, traceable: bool = False):
    """``state['step'] += 1`` on the 0-d tensor; return the new count as a Python float.

    Under ember.compile's capture an optimizer whose update is written for it
    (``traceable``: it casts what it derives from the step to the parameter's dtype, as
    NumPy does a Python float) gets the count as a 0-d float64 array, so that each replay
    computes with its own step; any other optimizer runs eagerly there."""
    t = state["step"]
    t._data += 1
    t._vc[0] += 1
    if traceable and capturing():
        return t._data.astype(np.float64)
    return float(t._data)


def steps_to_tensors(opt: Optimizer, keys: tuple[str, ...] = ("step",)) -> None:
    """Old checkpoints store ``step`` (and other scalar ``keys``) as numbers; torch converts
    them to tensors on load."""
    for group in opt.param_groups:
        for p in group["params"]:
            st = opt.state.get(p)
            for key in keys:
                if st and key in st and not isinstance(st[key], Tensor):
                    st[key] = step_tensor(float(st[key]))


class Scratch:
    """Reusable work arrays, one per (shape, dtype, slot): a step allocates nothing after the
    first. Kept on the optimizer but outside ``state`` (so never in a state dict or pickle)."""

    def __init__(self) -> None:
        self.bufs: dict = {}

    def __call__(self, like: np.ndarray, slot: int) -> np.ndarray:
        if capturing():  # ember.compile: a buffer the program allocates (and frees) itself
            return np.empty(like.shape, like.dtype, like=like)
        key = (like.shape, like.dtype, slot)
        buf = self.bufs.get(key)
        if buf is None:
            buf = self.bufs[key] = np.empty(like.shape, like.dtype, like=like)
        return buf


def scratch_of(opt: Optimizer) -> Scratch:
    s = opt.__dict__.get("_scratch")
    if s is None:
        s = opt.__dict__["_scratch"] = Scratch()
    return s


def effective_grad(p: Tensor, maximize: bool, weight_decay: float, tmp: Scratch) -> np.ndarray:
    """``-grad`` if maximizing, plus ``weight_decay * param`` (torch's ``grad.add(p, alpha)``);
    written into scratch arrays, never into ``p.grad``."""
    g = p._grad._data
    if maximize:
        g = np.negative(g, out=tmp(g, 2))
    if weight_decay != 0:
        out = tmp(g, 3)
        np.multiply(p._data, weight_decay, out=out)
        out += g
        g = out
    return g


def lerp_(a: np.ndarray, b: np.ndarray, w: float, tmp: np.ndarray) -> None:
    """In-place ``a.lerp_(b, w)`` with torch's two-sided formula (exact at w near 0 and 1)."""
    np.subtract(b, a, out=tmp)
    if abs(w) < 0.5:
        tmp *= w
        a += tmp
    else:
        tmp *= 1 - w
        np.subtract(b, tmp, out=a)


def addcmul_(a: np.ndarray, t1: np.ndarray, t2: np.ndarray, value: float,
             tmp: np.ndarray) -> None:
    """In-place ``a + value * t1 * t2`` (torch's addcmul_ evaluation order)."""
    np.multiply(t1, value, out=tmp)
    tmp *= t2
    a += tmp


def addcdiv_(a: np.ndarray, t1: np.ndarray, t2: np.ndarray, value: float,
             tmp: np.ndarray) -> None:
    """In-place ``a + value * t1 / t2`` (torch's addcdiv_ evaluation order)."""
    np.multiply(t1, value, out=tmp)
    tmp /= t2
    a += tmp


_BLOCK = 1 << 15  # elements per block of a large update: the scratch block stays in cache


def add_(a: np.ndarray, b: np.ndarray, alpha: float, tmp: np.ndarray) -> None:
    """In-place ``a.add_(b, alpha=alpha)``."""
    if alpha == 1:  # exact shortcut: one pass instead of two
        a += b
        return
    if a.size <= 2 * _BLOCK or not (a.flags.c_contiguous and b.flags.c_contiguous):
        np.multiply(b, alpha, out=tmp)
        a += tmp
    elif capturing():  # ember.compile: one call in the program, blocked when it replays
        record_function(blocked_add, b, alpha, out=a)
    else:
        blocked_add(b, alpha, out=a)


def blocked_add(b, alpha: float, *, out) -> None:
    """``out += alpha * b`` for large contiguous arrays, block by block, so the product is
    read back from cache instead of memory (SGD's step on a 512x784 weight: ~30% faster; torch
    fuses the two into one pass). Bit for bit the two whole-array passes. On the GPU one pass
    each: blocks would only add kernel launches."""
    if type(out) is not np.ndarray:
        out += b * alpha
        return
    fa, fb = out.reshape(-1), b.reshape(-1)
    t = np.empty(min(_BLOCK, fa.size), fa.dtype)
    for i in range(0, fa.size, _BLOCK):
        j = min(i + _BLOCK, fa.size)
        np.multiply(fb[i:j], alpha, out=t[: j - i])
        fa[i:j] += t[: j - i]


def touch(t: Tensor) -> None:
    """Record an in-place write to ``t`` (torch bumps the version counter)."""
    t._vc[0] += 1
