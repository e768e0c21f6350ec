"""ember's compiler: capture a function once, replay it as a flat NumPy program.

How data flows through it:

1. ``runtime.CompiledFunction`` is what ``ember.compile`` returns (wrapped for modules). Each
   call is keyed on its signature (``guards``): tensor shapes, dtypes, strides and flags,
   argument values, the parameters and state the function reaches, grad mode, ``training``.
2. ``capture.Recorder`` runs the function once (on the second call of a signature: the first
   runs eagerly, so that state such as optimizer buffers exists) with every input, parameter
   and result a ``traced.Traced`` array. ember's own code runs unchanged; every NumPy call it
   makes is recorded into an ``ir.Graph`` — the forward, then a trial backward through ember's
   engine for outputs that require grad (ahead-of-time autograd). Reading tensor data into
   Python, hooks, data-dependent shapes: a ``GraphBreak``, and the signature runs eagerly.
3. ``program.build`` splits the graph into a forward and a backward program (the backward
   reads values the forward saves), ``passes`` prune them, and ``codegen`` writes each as
   straight-line Python over NumPy calls (``show_code`` prints it).
4. ``program.Program.run`` replays: the forward program on the current arrays; outputs that
   require grad hang off one ``CompiledFunctionBackward`` node, which replays the backward
   program when ``backward()`` reaches it.
"""

from __future__ import annotations

import importlib

from ember.compiler.traced import GraphBreak

_COMPILED: list = []  # weak references to every CompiledFunction, for reset()
# Loaded on first use: ember's core imports ``traced`` (the random generators record draws
# through it), and must not pull in the rest of the compiler with it.
_LAZY = {"ExplainOutput": "introspect", "explain": "introspect", "show_code": "introspect",
         "CompiledFunction": "runtime", "Unsupported": "runtime"}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(f"ember.compiler.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'ember.compiler' has no attribute '{name}'")


def compile(*args, **kwargs):  # noqa: A001 - torch.compiler.compile
    """``ember.compile``."""
    from ember._compile import compile as compile_

    return compile_(*args, **kwargs)


def list_backends(exclude_tags: tuple = ("debug", "experimental")) -> list:
    from ember._compile import list_backends as backends

    return backends(exclude_tags)


def disable(fn=None, recursive: bool = True, *, reason: str | None = None):
    """Run ``fn`` eagerly: called while a function is captured, it breaks the graph (that
    signature runs eagerly), as torch.compiler.disable does. Usable as a decorator."""
    import functools

    from ember.compiler import traced

    if fn is None:
        return lambda f: disable(f, recursive, reason=reason)

    @functools.wraps(fn)
    def eager(*args, **kwargs):
        if traced.ACTIVE[0] is not None:
            raise GraphBreak(f"{getattr(fn, '__qualname__', fn)} is marked "
                             f"compiler.disable{f' ({reason})' if reason else ''}")
        return fn(*args, **kwargs)
    return eager


def cudagraph_mark_step_begin() -> None:
    """A no-op: ember records no CUDA graphs on the CPU."""


def reset() -> None:
    """Forget every captured program (torch.compiler.reset)."""
    for ref in _COMPILED:
        cf = ref()
        if cf is not None:
            cf.reset()


def is_compiling() -> bool:
    """Whether a capture is running (torch.compiler.is_compiling)."""
    from ember.compiler import traced

    return traced.ACTIVE[0] is not None


is_dynamo_compiling = is_compiling


__all__ = ["CompiledFunction", "ExplainOutput", "GraphBreak", "Unsupported", "compile",
           "cudagraph_mark_step_begin", "disable", "explain", "is_compiling",
           "is_dynamo_compiling", "list_backends", "reset", "show_code"]
