"""Backward through complex tensors, in torch's convention ("Autograd for Complex Numbers").

For a real loss L of a complex z = x + iy, torch's gradient is the conjugate Wirtinger
derivative times two, ``dL/dx + i dL/dy``: for L = |z|^2 it is 2z, and a step against it
decreases L. For a holomorphic op ``w = f(z)`` it is ``grad_z = grad_w * conj(f'(z))``. The
real backward formulas already compute ``grad * f'(z)`` from the saved inputs, so a
holomorphic op needs no formula of its own: ``conj(backward(conj(grad)))`` is the complex
gradient, and a real op on real tensors is untouched (conj is the identity there). Ops that
are not holomorphic (abs, angle, real, imag, view_as_real, ...) write their own complex
backward (``complex_grad = "own"``); ops without either raise instead of returning a wrong
gradient.

``OpNode._call`` comes here only when an op's first incoming gradient is complex.
"""

from __future__ import annotations


def holomorphic(*ops: type) -> None:
    """Mark ops whose real backward is ``grad * f'(inputs)`` with f holomorphic (or linear
    with real coefficients): their complex gradient is the conjugated real formula."""
    for op in ops:
        op.complex_grad = "holomorphic"


def complex_call(node, grads: list) -> tuple:
    """Run ``node``'s backward for complex incoming gradients, as ``OpNode._call`` does."""
    cls = node._forward_cls
    mode = cls.complex_grad
    if mode == "own":
        out = cls.backward(node, *grads)
        return out if isinstance(out, tuple) else (out,)
    if mode != "holomorphic":
        raise NotImplementedError(f"the derivative for '{node.name()}' is not implemented for "
                                  "complex tensors")
    from ember.ops.complex import conj

    out = cls.backward(node, *(None if g is None else conj(g) for g in grads))
    out = out if isinstance(out, tuple) else (out,)
    return tuple(None if g is None else conj(g) for g in out)
