"""``torch.func``: function transforms over ember's autograd.

``grad``, ``grad_and_value``, ``vjp`` and ``jacrev`` are reverse mode (``autograd.grad`` with
``create_graph``, so transforms compose: ``jacrev(jacrev(f))``, ``vmap(grad(f))``); ``jvp`` and
``jacfwd`` use the double-vjp identity (``J v`` is the gradient of ``<J^T u, v>`` in ``u``),
which nests without limit where torch's dual tensors allow one level; ``hessian`` is
``jacfwd(jacrev(f))``. ``vmap`` maps a function over a batch dimension by running it on each
slice and stacking the results (ember has no batched kernels: see "Known differences").
``functional_call`` and ``stack_module_state`` run a module with other parameters.
"""

from __future__ import annotations

from ember.func._functional_call import functional_call, stack_module_state
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

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp",
           "linearize", "stack_module_state", "vjp", "vmap"]
