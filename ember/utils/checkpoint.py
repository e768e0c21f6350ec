"""Activation checkpointing: trade compute for memory by recomputing a block in backward.

``use_reentrant=False`` keeps the block's real graph but swaps every tensor it saves for a
placeholder (``saved_tensors_hooks``); the first time backward needs one, the block is re-run
under the original RNG state and the recomputed tensors are handed out in save order.
``use_reentrant=True`` wraps the block in one ``CheckpointFunction`` node that runs the block
without grad, and in backward re-runs it with grad and backpropagates through it.
Selective checkpointing (``create_selective_checkpoint_contexts``) lives in
``ember/utils/_selective_checkpoint.py``.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import Callable

from ember.autograd.function import Function
from ember.autograd.grad_mode import STATE, enable_grad, no_grad
from ember.autograd.graph import saved_tensors_hooks
from ember.utils._selective_checkpoint import (
    SAC_IGNORED_OPS,
    CheckpointPolicy,
    SelectiveCheckpointContext,
    _OpHook,
    create_selective_checkpoint_contexts,
)

for _cls in (CheckpointPolicy, SelectiveCheckpointContext):
    _cls.__module__ = __name__
create_selective_checkpoint_contexts.__module__ = __name__

# set_checkpoint_early_stop / set_checkpoint_debug_enabled: None defers to checkpoint's argument
_EARLY_STOP: list = [None]
_DEBUG: list = [None]


def _tensor(x) -> bool:
    from ember._tensor import Tensor

    return isinstance(x, Tensor)


class _RngState:
    """The global RNG state at construction, restorable around a recomputation."""

    def __init__(self, preserve: bool) -> None:
        from ember import get_rng_state

        self.state = get_rng_state() if preserve else None

    def __enter__(self) -> None:
        from ember import get_rng_state, set_rng_state

        if self.state is not None:
            self.outer = get_rng_state()
            set_rng_state(self.state)

    def __exit__(self, *exc) -> None:
        from ember import set_rng_state

        if self.state is not None:
            set_rng_state(self.outer)


def noop_context_fn():
    """The default ``context_fn``: two contexts that do nothing."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs: tuple) -> tuple:
    """The tensors of ``inputs`` detached, each keeping its ``requires_grad``."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    return tuple(a.detach().requires_grad_(a.requires_grad) if _tensor(a) else a
                 for a in inputs)


def check_backward_validity(inputs) -> None:
    """Warn when no tensor of ``inputs`` requires grad (the block would get no gradients)."""
    if not any(a.requires_grad for a in inputs if _tensor(a)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=2)


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):
    """Whether non-reentrant checkpoints made inside stop recomputing once they have what
    backward needs (overrides checkpoint's ``early_stop``). ember recomputes the whole block
    either way; the results are the same."""
    prev, _EARLY_STOP[0] = _EARLY_STOP[0], enable
    try:
        yield
    finally:
        _EARLY_STOP[0] = prev


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled: bool | None):
    """Override checkpoint's ``debug`` flag inside the block (None: defer to the flag)."""
    prev, _DEBUG[0] = _DEBUG[0], enabled
    try:
        yield
    finally:
        _DEBUG[0] = prev


class DefaultDeviceType:
    """The device type whose RNG states checkpointing saves when no input is on an
    accelerator: the current accelerator's, else "cpu", until ``set_device_type``."""

    _default_device_type: str | None = None

    @staticmethod
    def set_device_type(device: str = "cuda") -> None:
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type() -> str:
        if not DefaultDeviceType._default_device_type:
            from ember.accelerator import current_accelerator

            acc = current_accelerator(True)
            DefaultDeviceType._default_device_type = acc.type if acc is not None else "cpu"
        return DefaultDeviceType._default_device_type


def _flat_tensors(args) -> list:
    out = []
    for a in args:
        if isinstance(a, list | tuple):
            out.extend(_flat_tensors(a))
        elif isinstance(a, dict):
            out.extend(_flat_tensors(list(a.values())))
        elif _tensor(a):
            out.append(a)
    return out


def get_device_states(*args) -> tuple[list[int], list]:
    """The ids of the accelerators the tensors in ``args`` live on, and their RNG states."""
    import importlib

    tensors = [t for t in _flat_tensors(args) if t.device.type not in ("cpu", "meta")]
    ids = [t.get_device() for t in tensors]
    if not ids:
        return [], []
    module = importlib.import_module(f"ember.{tensors[0].device.type}")
    return ids, [module.get_rng_state(i) for i in ids]


def set_device_states(devices, states, *, device_type=None) -> None:
    """Restore the RNG ``states`` of accelerators ``devices`` (``get_device_states``'s)."""
    import importlib

    device_type = device_type or DefaultDeviceType.get_device_type()
    if device_type == "meta":
        return
    module = importlib.import_module(f"ember.{device_type}")
    for device, state in zip(devices, states):
        module.set_rng_state(state, device)


class _GroupState(threading.local):
    def __init__(self) -> None:
        self.group = None


_GROUP = _GroupState()


class GraphExecGroup:
    """The backward calls under one instance recompute each checkpointed region at most once
    (they must use disjoint parts of the graph). ember's non-reentrant checkpoint keeps what it
    recomputed for every later backward, so inside a group or not, a region is recomputed
    once."""

    def __enter__(self) -> GraphExecGroup:
        if _GROUP.group is not None:
            raise RuntimeError(f"GraphExecGroup contexts cannot be nested. Already inside group "
                               f"{_GROUP.group}")
        _GROUP.group = self
        return self

    def __exit__(self, *args) -> None:
        _GROUP.group = None

    @classmethod
    def _get_current_group(cls) -> GraphExecGroup | None:
        return _GROUP.group


class CheckpointFunction(Function):
    """The reentrant variant's node (``CheckpointFunctionBackward``, as in torch)."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        ctx.run_function = run_function
        ctx.rng = _RngState(preserve_rng_state)
        ctx.args = [None if _tensor(a) else a for a in args]
        ctx.save_for_backward(*[a for a in args if _tensor(a)])
        return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        from ember.autograd import backward

        saved = iter(ctx.saved_tensors)
        inputs = [a if a is not None else next(saved) for a in ctx.args]
        inputs = [a.detach().requires_grad_(a.requires_grad) if _tensor(a) else a
                  for a in inputs]
        with ctx.rng, enable_grad():
            outputs = ctx.run_function(*inputs)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads)
                 if _tensor(o) and o.requires_grad and g is not None]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is "
                               "not necessary")
        backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None, *[a.grad if _tensor(a) else None for a in inputs])


class CheckpointError(RuntimeError):
    """The recomputation did not save the same tensors as the original forward."""


def _meta(t) -> dict:
    return {"shape": t.shape, "dtype": t.dtype, "device": t.device}


class _Recompute:
    """State of one non-reentrant checkpoint: placeholders out, recomputed tensors back."""

    def __init__(self, fn, args, kwargs, preserve_rng_state: bool, recompute_ctx,
                 check: bool) -> None:
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.rng = _RngState(preserve_rng_state)
        self.recompute_ctx, self.check = recompute_ctx, check
        self.metas: list = []  # one per tensor saved in forward, to check the recomputation
        self.recomputed = None
        self.keep_graph = False
        self.pending = None  # selective checkpointing's list of what the running op saves

    def pack(self, t) -> int:
        self.metas.append(_meta(t))
        if self.pending is not None:
            self.pending.append(t)
        return len(self.metas) - 1

    def record(self, t) -> int:
        """Hand out ``t`` as the next tensor saved in the recomputation."""
        self.recomputed.append(t if self.keep_graph else t.detach())
        return len(self.recomputed) - 1

    def unpack(self, k: int):
        if self.recomputed is None:
            self.recomputed = []
            self.keep_graph = STATE.enabled  # create_graph: keep the recomputed history
            with self.rng, enable_grad(), self.recompute_ctx, saved_tensors_hooks(
                    self.record, self.recomputed.__getitem__):
                self.fn(*self.args, **self.kwargs)
            if self.check:
                self._check()
        return self.recomputed[k]

    def _check(self) -> None:
        if len(self.recomputed) != len(self.metas):
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the "
                f"original forward and recomputation.\nNumber of tensors saved during forward: "
                f"{len(self.metas)}\nNumber of tensors saved during recomputation: "
                f"{len(self.recomputed)}.")
        bad = "".join(
            f"tensor at position {i}:\nsaved metadata: {m}\nrecomputed metadata: {_meta(t)}\n"
            for i, (m, t) in enumerate(zip(self.metas, self.recomputed)) if m != _meta(t))
        if bad:
            raise CheckpointError("torch.utils.checkpoint: Recomputed values for the following "
                                  f"tensors have different metadata than during the forward "
                                  f"pass.\n{bad}.")


def checkpoint(function: Callable, *args, use_reentrant: bool | None = None,
               preserve_rng_state: bool = True, context_fn=noop_context_fn,
               determinism_check="default",
               debug: bool = False, early_stop: bool = True, **kwargs):
    """Run ``function(*args)`` without keeping its intermediates; recompute them in backward.

    >>> y = checkpoint(block, x, use_reentrant=False)   # same values and grads as block(x)
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
            "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
            "exception. use_reentrant=False is recommended, but if you need to preserve the "
            "current default behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.", UserWarning, stacklevel=2)
        use_reentrant = True
    if use_reentrant:
        if context_fn is not noop_context_fn or debug:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        if STATE.enabled and not any(_tensor(a) and a.requires_grad for a in args):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                          UserWarning, stacklevel=2)
            with no_grad():
                return function(*args)
        return CheckpointFunction.apply(function, preserve_rng_state, *args)
    fwd_ctx, recompute_ctx = context_fn()
    if determinism_check not in ("default", "none"):
        raise ValueError("determinism_check should be one of ['default', 'none'], but got "
                         f"{determinism_check}")
    frame = _Recompute(function, args, kwargs, preserve_rng_state, recompute_ctx,
                       determinism_check == "default")
    for ctx in (fwd_ctx, recompute_ctx):
        if isinstance(ctx, _OpHook):  # selective checkpointing's contexts
            ctx.frame = frame
    with fwd_ctx, saved_tensors_hooks(frame.pack, frame.unpack):
        return function(*args, **kwargs)


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None,
                          **kwargs):
    """Split a sequence of modules/functions into ``segments`` checkpointed chunks (the last
    chunk runs normally, as in torch)."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be "
            "passed explicitly. In version 2.9 we will raise an exception if use_reentrant is not "
            "passed. use_reentrant=False is recommended, but if you need to preserve the current "
            "default behavior, you can pass use_reentrant=True. Refer to docs for more details on"
            " the differences between the two variants.", UserWarning, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    functions = list(functions.children()) if hasattr(functions, "children") else list(functions)

    def run(start: int, end: int):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)


__all__ = ["CheckpointError", "CheckpointFunction", "CheckpointPolicy", "DefaultDeviceType",
           "GraphExecGroup", "SAC_IGNORED_OPS",
           "SelectiveCheckpointContext", "check_backward_validity", "checkpoint",
           "checkpoint_sequential", "create_selective_checkpoint_contexts", "detach_variable",
           "get_device_states", "noop_context_fn", "set_checkpoint_debug_enabled",
           "set_checkpoint_early_stop", "set_device_states"]
