"""The runtime: guards, the cache of programs per signature, replay, and the autograd node.

A ``CompiledFunction`` keys each call on its signature (``guards.signature``). The first call
with a new signature runs eagerly (it may create state, like an optimizer's buffers); the
second captures (``capture``), builds the forward and backward programs (``program``) and
replays them; later calls only replay. Outputs that require grad hang off one
``CompiledFunctionBackward`` node, whose backward replays the backward program on the values
the forward saved. A signature that cannot be captured runs eagerly from then on.
"""

from __future__ import annotations

import logging
import os

from ember.autograd.grad_mode import STATE
from ember.autograd.graph import FREED, SECOND_BACKWARD, Node, grad_accumulator
from ember.compiler import guards
from ember.compiler.program import Program, build
from ember.compiler.traced import GraphBreak

_log = logging.getLogger("ember._dynamo")


def _limit() -> int:
    from ember._dynamo import config

    return config.recompile_limit


class Unsupported(RuntimeError):
    """What ``fullgraph=True`` raises where the function cannot be captured whole
    (torch._dynamo.exc.Unsupported)."""


class _Eager:
    """A cache entry: this signature runs eagerly (``reason`` says why)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


_WARMUP = object()  # a cache entry: seen once, eagerly; the next call captures


class CompiledFunction:
    """``fn`` compiled: called like ``fn``; replays a captured program per signature."""

    def __init__(self, fn, owner=None, *, fullgraph: bool = False,
                 cudagraphs: bool = False) -> None:
        self.fn = fn
        self.fullgraph = fullgraph
        self.cudagraphs = cudagraphs  # mode="reduce-overhead": GPU programs as CUDA graphs
        self.owner = owner  # the module whose forward this is, for parameters and names
        self.cache: dict = {}
        self.plan = None  # guards._Plan: the modules and optimizers it reaches, walked once
        self.recompiles = 0
        self.breaks: list = []  # reasons, for explain

    def __call__(self, *args, **kwargs):
        key, leaves, roots = guards.signature(self, args, kwargs)
        entry = self.cache.get(key)
        if type(entry) is Program:
            return entry.run(args, kwargs, leaves, roots)
        if entry is None:
            if len(self.cache) >= _limit():
                return self._over_limit(args, kwargs)
            self.cache[key] = _WARMUP
            return self.fn(*args, **kwargs)
        if entry is _WARMUP:
            entry = self._capture(key, args, kwargs, roots)
            if isinstance(entry, Program):
                return entry.run(args, kwargs, leaves, roots)
        return self.fn(*args, **kwargs)

    def _capture(self, key, args, kwargs, roots):
        try:
            entry = build(self, args, kwargs, roots)
        except GraphBreak as e:
            if self.fullgraph:
                raise Unsupported(str(e)) from None
            self.breaks.append(str(e))
            entry = _Eager(str(e))
        self.cache[key] = entry
        if isinstance(entry, Program) and "output_code" in os.environ.get("EMBER_LOGS", ""):
            print(entry.code())
        return entry

    def _over_limit(self, args, kwargs):
        if self.recompiles == 0:
            code = getattr(self.fn, "__code__", None)
            where = f"'{code.co_name}' ({code.co_filename}:{code.co_firstlineno})" if code \
                else repr(self.fn)
            _log.warning(
                "torch._dynamo hit config.recompile_limit (%s)\n   function: %s\n"
                "   last reason: a new signature (shapes, dtypes, flags or argument values)\n"
                'To log all recompilation reasons, use TORCH_LOGS="recompiles".\n'
                "To diagnose recompilation issues, see "
                "https://pytorch.org/docs/main/torch.compiler_troubleshooting.html",
                _limit(), where)
        self.recompiles += 1
        return self.fn(*args, **kwargs)

    def programs(self) -> list:
        return [e for e in self.cache.values() if isinstance(e, Program)]

    def reset(self) -> None:
        self.cache.clear()
        self.plan = None
        self.recompiles = 0
        self.breaks.clear()


class CompiledFunctionBackward(Node):
    """The one node of a compiled region's outputs (torch's name): its backward replays the
    backward program on the upstream gradients and the values the forward saved."""

    __slots__ = ("program", "saved_values", "rerun", "generation")

    def _call(self, grads: list) -> tuple:
        from ember._tensor import Tensor

        if self.saved_values is FREED:
            raise RuntimeError(SECOND_BACKWARD)
        if STATE.enabled:  # create_graph: differentiate the region eagerly instead
            return self.rerun(grads)
        res = self.program.run_backward(grads, self.saved_values, self.generation)
        return tuple(None if r is None else Tensor._make(r) for r in res)

    def _release(self) -> None:
        self.saved_values = FREED
        self.rerun = None


def edge(t) -> tuple:
    """The graph edge a compiled region's gradient for tensor ``t`` flows into."""
    if t._grad_fn is not None:
        return t._grad_fn, t._output_nr
    return grad_accumulator(t), 0


def _compiled_target(obj) -> tuple:
    """(fn, owner) for ``CompiledFunction``: a module compiles its call with its own
    parameters as roots."""
    from ember.nn.modules.module import Module

    if isinstance(obj, Module):
        return obj._call_impl, obj
    return obj, None


def compiled_function_of(obj) -> CompiledFunction:
    """The CompiledFunction behind what ``ember.compile`` or ``Module.compile`` returned."""
    if isinstance(obj, CompiledFunction):
        return obj
    for candidate in (getattr(obj, "_ember_compiled", None), getattr(obj, "forward", None),
                      getattr(obj, "_compiled_call_impl", None)):
        if isinstance(candidate, CompiledFunction):
            return candidate
    raise TypeError(f"{type(obj).__name__} was not made by ember.compile")
