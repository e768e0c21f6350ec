"""Selective activation checkpointing (torch.utils.checkpoint's SAC), on ember's op hook.

``create_selective_checkpoint_contexts(policy)`` gives checkpoint's ``context_fn`` two
contexts. In forward, every primitive op the block runs (each ``Op.apply``) asks
``policy(ctx, op, *args, **kwargs)``; the outputs of ops to save are kept. In the
recomputation, those ops hand back their kept outputs instead of running again. torch passes
ATen ``OpOverload``s as ``op``; ember passes its primitive classes (``ember.ops.linalg.Mm``,
``ember.ops.pointwise.Sigmoid``, ...): a list of ops to save names those.

Both contexts take the op hook that ``Op.apply`` hands every op to (``function.PROFILER[0]``,
which the profiler and the ONNX recorder also use) and pass each op on to the hook they found.
An op whose output is kept also keeps the tensors it saved for backward (its inputs, most
often): torch's recomputation records the op's autograd node again, over recomputed inputs, and
ember hands the kept ones to checkpoint's recomputation in their place.
"""

from __future__ import annotations

import enum
from collections import defaultdict

from ember.autograd import function
from ember.autograd.graph import Node

_MISMATCH = ("This can happen if the operations in the checkpointed region are nondeterministic "
             "or depend on global state that changed between forward and backward.")
_RECOMPUTE, _CONSUMED = object(), object()

# Ops that selective checkpointing runs as usual, never caching nor counting them. torch lists
# its metadata queries (size, stride, is_contiguous, ...) and detach; in ember none of those is
# an op (they never reach Op.apply), so the set starts empty. Users may add op classes.
SAC_IGNORED_OPS: set = set()


class CheckpointPolicy(enum.Enum):
    """Whether selective checkpointing keeps an op's output (``*_SAVE``) or recomputes it
    (``*_RECOMPUTE``); ``MUST_*`` may not be overridden by other subsystems, ``PREFER_*``
    may. ``*_CPU_OFFLOAD`` keeps it too (ember's tensors already live on the host)."""

    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3
    MUST_CPU_OFFLOAD = 4
    PREFER_CPU_OFFLOAD = 5


_SAVING = (CheckpointPolicy.MUST_SAVE, CheckpointPolicy.PREFER_SAVE,
           CheckpointPolicy.MUST_CPU_OFFLOAD, CheckpointPolicy.PREFER_CPU_OFFLOAD)


class SelectiveCheckpointContext:
    """What a policy function gets besides the op: ``op_output`` (the op's result) and
    ``is_recompute`` (always False: the policy is only asked in forward)."""

    def __init__(self, *, is_recompute, op_output=None) -> None:
        self.is_recompute = is_recompute
        self.op_output = op_output


class _Kept:
    """A kept tensor, with its version, so a later in-place change to it is caught."""

    def __init__(self, val) -> None:
        self.val = val.detach() if hasattr(val, "_data") else val
        self.version = val._version if hasattr(val, "_data") else None

    def get(self, allow_mutation: bool):
        if self.version is not None and not allow_mutation and self.val._version != self.version:
            raise RuntimeError("Tensor cached during selective activation checkpoint has been "
                               "mutated")
        return self.val


class _OpHook:
    """Takes ``Op.apply``'s hook while active and runs each op through the hook it found.
    ``frame``: the checkpoint (``checkpoint._Recompute``) the contexts were given to."""

    frame = None

    def __enter__(self):
        self.outer, function.PROFILER[0] = function.PROFILER[0], self
        return self

    def __exit__(self, *exc) -> None:
        function.PROFILER[0] = self.outer

    def _run(self, cls, inputs, kw):
        function.PROFILER[0] = self.outer
        try:
            return cls.apply(*inputs, **kw)
        finally:
            function.PROFILER[0] = self

    def node(self, node, run, grads):  # the engine's hook: a backward node runs as usual
        return run(node, grads) if self.outer is None else self.outer.node(node, run, grads)


class _Caching(_OpHook):
    """Forward: run each op, ask the policy, keep the outputs to save."""

    def __init__(self, policy_fn, storage: dict) -> None:
        self.policy_fn, self.storage = policy_fn, storage
        self.counter: dict = defaultdict(int)

    def op(self, cls, inputs, kw):
        if cls in SAC_IGNORED_OPS:
            return self._run(cls, inputs, kw)
        frame = self.frame
        if frame is not None:
            frame.pending = []  # what the op saves for backward (checkpoint's pack hook)
        try:
            out = self._run(cls, inputs, kw)
        finally:
            saved = () if frame is None else tuple(frame.pending)
            if frame is not None:
                frame.pending = None
        idx = self.counter[cls]
        self.counter[cls] += 1
        policy = self.policy_fn(SelectiveCheckpointContext(is_recompute=False, op_output=out),
                                cls, *inputs, **kw)
        if isinstance(policy, bool):
            policy = CheckpointPolicy.MUST_SAVE if policy else CheckpointPolicy.PREFER_RECOMPUTE
        if policy in _SAVING:
            kept = tuple(map(_Kept, out)) if type(out) is tuple else _Kept(out)
            self.storage[cls][idx] = (kept, saved)
        else:
            self.storage[cls][idx] = _RECOMPUTE
        return out


class _Cached(_OpHook):
    """Recomputation: ops whose outputs were kept return them instead of running."""

    def __init__(self, storage: dict, allow_mutation: bool) -> None:
        self.storage, self.allow_mutation = storage, allow_mutation
        self.counter: dict = defaultdict(int)

    def __enter__(self):
        self.counter.clear()
        return super().__enter__()

    def op(self, cls, inputs, kw):
        if cls in SAC_IGNORED_OPS:
            return self._run(cls, inputs, kw)
        idx = self.counter[cls]
        self.counter[cls] += 1
        kept = self.storage.get(cls)
        if kept is None:
            raise RuntimeError(f"{cls.__name__} encountered during backward but not found in "
                               f"storage. {_MISMATCH}")
        entry = kept.get(idx)
        if entry is None:
            raise RuntimeError(f"{cls.__name__} invocation index {idx} encountered during "
                               f"backward but not found in storage. {_MISMATCH}")
        if entry is _CONSUMED:
            raise RuntimeError("Trying to backward an extra time. You are only allowed to "
                               "backward once on any region computed under selective "
                               "activation checkpoint.")
        if entry is _RECOMPUTE:
            return self._run(cls, inputs, kw)
        kept[idx] = _CONSUMED
        frame = self.frame
        if frame is not None and frame.keep_graph:  # create_graph: the recomputed graph is
            return self._run(cls, inputs, kw)  # kept for double backward, so the op runs
        out, saved = entry
        if frame is not None:
            for t in saved:
                frame.record(t)
        # the ops after it must record their nodes and saves as after the real op: the output
        # requires grad when an input does
        grad = any(t._rg for t in inputs)
        if type(out) is tuple:
            return tuple(_result(e.get(self.allow_mutation), grad) for e in out)
        return _result(out.get(self.allow_mutation), grad)


class _KeptOutput(Node):
    """The grad_fn of an output handed back in the recomputation. Checkpoint only reads what
    the recomputed graph saves (and detaches it), so this node never runs; it is there so the
    ops after it record as after the real op (an in-place op on it included)."""

    def __init__(self) -> None:
        self._init_node(())

    def _call(self, grads: list) -> tuple:
        raise RuntimeError("a selective checkpoint's recomputed graph is not differentiable")


def _result(t, grad: bool):
    from ember._tensor import Tensor

    if grad and t.is_floating_point():
        return Tensor._make(t._data, _KeptOutput())
    return t.detach()


def create_selective_checkpoint_contexts(policy_fn_or_list, allow_cache_entry_mutation=False):
    """The ``(forward, recompute)`` contexts for ``checkpoint(..., context_fn=...)`` that keep
    the outputs of the ops ``policy_fn_or_list`` picks (a policy function, or a list of ops:
    MUST_SAVE for those, PREFER_RECOMPUTE for the rest)."""
    from ember.autograd.function import Op

    if isinstance(policy_fn_or_list, list):
        for op in policy_fn_or_list:
            if not (isinstance(op, type) and issubclass(op, Op)):
                raise ValueError(f"Expected op in `op_list` to be an OpOverload but got: {op} "
                                 f"of type {type(op)}. ember's ops are its primitive classes "
                                 "(subclasses of ember.autograd.function.Op).")
        ops = policy_fn_or_list

        def policy_fn(ctx, op, *args, **kwargs):
            return CheckpointPolicy.MUST_SAVE if op in ops else CheckpointPolicy.PREFER_RECOMPUTE
    elif callable(policy_fn_or_list):
        policy_fn = policy_fn_or_list
    else:
        raise TypeError("policy_fn_or_list must be either a function or a list of ops.")
    storage: dict = defaultdict(dict)
    return _Caching(policy_fn, storage), _Cached(storage, allow_cache_entry_mutation)
