"""Module backward hooks: an identity Function around a module's tensor inputs and outputs.

As in torch (``torch/utils/hooks.py``): ``BackwardHookFunction`` wraps the module's inputs and
outputs; a post-hook on the outputs' node captures ``grad_output`` (and runs the backward
pre-hooks), a post-hook on the inputs' node sees ``grad_input`` and runs the full backward hooks.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict

from ember._tensor import Tensor
from ember.autograd.function import Function
from ember.autograd.grad_mode import STATE
from ember.utils.hooks import RemovableHandle

# Hooks common to all modules (torch's ``register_module_*_hook``), meant for debugging.
_global_forward_pre_hooks: OrderedDict = OrderedDict()
_global_forward_hooks: OrderedDict = OrderedDict()
_global_forward_hooks_with_kwargs: OrderedDict = OrderedDict()
_global_forward_hooks_always_called: OrderedDict = OrderedDict()
_global_backward_pre_hooks: OrderedDict = OrderedDict()
_global_backward_hooks: OrderedDict = OrderedDict()
_global_is_full = [None]  # True: full backward hooks, False: legacy ones
_global_buffer_registration_hooks: OrderedDict = OrderedDict()
_global_module_registration_hooks: OrderedDict = OrderedDict()
_global_parameter_registration_hooks: OrderedDict = OrderedDict()


def any_global_call_hooks() -> bool:
    return bool(_global_forward_pre_hooks or _global_forward_hooks
                or _global_backward_pre_hooks or _global_backward_hooks)


def register_module_forward_pre_hook(hook) -> RemovableHandle:
    """A forward pre-hook run before every module's own ones."""
    return RemovableHandle.add(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook, *, with_kwargs: bool = False,
                                 always_call: bool = False) -> RemovableHandle:
    """A forward hook run before every module's own ones."""
    handle = RemovableHandle(_global_forward_hooks,
                             extra_dict=_global_forward_hooks_always_called)
    _global_forward_hooks[handle.id] = hook
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


def _global_backward(hook, full: bool) -> RemovableHandle:
    if _global_is_full[0] is (not full):
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a "
                           "global Module hook. Please use only one of them.")
    _global_is_full[0] = full
    return RemovableHandle.add(_global_backward_hooks, hook)


def register_module_backward_hook(hook) -> RemovableHandle:
    return _global_backward(hook, False)


def register_module_full_backward_hook(hook) -> RemovableHandle:
    return _global_backward(hook, True)


def register_module_full_backward_pre_hook(hook) -> RemovableHandle:
    return RemovableHandle.add(_global_backward_pre_hooks, hook)


def register_module_buffer_registration_hook(hook) -> RemovableHandle:
    """``hook(module, name, buffer)`` on every buffer registration; may return a new buffer."""
    return RemovableHandle.add(_global_buffer_registration_hooks, hook)


def register_module_module_registration_hook(hook) -> RemovableHandle:
    """``hook(module, name, submodule)`` on every submodule registration."""
    return RemovableHandle.add(_global_module_registration_hooks, hook)


def register_module_parameter_registration_hook(hook) -> RemovableHandle:
    """``hook(module, name, param)`` on every parameter registration."""
    return RemovableHandle.add(_global_parameter_registration_hooks, hook)


def run_registration_hooks(hooks: OrderedDict, module, name: str, value):
    for hook in hooks.values():
        out = hook(module, name, value)
        if out is not None:
            value = out
    return value


class BackwardHookFunction(Function):
    """Identity on any number of tensors; its node is ``BackwardHookFunctionBackward``."""

    @staticmethod
    def forward(ctx, *args):
        outs = tuple(a.detach() for a in args)
        ctx.mark_non_differentiable(*[o for o, a in zip(outs, args) if not a.requires_grad])
        return outs

    @staticmethod
    def backward(ctx, *grads):
        return grads


def _pack_with_none(indices, values, size: int) -> tuple:
    res = [None] * size
    for idx, val in zip(indices, values):
        res[idx] = val
    return tuple(res)


class BackwardHook:
    """Links the gradients captured at a module's outputs with those at its inputs."""

    def __init__(self, module, user_hooks: list, user_pre_hooks: list) -> None:
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.module = module
        self.grad_outputs = None
        self.n_outputs = -1
        self.output_tensors_index = None
        self.n_inputs = -1
        self.input_tensors_index = None

    def _set_user_hook(self, grad_fn) -> None:
        def hook(grad_input, _):
            if self.grad_outputs is None:
                # The gradient reached the inputs without passing through the outputs
                # (e.g. a double backward): nothing to report.
                return None
            res = _pack_with_none(self.input_tensors_index, grad_input, self.n_inputs)
            for user_hook in self.user_hooks:
                out = user_hook(self.module, res, self.grad_outputs)
                if out is None:
                    continue
                if len(out) != len(res):
                    raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                       f"got {len(out)}, but expected {len(res)}")
                res = out
            self.grad_outputs = None
            return tuple(res[i] for i in self.input_tensors_index)

        grad_fn.register_hook(hook)

    def _apply_on_tensors(self, fn, args):
        tensors_idx = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        tensors = [args[i] for i in tensors_idx]
        if not (STATE.enabled and any(t.requires_grad for t in tensors)):
            return args, None
        new_tensors = BackwardHookFunction.apply(*tensors)
        grad_fns = [t.grad_fn for t in new_tensors if t.grad_fn is not None
                    and t.grad_fn.name() == "BackwardHookFunctionBackward"]
        fn(grad_fns[0])
        arg_list = list(args)
        for idx, val in zip(tensors_idx, new_tensors):
            arg_list[idx] = val
        out = tuple(arg_list) if type(args) is tuple else type(args)(*arg_list)
        return out, tensors_idx

    def setup_input_hook(self, args):
        res, input_idx = self._apply_on_tensors(self._set_user_hook, args)
        self.n_inputs = len(args)
        self.input_tensors_index = input_idx
        return res

    def _output_hook(self, _, grad_output):
        self.grad_outputs = _pack_with_none(self.output_tensors_index, grad_output,
                                            self.n_outputs)
        if self.user_pre_hooks:
            expected = len(self.grad_outputs)
            for pre_hook in self.user_pre_hooks:
                new = pre_hook(self.module, self.grad_outputs)
                if new is None:
                    continue
                if len(new) != expected:
                    raise RuntimeError("Backward pre hook returned an invalid number of "
                                       f"grad_output, got {len(new)}, but expected {expected}")
                self.grad_outputs = new
        local_grad_outputs = self.grad_outputs
        if self.input_tensors_index is None:
            warnings.warn("Full backward hook is firing when gradients are computed with "
                          "respect to module outputs since no inputs require gradients. See "
                          "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                          "#torch.nn.Module.register_full_backward_hook for more details.",
                          stacklevel=5)
            grad_inputs = _pack_with_none([], [], self.n_inputs)
            for user_hook in self.user_hooks:
                res = user_hook(self.module, grad_inputs, self.grad_outputs)
                if res is not None and not (isinstance(res, tuple)
                                            and all(el is None for el in res)):
                    raise RuntimeError("Backward hook for Modules where no input requires "
                                       "gradient should always return None or None for all "
                                       "gradients.")
            self.grad_outputs = None
        if local_grad_outputs is not None:
            return tuple(local_grad_outputs[i] for i in self.output_tensors_index)
        return None

    def setup_output_hook(self, args):
        is_tuple = isinstance(args, tuple)
        if not is_tuple:
            args = (args,)
        res, output_idx = self._apply_on_tensors(
            lambda grad_fn: grad_fn.register_hook(self._output_hook), args)
        self.n_outputs = len(args)
        self.output_tensors_index = output_idx
        return res if is_tuple else res[0]


def _always_called(module, hook_id: int) -> bool:
    """Whether a forward hook was registered with ``always_call=True`` (globally or not)."""
    return (hook_id in module._forward_hooks_always_called
            or hook_id in _global_forward_hooks_always_called)


def _call_forward_hook(module, hook_id: int, hook, args, kwargs, result):
    """Run one forward hook, with ``kwargs`` if it was registered ``with_kwargs=True``; a value
    it returns replaces the result."""
    if hook_id in module._forward_hooks_with_kwargs or \
            hook_id in _global_forward_hooks_with_kwargs:
        out = hook(module, args, kwargs, result)
    else:
        out = hook(module, args, result)
    return result if out is None else out


def call_with_hooks(module, forward_call, args, kwargs):
    """``Module.__call__`` when the module has hooks: torch's ``_call_impl`` order."""
    result = None
    called_always = set()

    def inner():
        nonlocal result, args, kwargs
        pre_hooks = [*_global_backward_pre_hooks.values(), *module._backward_pre_hooks.values()]
        full_hooks, non_full_hooks = [], []
        for owner, is_full in ((_global_backward_hooks, _global_is_full[0]),
                               (module._backward_hooks, module._is_full_backward_hook)):
            if owner:
                (full_hooks if is_full else non_full_hooks).extend(owner.values())
        for hook_id, hook in (*_global_forward_pre_hooks.items(),
                              *module._forward_pre_hooks.items()):
            if hook_id in module._forward_pre_hooks_with_kwargs:
                out = hook(module, args, kwargs)
                if out is not None:
                    if isinstance(out, tuple) and len(out) == 2:
                        args, kwargs = out
                    else:
                        raise RuntimeError("forward pre-hook must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {out}.")
            else:
                out = hook(module, args)
                if out is not None:
                    args = out if isinstance(out, tuple) else (out,)
        bw_hook = None
        if full_hooks or pre_hooks:
            bw_hook = BackwardHook(module, full_hooks, pre_hooks)
            args = bw_hook.setup_input_hook(args)
        result = forward_call(*args, **kwargs)
        for hook_id, hook in (*_global_forward_hooks.items(), *module._forward_hooks.items()):
            if _always_called(module, hook_id):
                called_always.add(hook_id)
            result = _call_forward_hook(module, hook_id, hook, args, kwargs, result)
        if bw_hook:
            if not isinstance(result, Tensor | tuple):
                warnings.warn("For backward hooks to be called, module output should be a "
                              "Tensor or a tuple of Tensors but received "
                              f"{type(result)}", stacklevel=2)
            result = bw_hook.setup_output_hook(result)
        if non_full_hooks:
            var = result
            while not isinstance(var, Tensor):
                var = next(v for v in var.values() if isinstance(v, Tensor)) \
                    if isinstance(var, dict) else var[0]
            if var.grad_fn is not None:
                for hook in non_full_hooks:
                    var.grad_fn.register_hook(_module_hook(hook, module))
                _warn_non_full(args, result, var.grad_fn)
        return result

    try:
        return inner()
    except Exception:
        for hook_id, hook in (*_global_forward_hooks.items(), *module._forward_hooks.items()):
            if hook_id in called_always or not _always_called(module, hook_id):
                continue
            try:
                result = _call_forward_hook(module, hook_id, hook, args, kwargs, result)
            except Exception as e:  # noqa: BLE001 - torch silences it, then re-raises
                warnings.warn("forward hook with ``always_call=True`` raised an exception that "
                              f"was silenced as another error was raised in forward: {e}",
                              stacklevel=2)
        raise


_NON_FULL = ("Using a non-full backward hook when {} is deprecated and will be removed in future "
             "versions. This hook will be missing some {}.")


def _warn_non_full(inputs, result, grad_fn) -> None:
    """torch's deprecation warnings for ``register_backward_hook`` on multi-node modules."""
    full = " Please use register_full_backward_hook to get the documented behavior."
    result = (result,) if isinstance(result, Tensor) else result
    if not (isinstance(result, tuple) and all(isinstance(r, Tensor) for r in result)):
        msg = ("Using non-full backward hooks on a Module that does not return a single Tensor "
               "or a tuple of Tensors is deprecated and will be removed in future versions. This "
               "hook will be missing some of the grad_output." + full)
    elif not all(isinstance(i, Tensor) for i in inputs):
        msg = ("Using non-full backward hooks on a Module that does not take as input a single "
               "Tensor or a tuple of Tensors is deprecated and will be removed in future "
               "versions. This hook will be missing some of the grad_input." + full)
    else:
        out_fns = {r.grad_fn for r in result if r.grad_fn is not None}
        if not out_fns or (len(out_fns) == 1 and grad_fn not in out_fns):
            msg = _NON_FULL.format("outputs are nested in python data structure", "grad_output")
        elif len(out_fns) > 1:
            msg = _NON_FULL.format("outputs are generated by different autograd Nodes",
                                   "grad_output") + full
        elif {i.grad_fn for i in inputs if i.grad_fn is not None} != \
                {n for n, _ in grad_fn.next_functions}:
            msg = _NON_FULL.format("the forward contains multiple autograd Nodes",
                                   "grad_input") + full
        else:
            return
    warnings.warn(msg, FutureWarning, stacklevel=4)


def _module_hook(hook, module):
    """A node post-hook that calls a legacy ``register_backward_hook`` hook with the module."""

    def wrapped(grad_input, grad_output):
        return hook(module, grad_input, grad_output)

    return wrapped


def _add_hook(hooks: OrderedDict, hook, prepend: bool = False, flags=()) -> RemovableHandle:
    """Add ``hook`` to a module's ``hooks`` dict and return its handle.

    ``flags`` are ``(flag_dict, on)`` pairs for the hook's options (``with_kwargs``,
    ``always_call``): the hook's id goes into each flag dict that is ``on``, and removing the
    handle takes it out of all of them. ``prepend`` makes the hook run first.
    """
    handle = RemovableHandle(hooks, extra_dict=[flag_dict for flag_dict, _ in flags])
    hooks[handle.id] = hook
    for flag_dict, on in flags:
        if on:
            flag_dict[handle.id] = True
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


_MIXED_HOOKS = ("Cannot use both regular backward hooks and full backward hooks on a single "
                "Module. Please use only one of them.")


class HookMixin:
    """Hook registration for ``Module`` (mixed into it)."""

    def register_forward_pre_hook(self, hook, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """``hook(module, args)`` (or ``(module, args, kwargs)``) before forward."""
        return _add_hook(self._forward_pre_hooks, hook, prepend,
                         [(self._forward_pre_hooks_with_kwargs, with_kwargs)])

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """``hook(module, args, output)`` after forward; a returned value replaces output."""
        return _add_hook(self._forward_hooks, hook, prepend,
                         [(self._forward_hooks_with_kwargs, with_kwargs),
                          (self._forward_hooks_always_called, always_call)])

    def register_full_backward_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(module, grad_output)`` before the module's gradients are computed."""
        return _add_hook(self._backward_pre_hooks, hook, prepend)

    def register_full_backward_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(module, grad_input, grad_output)``; a returned tuple replaces grad_input."""
        if self._is_full_backward_hook is False:
            raise RuntimeError(_MIXED_HOOKS)
        self._is_full_backward_hook = True
        return _add_hook(self._backward_hooks, hook, prepend)

    def register_backward_hook(self, hook) -> RemovableHandle:
        """Deprecated: a hook on the grad_fn of the module's output."""
        if self._is_full_backward_hook is True:
            raise RuntimeError(_MIXED_HOOKS)
        self._is_full_backward_hook = False
        return _add_hook(self._backward_hooks, hook)
