"""``torch.func``: function transforms over ember's autograd.

``grad``, ``grad_and_value``, ``vjp`` and ``jacrev`` are reverse mode (``autograd.grad`` with
``create_graph``, so transforms compose: ``jacrev(jacrev(f))``, ``vmap(grad(f))``); ``jvp`` and
``jacfwd`` use the double-vjp identity (``J v`` is the gradient of ``<J^T u, v>`` in ``u``),
which nests without limit where torch's dual tensors allow one level; ``hessian`` is
``jacfwd(jacrev(f))``. ``vmap`` maps a function over a batch dimension by running it once on
BatchedTensors whose ops have batching rules (``_batched``, ``_batching_rules``), falling back
to one call per sample where the function reads a batched tensor's data; ``vmap(grad(f))``
gives per-sample gradients from one batched backward. ``functional_call`` and
``stack_module_state`` run a module with other parameters; ``functionalize``, ``rearrange``,
``debug_unwrap`` and ``replace_all_batch_norm_modules_`` are torch.func's helpers.
"""

from __future__ import annotations

from ember.func._functional_call import functional_call, stack_module_state
from ember.func._functionalize import functionalize
from ember.func._helpers import debug_unwrap, replace_all_batch_norm_modules_
from ember.func._rearrange import rearrange
from ember.func._transforms import (
    grad,
    grad_and_value,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    vjp,
)
from ember.func._vmap import vmap

__all__ = ["debug_unwrap", "functional_call", "functionalize", "grad", "grad_and_value",
           "hessian", "jacfwd", "jacrev", "jvp", "linearize", "rearrange",
           "replace_all_batch_norm_modules_", "stack_module_state", "vjp", "vmap"]
