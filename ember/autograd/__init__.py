"""ember.autograd: backward(), grad(), Function, grad modes."""

from __future__ import annotations

from ember.autograd import functional, graph, profiler
from ember.autograd.anomaly_mode import detect_anomaly, set_detect_anomaly
from ember.autograd.engine import queue_callback, run_backward
from ember.autograd.function import Function, FunctionCtx, once_differentiable
from ember.autograd.grad_mode import (
    enable_grad,
    enforce_grad_layout_policy,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
    set_multithreading_enabled,
)
from ember.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck
from ember.autograd.trace import trace


def _seq(x) -> tuple:
    from ember._tensor import Tensor

    if x is None:
        return ()
    if isinstance(x, Tensor | graph.GradientEdge):
        return (x,)
    return tuple(x)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph: bool = False,
             grad_variables=None, inputs=None) -> None:
    """Accumulate gradients of ``tensors`` into the ``.grad`` of graph leaves."""
    tensors = _seq(tensors)
    grads = _seq(grad_tensors if grad_tensors is not None else grad_variables)
    if not grads:
        grads = (None,) * len(tensors)
    if len(grads) != len(tensors):
        raise RuntimeError(f"got {len(grads)} gradients for {len(tensors)} outputs")
    if retain_graph is None:
        retain_graph = create_graph
    ins = _seq(inputs) if inputs is not None else None
    if ins is not None and not ins:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    if create_graph and not _WARNED_CREATE_GRAPH:
        import warnings

        _WARNED_CREATE_GRAPH.append(True)  # torch warns once per process
        warnings.warn(
            "Using backward() with create_graph=True will create a reference cycle between the "
            "parameter and its gradient which can cause a memory leak. We recommend using "
            "autograd.grad when creating the graph to avoid this. If you have to use this "
            "function, make sure to reset the .grad fields of your parameters to None after use "
            "to break the cycle and avoid the leak.", UserWarning, stacklevel=2)
    run_backward(tensors, grads, retain_graph, create_graph, inputs=ins, accumulate=True)


_WARNED_CREATE_GRAPH: list = []


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph: bool = False,
         only_inputs: bool = True, allow_unused=None, is_grads_batched: bool = False,
         materialize_grads: bool = False) -> tuple:
    """Gradients of ``outputs`` w.r.t. ``inputs``, returned rather than stored in ``.grad``."""
    from ember._creation import zeros_like

    outputs = _seq(outputs)
    ins = _seq(inputs)
    grads = _seq(grad_outputs) or (None,) * len(outputs)
    if allow_unused is None:
        allow_unused = materialize_grads
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when "
                         "materialize_grads=True, but got: allow_unused=False.")
    if retain_graph is None:
        retain_graph = create_graph
    if is_grads_batched:
        return _batched_grad(outputs, ins, grads, retain_graph, create_graph, allow_unused,
                             materialize_grads)
    res = run_backward(outputs, grads, retain_graph, create_graph, inputs=ins, accumulate=False)
    if materialize_grads and any(r is None and isinstance(t, graph.GradientEdge)
                                 for r, t in zip(res, ins)):
        raise RuntimeError("materialize_grads cannot be used when the given input is a "
                           "GradientEdge")
    for i, r in enumerate(res):
        if r is None and not allow_unused:
            raise RuntimeError("One of the differentiated Tensors appears to not have been used "
                               "in the graph. Set allow_unused=True if this is the desired "
                               "behavior.")
        if r is None and materialize_grads:
            res[i] = zeros_like(ins[i])
    return tuple(res)


def _batched_grad(outputs, ins, grads, retain_graph, create_graph, allow_unused,
                  materialize_grads) -> tuple:
    """``is_grads_batched``: one vector-Jacobian product per row of the grad_outputs."""
    from ember import stack

    n = grads[0].shape[0]
    rows = [grad(outputs, ins, [g[k] for g in grads], retain_graph=True if k < n - 1 else
                 retain_graph, create_graph=create_graph, allow_unused=allow_unused,
                 materialize_grads=materialize_grads) for k in range(n)]
    return tuple(None if col[0] is None else stack(col) for col in zip(*rows))


class _ExecutionEngine:
    """``Variable._execution_engine``: the hook point torch exposes to run code at the end of
    a backward pass."""

    @staticmethod
    def queue_callback(callback) -> None:
        queue_callback(callback)


class Variable:
    """Legacy alias: ``Variable(t)`` returns ``t`` (requires_grad= honoured), as in torch."""

    _execution_engine = _ExecutionEngine()

    def __new__(cls, data, requires_grad: bool = False, volatile: bool = False):
        if requires_grad:
            data.requires_grad_(True)
        return data


__all__ = [
    "Function", "FunctionCtx", "GradcheckError", "Variable", "backward", "detect_anomaly",
    "enable_grad", "functional", "grad", "graph", "gradcheck", "gradgradcheck", "inference_mode",
    "is_grad_enabled", "no_grad", "profiler",
    "once_differentiable", "set_detect_anomaly", "set_grad_enabled", "trace",
    "set_multithreading_enabled", "enforce_grad_layout_policy",
]
