"""gradcheck / gradgradcheck: compare autograd's Jacobians with central finite differences.

Slow mode builds the full numerical and analytical Jacobians (one row per input element, one
column per output element, as torch lays them out); fast mode compares a random projection
``u^T J v`` of each and recomputes both Jacobians in slow mode only to explain a failure.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

from ember.autograd.function import Function


class GradcheckError(RuntimeError):
    """Raised by gradcheck/gradgradcheck when the Jacobians disagree."""


def _as_tuple(x) -> tuple:
    return tuple(x) if isinstance(x, list | tuple) else (x,)


def _tensors(xs) -> list:
    from ember._tensor import Tensor

    return [x for x in xs if isinstance(x, Tensor)]


def _diff_inputs(inputs) -> list:
    ins = [t for t in _tensors(inputs) if t.requires_grad]
    if not ins:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of the them have requires_grad=True.")
    for i, t in enumerate(_tensors(inputs)):
        if t.requires_grad and t.dtype.name != "float64":
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating "
                          "point or complex. This check will likely fail if all the inputs are "
                          "not of double precision floating point or complex. ", stacklevel=3)
    return ins


def _outputs(func, inputs) -> list:
    return [o for o in _tensors(_as_tuple(func(*inputs))) if o.dtype.is_floating_point]


def _numerical(func, inputs, ins, eps: float, direction=None) -> list:
    """``num[i][j]``: d output_j / d input_i, (n_in, n_out); J v instead with ``direction``."""

    def outs() -> list:
        # Grad mode stays on: gradgradcheck's function itself calls autograd.grad.
        return [o._data.astype(np.float64).ravel().copy() for o in _outputs(func, inputs)]

    res = []
    for i, t in enumerate(ins):
        data = t._data
        if direction is not None:
            steps = [(direction[i].reshape(data.shape), None)]
        else:
            steps = [(None, idx) for idx in np.ndindex(data.shape)]
        cols = []
        for v, idx in steps:
            orig = data.copy()
            if v is None:
                data[idx] = orig[idx] + eps
            else:
                data[...] = orig + eps * v
            plus = outs()
            if v is None:
                data[idx] = orig[idx] - eps
            else:
                data[...] = orig - eps * v
            minus = outs()
            data[...] = orig
            cols.append([(p - m) / (2 * eps) for p, m in zip(plus, minus)])
        n_out = len(cols[0]) if cols else len(outs())
        res.append([np.stack([c[j] for c in cols]) if cols else np.zeros((0, 0))
                    for j in range(n_out)])
    return res


def _analytical(func, inputs, ins, projection=None) -> list:
    """``ana[i][j]`` as (n_in, n_out), from one vector-Jacobian product per output element."""
    from ember._tensor import Tensor
    from ember.autograd import grad

    outputs = _outputs(func, inputs)
    res = [[np.zeros((t.numel(), o.numel())) for o in outputs] for t in ins]
    for j, o in enumerate(outputs):
        if not o.requires_grad:
            continue
        vecs = [projection[j]] if projection is not None else np.eye(max(o.numel(), 1))
        for k, u in enumerate(vecs[:o.numel()]):
            gout = Tensor._make(np.asarray(u, dtype=o._data.dtype).reshape(o.shape))
            gs = grad(o, ins, gout, retain_graph=True, allow_unused=True)
            for i, g in enumerate(gs):
                if g is not None:
                    res[i][j][:, k] = g._data.astype(np.float64).ravel()
    return res


def _fmt(a: np.ndarray):
    from ember._tensor import Tensor

    return Tensor._make(a)


def _close(a, n, atol, rtol) -> bool:
    return bool(np.all(np.abs(a - n) <= atol + rtol * np.abs(n)))


def _slow(func, inputs, ins, eps, atol, rtol, nondet_tol) -> None:
    num = _numerical(func, inputs, ins, eps)
    ana = _analytical(func, inputs, ins)
    for i in range(len(ins)):
        for j in range(len(num[i])):
            if not _close(ana[i][j], num[i][j], atol, rtol):
                raise GradcheckError(
                    f"Jacobian mismatch for output {j} with respect to input {i},\n"
                    f"numerical:{_fmt(num[i][j])}\nanalytical:{_fmt(ana[i][j])}\n")
    again = _analytical(func, inputs, ins)
    if any(np.abs(a - b).max(initial=0.0) > nondet_tol
           for ra, rb in zip(ana, again) for a, b in zip(ra, rb)):
        raise GradcheckError(
            "Backward is not reentrant, i.e., running backward with same input and grad_output "
            "multiple times gives different values, although analytical gradient matches "
            f"numerical gradient.The tolerance for nondeterminism was {nondet_tol}.\n\n"
            "NOTE: If your op relies on non-deterministic operations this failure might be "
            "expected; call gradcheck/gradgradcheck with `nondet_tol=<tol>`.")


def _forward(func, inputs, ins, eps, atol, rtol) -> None:
    """The Jacobian from forward-mode AD (one dual run per input element) against finite
    differences."""
    from ember._tensor import Tensor
    from ember.autograd import forward_ad

    num = _numerical(func, inputs, ins, eps)
    for i, t in enumerate(ins):
        rows = []
        for k in range(t.numel()):
            basis = np.zeros(t._data.size, dtype=t._data.dtype)
            basis[k] = 1
            with forward_ad.dual_level():
                dual = forward_ad.make_dual(t.detach(), Tensor._make(basis.reshape(t.shape)))
                args = [dual if a is t else a for a in inputs]
                outs = _outputs(func, args)
                rows.append([np.zeros(o.numel()) if forward_ad.unpack_dual(o).tangent is None
                             else forward_ad.unpack_dual(o).tangent._data.astype(np.float64)
                             .ravel().copy() for o in outs])
        for j in range(len(num[i])):
            ana = np.array([r[j] for r in rows]).reshape(num[i][j].shape)
            if not _close(ana, num[i][j], atol, rtol):
                raise GradcheckError(
                    f"Jacobian computed with forward mode mismatch for output {j} with respect "
                    f"to input {i},\nnumerical:{_fmt(num[i][j])}\nanalytical:{_fmt(ana)}\n")


def _fast(func, inputs, ins, eps, atol, rtol, nondet_tol) -> None:
    rng = np.random.default_rng(0)
    vs = [rng.standard_normal(t.numel()) for t in ins]
    vs = [v / max(np.linalg.norm(v), 1e-12) for v in vs]
    us = [rng.standard_normal(o.numel()) for o in _outputs(func, inputs)]
    ana = _analytical(func, inputs, ins, projection=us)
    for i in range(len(ins)):
        direction = [v if k == i else np.zeros_like(v) for k, v in enumerate(vs)]
        jv = _numerical(func, inputs, ins, eps, direction)[i]
        for j, u in enumerate(us):
            n = float(u @ jv[j][0])
            a = float(ana[i][j][:, 0] @ vs[i])
            if not abs(a - n) <= atol + rtol * abs(n):
                num_full = _numerical(func, inputs, ins, eps)[i][j]
                ana_full = _analytical(func, inputs, ins)[i][j]
                raise GradcheckError(
                    f"Jacobian mismatch for output {j} with respect to input {i},\n"
                    f"numerical:{n}\nanalytical:{a}\n\n"
                    "The above quantities relating the numerical and analytical jacobians are "
                    "computed \nin fast mode. See: https://github.com/pytorch/pytorch/issues/53876"
                    " for more background \nabout fast mode. Below, we recompute numerical and "
                    "analytical jacobians in slow mode:\n\n"
                    f"Numerical:\n {_fmt(num_full)}\nAnalytical:\n{_fmt(ana_full)}\n\n"
                    "The max per-element difference (slow mode) is: "
                    f"{float(np.abs(num_full - ana_full).max(initial=0.0))}.\n")


class _UndefinedGrad(Function):
    """Identity whose backward sends no gradient: an undefined grad_output downstream."""

    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        return None


def _check_undefined(func, inputs, ins) -> None:
    from ember.autograd import grad

    for o in _outputs(func, inputs):
        if not o.requires_grad:
            continue
        gs = grad(_UndefinedGrad.apply(o).sum(), ins, allow_unused=True)
        if any(g is not None and np.any(g._data) for g in gs):
            raise GradcheckError(
                "Expected backward function to handle undefined output grads. Please look at "
                "\"Notes about undefined output gradients\" in "
                "\"tools/autograd/derivatives.yaml\"")


def gradcheck(func: Callable, inputs, *, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-3, raise_exception: bool = True, nondet_tol: float = 0.0,
              check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
              check_batched_grad: bool = False, check_batched_forward_grad: bool = False,
              check_forward_ad: bool = False, check_backward_ad: bool = True,
              fast_mode: bool = False, masked=None) -> bool:
    """Check ``func``'s analytical gradients against finite differences (float64 inputs).

    >>> x = ember.randn(3, dtype=ember.float64, requires_grad=True)
    >>> gradcheck(lambda t: (t * t).sum(), (x,))
    True
    """
    inputs = _as_tuple(inputs)
    ins = _diff_inputs(inputs)
    try:
        if check_forward_ad or check_batched_forward_grad:
            _forward(func, inputs, ins, eps, atol, rtol)
        if check_backward_ad:
            (_fast if fast_mode else _slow)(func, inputs, ins, eps, atol, rtol, nondet_tol)
            if check_undefined_grad:
                _check_undefined(func, inputs, ins)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def gradgradcheck(func: Callable, inputs, grad_outputs=None, *, eps: float = 1e-6,
                  atol: float = 1e-5, rtol: float = 1e-3, gen_non_contig_grad_outputs=False,
                  raise_exception: bool = True, nondet_tol: float = 0.0,
                  check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
                  check_batched_grad: bool = False, check_fwd_over_rev: bool = False,
                  check_rev_over_rev: bool = True, fast_mode: bool = False,
                  masked: bool = False) -> bool:
    """gradcheck of the gradient: second derivatives against finite differences."""
    from ember._tensor import Tensor
    from ember.autograd import grad

    inputs = _as_tuple(inputs)
    _diff_inputs(inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        outs = _outputs(func, inputs)
        grad_outputs = [Tensor._make(rng.standard_normal(o.shape).astype(o._data.dtype))
                        .requires_grad_(True) for o in outs if o.requires_grad]
    grad_outputs = list(_as_tuple(grad_outputs))
    n = len(inputs)

    def new_func(*args):
        xs, gos = args[:n], args[n:]
        outs = [o for o in _outputs(func, xs) if o.requires_grad]
        diff = [x for x in _tensors(xs) if x.requires_grad]
        gs = grad(outs, diff, gos, create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(new_func, (*inputs, *grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad, fast_mode=fast_mode)


__all__ = ["GradcheckError", "gradcheck", "gradgradcheck"]
