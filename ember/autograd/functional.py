"""Higher-level autograd: jacobian, hessian, vjp, jvp, vhp, hvp (``torch.autograd.functional``).

Everything is built from reverse-mode ``autograd.grad``; jvp and hvp use the double-backward
trick (the vjp is linear in its cotangent, so differentiating it w.r.t. that cotangent gives
the Jacobian-vector product). ``vectorize`` changes nothing in reverse mode;
``strategy="forward-mode"`` goes through ``ember.func.jacfwd``.
"""

from __future__ import annotations

from collections.abc import Callable

from ember.autograd.grad_mode import enable_grad


def _as_tuple(x, arg_name: str, fn_name: str) -> tuple[bool, tuple]:
    from ember._tensor import Tensor

    is_tuple = isinstance(x, tuple | list)
    xs = tuple(x) if is_tuple else (x,)
    for i, t in enumerate(xs):
        if not isinstance(t, Tensor):
            where = f"the value at index {i}" if is_tuple else f"the given {arg_name}"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a "
                            f"tuple of Tensors but {where} has type {type(t)}.")
    return is_tuple, xs


def _prep(inputs: tuple, create_graph: bool) -> tuple:
    """Fresh leaves to differentiate against (kept in the caller's graph with create_graph)."""
    return tuple(x.view_as(x) if create_graph and x.requires_grad
                 else x.detach().requires_grad_(True) for x in inputs)


def _post(xs, create_graph: bool, is_tuple: bool):
    xs = tuple(x if create_graph or x is None else x.detach() for x in xs)
    return xs if is_tuple else xs[0]


def _grad(outputs, inputs, grad_outputs, create_graph: bool, strict: bool, fn_name: str,
          what: str = "output") -> tuple:
    """``autograd.grad`` where unused inputs give zeros (or an error in strict mode)."""
    from ember._creation import zeros_like
    from ember.autograd import grad

    outputs = [o for o in outputs if o is not None]
    gs = grad(outputs, inputs, grad_outputs, retain_graph=True, create_graph=create_graph,
              allow_unused=True)
    res = []
    for i, (g, x) in enumerate(zip(gs, inputs)):
        if g is None:
            if strict:
                raise RuntimeError(f"The {what} of the user-provided function is independent of "
                                   f"input {i}. This is not allowed in strict mode.")
            g = zeros_like(x)
        res.append(g)
    return tuple(res)


def _check_v(v, outputs: tuple, fn_name: str, of_inputs: bool = False) -> tuple:
    if v is None:
        if len(outputs) != 1 or outputs[0].numel() != 1:
            what = ("the input to the user-provided function is a single Tensor" if of_inputs
                    else "the user-provided function returns a single Tensor")
            raise RuntimeError(f"The vector v can only be None if {what} with a single element.")
        from ember._creation import ones_like

        return (ones_like(outputs[0]),)
    _, vs = _as_tuple(v, "v", fn_name)
    if len(vs) != len(outputs):
        raise RuntimeError(f"v is a tuple of invalid length: should be {len(outputs)} but got "
                           f"{len(vs)}.")
    for i, (a, b) in enumerate(zip(vs, outputs)):
        if a.shape != b.shape:
            raise RuntimeError(f"Entry {i} in v has invalid size: should be {b.shape} but got "
                               f"{a.shape}.")
    return vs


def vjp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), v^T J)``."""
    with enable_grad():
        is_tuple, ins = _as_tuple(inputs, "inputs", "vjp")
        ins = _prep(ins, create_graph)
        out_tuple, outs = _as_tuple(func(*ins), "outputs of the user-provided function", "vjp")
        vs = _check_v(v, outs, "vjp")
        res = _grad(outs, ins, vs, create_graph, strict, "vjp")
    return _post(outs, create_graph, out_tuple), _post(res, create_graph, is_tuple)


def jvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), J v)``, by differentiating a vjp w.r.t. its cotangent."""
    from ember._creation import zeros_like

    with enable_grad():
        is_tuple, ins = _as_tuple(inputs, "inputs", "jvp")
        ins = _prep(ins, create_graph)
        vs = _check_v(v, ins, "jvp", of_inputs=True)
        out_tuple, outs = _as_tuple(func(*ins), "outputs of the user-provided function", "jvp")
        cot = tuple(zeros_like(o).requires_grad_(True) for o in outs)
        gin = _grad(outs, ins, cot, True, strict, "jvp")
        res = _grad(gin, cot, vs, create_graph, strict, "jvp")
    return _post(outs, create_graph, out_tuple), _post(res, create_graph, out_tuple)


def jacobian(func: Callable, inputs, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode"):
    """d outputs / d inputs: entry [i][j] has shape ``outputs[i].shape + inputs[j].shape``.
    ``strategy="forward-mode"`` (with ``vectorize=True``, as torch requires) builds it column
    by column from Jacobian-vector products (``ember.func.jacfwd``)."""
    from ember import stack
    from ember._creation import zeros

    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". '
                             'Hint: If your function has more outputs than inputs, '
                             '"forward-mode" tends to be more performant. Otherwise, prefer to '
                             'use "reverse-mode".')
    if strategy == "forward-mode":
        if not vectorize:
            raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-"
                                      "reverse Hessian isonly implemented for `vectorize=True`.")
        return _forward_jacobian(func, inputs, create_graph)

    with enable_grad():
        is_tuple, ins = _as_tuple(inputs, "inputs", "jacobian")
        ins = _prep(ins, create_graph)
        out_tuple, outs = _as_tuple(func(*ins), "outputs of the user-provided function",
                                    "jacobian")
        jac = []
        for i, o in enumerate(outs):
            rows = [[] for _ in ins]
            for k in range(o.numel()):
                onehot = zeros(o.numel(), dtype=o.dtype)
                onehot._data[k] = 1
                if o.requires_grad:
                    gs = _grad([o], ins, [onehot.reshape(o.shape)], create_graph, strict,
                               "jacobian", what=f"output {i}")
                elif strict:
                    raise RuntimeError(f"Output {i} of the user-provided function does not "
                                       "require gradients. The outputs must be computed in a "
                                       "differentiable manner from the input when running in "
                                       "strict mode.")
                else:
                    gs = [zeros(x.shape, dtype=x.dtype) for x in ins]
                for j, g in enumerate(gs):
                    rows[j].append(g)
            jac.append(tuple(
                (stack(r) if r else zeros((0, *x.shape), dtype=x.dtype)).reshape(
                    (*o.shape, *x.shape)) for r, x in zip(rows, ins)))
    jac = [_post(row, create_graph, True) for row in jac]
    if not out_tuple:
        return jac[0] if is_tuple else jac[0][0]
    return tuple(row if is_tuple else row[0] for row in jac)


def _forward_jacobian(func, inputs, create_graph: bool):
    from ember.func import jacfwd

    is_tuple, ins = _as_tuple(inputs, "inputs", "jacobian")
    jac = jacfwd(func, argnums=tuple(range(len(ins))))(*ins)
    out_tuple = isinstance(jac, tuple) and jac and isinstance(jac[0], tuple)
    rows = jac if out_tuple else (jac,)
    rows = [tuple(x if create_graph else x.detach() for x in row) for row in rows]
    if not out_tuple:
        return rows[0] if is_tuple else rows[0][0]
    return tuple(row if is_tuple else row[0] for row in rows)


def _scalar_fn(func, fn_name: str):
    def wrapped(*xs):
        out = func(*xs)
        out_tuple, outs = _as_tuple(out, "outputs of the user-provided function", fn_name)
        if out_tuple or len(outs) != 1:
            raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
        if outs[0].numel() != 1:
            raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should "
                               "contain a single element")
        return outs[0].reshape(())
    return wrapped


def hessian(func: Callable, inputs, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode"):
    """The Hessian of a scalar function: the jacobian of its gradient."""
    is_tuple, _ = _as_tuple(inputs, "inputs", "hessian")
    f = _scalar_fn(func, "hessian")

    def grad_fn(*xs):
        return _grad([f(*xs)], xs, None, True, strict, "hessian")

    res = jacobian(grad_fn, inputs, create_graph=create_graph, strict=strict)
    return res if is_tuple else res[0]


def vhp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), v^T H)``."""
    with enable_grad():
        is_tuple, ins = _as_tuple(inputs, "inputs", "vhp")
        ins = _prep(ins, create_graph)
        out = _scalar_fn(func, "vhp")(*ins)
        vs = _check_v(v, ins, "vhp", of_inputs=True)
        jac = _grad([out], ins, None, True, strict, "vhp")
        res = _grad(jac, ins, vs, create_graph, strict, "vhp")
    return _post((out,), create_graph, False), _post(res, create_graph, is_tuple)


def hvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), H v)``, via a double backward (equal to vhp for smooth functions)."""
    from ember._creation import zeros_like

    with enable_grad():
        is_tuple, ins = _as_tuple(inputs, "inputs", "hvp")
        ins = _prep(ins, create_graph)
        out = _scalar_fn(func, "hvp")(*ins)
        vs = _check_v(v, ins, "hvp", of_inputs=True)
        jac = _grad([out], ins, None, True, strict, "hvp")
        cot = tuple(zeros_like(x).requires_grad_(True) for x in ins)
        back = _grad(jac, ins, cot, True, strict, "hvp")
        res = _grad(back, cot, vs, create_graph, strict, "hvp")
    return _post((out,), create_graph, False), _post(res, create_graph, is_tuple)


__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]
