"""grad, grad_and_value, vjp, jvp, linearize, jacrev, jacfwd, hessian (see the package doc).

Each transform differentiates with respect to fresh views of its inputs under
``create_graph=True``, so transforms nest. Its results keep their graph only when something
outside can still use it: an enclosing transform, or an input that requires grad in the
caller's own autograd; otherwise they come back detached, as torch.func's do.
"""

from __future__ import annotations

import contextlib

from ember.autograd.grad_mode import enable_grad
from ember.func._pytree import flatten, unflatten

_DEPTH = [0]  # how many transforms are running (an inner one keeps its results' graph)


def _tensor():
    from ember._tensor import Tensor

    return Tensor


@contextlib.contextmanager
def _level(leaves):
    """A transform's extent: grad on, depth counted, and whether results keep their graph."""
    keep = _DEPTH[0] > 0 or any(isinstance(x, _tensor()) and x.requires_grad for x in leaves)
    _DEPTH[0] += 1
    try:
        with enable_grad():
            yield keep
    finally:
        _DEPTH[0] -= 1


def _wrap(x):
    """A fresh handle on ``x`` to differentiate against (keeps x's own graph, if any)."""
    if not isinstance(x, _tensor()):
        return x
    return x.view_as(x) if x.requires_grad else x.detach().requires_grad_(
        x.dtype.is_floating_point)


def _out(x, keep: bool):
    return x if keep or not isinstance(x, _tensor()) else x.detach()


def _grads(outputs, inputs, cotangents) -> list:
    """d<outputs, cotangents>/d inputs, zeros where an input is not used."""
    from ember._creation import zeros_like
    from ember.autograd import grad

    pairs = [(o, c) for o, c in zip(outputs, cotangents) if o.requires_grad]
    if not pairs:
        return [zeros_like(x) for x in inputs]
    gs = grad([o for o, _ in pairs], inputs, [c for _, c in pairs], retain_graph=True,
              create_graph=True, allow_unused=True)
    return [zeros_like(x) if g is None else g for g, x in zip(gs, inputs)]


def _argnums(args: tuple, argnums, fname: str) -> tuple:
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    if not nums:
        raise RuntimeError(f"{fname}: argnums must be non-empty")
    for a in nums:
        if not isinstance(a, int):
            raise RuntimeError(f"{fname}: argnums must be int or Tuple[int, ...], got: "
                               f"{type(a)}")
        if not -len(args) <= a < len(args):
            raise RuntimeError(f"Got argnum={a}, but only {len(args)} positional inputs")
    return tuple(a % len(args) for a in nums)


def _split_aux(out, has_aux: bool, fname: str):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{fname}(f)(*args): output of function f should be a tuple: "
                           "(output, aux) if has_aux is True")
    return out


def grad_and_value(func, argnums=0, has_aux: bool = False):
    """``(gradient of func's scalar output w.r.t. args[argnums], output)``."""
    def wrapper(*args, **kwargs):
        nums = _argnums(args, argnums, "grad_and_value(f)(*args)")
        with _level(flatten(args)[0]) as keep:
            args = list(args)
            wrapped = {}
            for a in nums:
                leaves, spec = flatten(args[a])
                wrapped[a] = [_wrap(x) for x in leaves]
                args[a] = unflatten(wrapped[a], spec)
            out, aux = _split_aux(func(*args, **kwargs), has_aux, "grad_and_value")
            if not isinstance(out, _tensor()):
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"Tensor, got {type(out)}")
            if out.ndim != 0:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"scalar Tensor, got tensor with {out.ndim} dims. Maybe you "
                                   "wanted to use the vjp or jacrev APIs instead?")
            flat = [x for a in nums for x in wrapped[a]]
            gs = iter(_grads([out], flat, [out.new_ones(())]))
            per_arg = []
            for a in nums:
                leaves, spec = flatten(args[a])
                per_arg.append(unflatten([_out(next(gs), keep) for _ in leaves], spec))
        g = tuple(per_arg) if isinstance(argnums, tuple) else per_arg[0]
        value = _out(out, keep)
        if has_aux:
            return g, (value, _tree_out(aux, keep))
        return g, value
    return wrapper


def _tree_out(obj, keep: bool):
    leaves, spec = flatten(obj)
    return unflatten([_out(x, keep) for x in leaves], spec)


def grad(func, argnums=0, has_aux: bool = False):
    """The gradient of ``func``'s scalar output with respect to ``args[argnums]``."""
    both = grad_and_value(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        g, value = both(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


def vjp(func, *primals, has_aux: bool = False):
    """``func(*primals)`` and a function mapping cotangents to vector-Jacobian products."""
    leaves, spec = flatten(primals)
    with _level(leaves) as keep:
        xs = [_wrap(x) for x in leaves]
        out, aux = _split_aux(func(*unflatten(xs, spec)), has_aux, "vjp")
    outs, out_spec = flatten(out)

    def vjp_fn(*cotangents):
        cots, cot_spec = flatten(cotangents[0] if len(cotangents) == 1 else cotangents)
        if len(cots) != len(outs):
            raise RuntimeError("Expected pytree structure of cotangents to be the same as "
                               "pytree structure of outputs to the function")
        with _level(cots) as inner:
            gs = _grads(outs, xs, cots)
        return unflatten([_out(g, keep or inner) for g in gs], spec)

    result = (unflatten([_out(o, keep) for o in outs], out_spec), vjp_fn)
    return (*result, _tree_out(aux, keep)) if has_aux else result


def _jvp(outs, xs, tangents) -> list:
    """J t for each output: the gradient of <J^T u, t> with respect to u, at u = 0."""
    from ember._creation import zeros_like

    us = [zeros_like(o).requires_grad_() for o in outs]
    gs = _grads(outs, xs, us)
    terms = [(g * t).sum() for g, t in zip(gs, tangents) if g.requires_grad]
    if not terms:
        return [zeros_like(o) for o in outs]
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    return _grads([total], us, [total.new_ones(())])


def jvp(func, primals, tangents, *, strict: bool = False, has_aux: bool = False):
    """``(func(*primals), J tangents)``."""
    if not isinstance(primals, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple. E.g. "
                           "it should be valid to call f(*primals).")
    if not isinstance(tangents, tuple) or len(tangents) != len(primals):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have "
                           "the same python structure.")
    leaves, spec = flatten(primals)
    tans = flatten(tangents)[0]
    for p, t in zip(leaves, tans):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to "
                               "have the same shape")
    with _level([*leaves, *tans]) as keep:
        xs = [_wrap(x) for x in leaves]
        out, aux = _split_aux(func(*unflatten(xs, spec)), has_aux, "jvp")
        outs, out_spec = flatten(out)
        jv = _jvp(outs, xs, tans)
    result = (unflatten([_out(o, keep) for o in outs], out_spec),
              unflatten([_out(j, keep) for j in jv], out_spec))
    return (*result, _tree_out(aux, keep)) if has_aux else result


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)`` with ``jvp_fn(*tangents)`` = J tangents."""
    out = func(*primals)
    return out, lambda *tangents: jvp(func, primals, tangents)[1]


def _jacobian(func, argnums, has_aux: bool, forward: bool, fname: str):
    def wrapper(*args, **kwargs):
        nums = _argnums(args, argnums, fname)
        with _level(flatten(args)[0]) as keep:
            args = list(args)
            specs = {}
            for a in nums:
                leaves, spec = flatten(args[a])
                specs[a] = (spec, [_wrap(x) for x in leaves])
                args[a] = unflatten(specs[a][1], spec)
            out, aux = _split_aux(func(*args, **kwargs), has_aux, fname)
            outs, out_spec = flatten(out)
            xs = [x for a in nums for x in specs[a][1]]
            blocks = _rows(outs, xs) if not forward else _columns(outs, xs)
        per_out = []
        for o, row in zip(outs, blocks):
            it = iter(_out(_block(b, o, x, forward), keep) for b, x in zip(row, xs))
            per_arg = [unflatten([next(it) for _ in specs[a][1]], specs[a][0]) for a in nums]
            per_out.append(tuple(per_arg) if isinstance(argnums, tuple) else per_arg[0])
        jac = unflatten(per_out, out_spec)
        return (jac, _tree_out(aux, keep)) if has_aux else jac
    return wrapper


def _block(parts: list, o, x, forward: bool):
    """One Jacobian block, shape ``o.shape + x.shape``, from its rows or columns."""
    from ember import stack
    from ember._creation import zeros

    if not parts:
        return zeros((*o.shape, *x.shape), dtype=o.dtype)
    return stack(parts, -1 if forward else 0).reshape((*o.shape, *x.shape))


def _rows(outs, xs) -> list:
    """Reverse mode: one vjp per output element (rows of the Jacobian)."""
    from ember._creation import zeros

    blocks = []
    for o in outs:
        rows = [[] for _ in xs]
        for k in range(o.numel()):
            onehot = zeros(o.numel(), dtype=o.dtype)
            onehot._data[k] = 1
            for r, g in zip(rows, _grads([o], xs, [onehot.reshape(o.shape)])):
                r.append(g.reshape(-1))
        blocks.append(rows)
    return blocks


def _columns(outs, xs) -> list:
    """Forward mode: one jvp per input element (columns of the Jacobian)."""
    from ember._creation import zeros, zeros_like

    blocks = [[[] for _ in xs] for _ in outs]
    for j, x in enumerate(xs):
        for k in range(x.numel()):
            tans = [zeros_like(y) for y in xs]
            flat = zeros(x.numel(), dtype=x.dtype)
            flat._data[k] = 1
            tans[j] = flat.reshape(x.shape)
            for i, col in enumerate(_jvp(outs, xs, tans)):
                blocks[i][j].append(col.reshape(-1))
    return blocks


def jacrev(func, argnums=0, *, has_aux: bool = False, chunk_size=None,
           _preallocate_and_copy: bool = False):
    """The Jacobian of ``func`` w.r.t. ``args[argnums]``, row by row (reverse mode)."""
    return _jacobian(func, argnums, has_aux, False, "jacrev")


def jacfwd(func, argnums=0, has_aux: bool = False, *, randomness: str = "error"):
    """The Jacobian of ``func`` w.r.t. ``args[argnums]``, column by column (forward mode)."""
    return _jacobian(func, argnums, has_aux, True, "jacfwd")


def hessian(func, argnums=0):
    """``jacfwd(jacrev(func, argnums), argnums)``."""
    return jacfwd(jacrev(func, argnums), argnums)
