"""Run the same code in ember and in torch and compare everything a user can see.

``check(fn, *arrays)`` calls ``fn(lib, *tensors)`` with ``lib`` = ember and then torch, on tensors
made from the same NumPy arrays, and compares values, shapes and dtypes; then it backpropagates
the same *random* upstream gradient through both (a ``.sum()`` would hide transposition bugs)
and compares the inputs' gradients. ``check_error`` compares exception types.
``same(fn)`` compares what ``fn(ember)`` and ``fn(torch)`` print, or the exceptions they raise.
``fd_check`` / ``gradgrad_check`` compare ember's gradients with float64 central differences.
``grad_fn_names`` gives the node names of an output and of its gradient, for comparing.
Every ``check`` also compares what backward saves, for each choice of inputs requiring grad
(``saved_oracle.check_saved``).
"""

from __future__ import annotations

import warnings

import numpy as np
import torch

import ember

RNG = np.random.default_rng(0)


def arr(*shape, dtype="float32", low=-2.0, high=2.0, rng=RNG) -> np.ndarray:
    """A random array; integer dtypes draw from [low, high)."""
    if np.dtype(dtype).kind == "f":
        return np.asarray(rng.uniform(low, high, size=shape), dtype=dtype)
    if np.dtype(dtype).kind == "b":
        return np.asarray(rng.random(shape) < 0.5)
    return np.asarray(rng.integers(int(low), int(high), size=shape), dtype=dtype)


def positive(*shape, dtype="float32") -> np.ndarray:
    return arr(*shape, dtype=dtype, low=0.5, high=2.0)


def noncontig(*shape, dtype="float32") -> np.ndarray:
    """A non-contiguous (transposed) view with the given shape."""
    return arr(*reversed(shape), dtype=dtype).T


def negstride(*shape, dtype="float32") -> np.ndarray:
    """A view with a negative stride on the first dim."""
    return arr(*shape, dtype=dtype)[::-1]


def to_torch(a):
    if isinstance(a, np.ndarray):
        return torch.from_numpy(np.array(a, copy=True, order="C"))
    return a


def to_ember(a):
    if isinstance(a, np.ndarray):
        return ember.from_numpy(a)  # the view itself: strides and all
    return a


def _flat(out):
    if isinstance(out, tuple | list):
        res = []
        for o in out:
            res.extend(_flat(o))
        return res
    return [out]


def assert_same(e, t, atol=1e-5, rtol=1e-4, check_dtype=True, what="output") -> None:
    """An ember result equals a torch result: type, shape, dtype, values."""
    if isinstance(t, torch.Tensor):
        assert isinstance(e, ember.Tensor), f"{what}: expected a Tensor, got {type(e)}"
        assert tuple(e.shape) == tuple(t.shape), f"{what}: shape {e.shape} != {t.shape}"
        if check_dtype:
            assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], \
                f"{what}: dtype {e.dtype} != {t.dtype}"
        ev = e.detach().numpy().astype(np.float64) if e.dtype.is_floating_point else \
            e.detach().numpy()
        tv = t.detach().numpy().astype(np.float64) if t.is_floating_point() else \
            t.detach().numpy()
        np.testing.assert_allclose(ev, tv, atol=atol, rtol=rtol, equal_nan=True, err_msg=what)
    elif isinstance(t, float):
        assert abs(e - t) <= atol + rtol * abs(t), f"{what}: {e} != {t}"
    else:
        assert e == t, f"{what}: {e!r} != {t!r}"


def check(fn, *inputs, grad: bool = True, atol=1e-5, rtol=1e-4, check_dtype: bool = True,
          grad_inputs=None, seed: int = 0):
    """Compare ``fn(ember, ...)`` with ``fn(torch, ...)``: outputs and input gradients.

    Float array inputs require grad (unless ``grad=False``); ``grad_inputs`` picks which by
    index. Returns the ember and torch outputs.
    """
    need = [isinstance(a, np.ndarray) and a.dtype.kind == "f" and grad and
            (grad_inputs is None or i in grad_inputs) for i, a in enumerate(inputs)]
    et = [to_ember(a) for a in inputs]
    tt = [to_torch(a) for a in inputs]
    for i, n in enumerate(need):
        if n:
            et[i].requires_grad_(True)
            tt[i].requires_grad_(True)
    eo, to = fn(ember, *et), fn(torch, *tt)
    eflat, tflat = _flat(eo), _flat(to)
    assert len(eflat) == len(tflat), f"{len(eflat)} outputs != {len(tflat)}"
    for k, (e, t) in enumerate(zip(eflat, tflat)):
        assert_same(e, t, atol, rtol, check_dtype, what=f"output {k}")
    if not any(need):
        return eo, to
    rng = np.random.default_rng(seed)
    e_roots, t_roots, e_grads, t_grads = [], [], [], []
    for e, t in zip(eflat, tflat):
        if isinstance(t, torch.Tensor) and t.requires_grad:
            assert e.requires_grad, "ember output does not require grad but torch's does"
            u = rng.standard_normal(tuple(t.shape)).astype(t.detach().numpy().dtype)
            e_roots.append(e)
            t_roots.append(t)
            e_grads.append(ember.tensor(u))
            t_grads.append(torch.tensor(u))
    if not t_roots:
        return eo, to
    ember.autograd.backward(e_roots, e_grads)
    torch.autograd.backward(t_roots, t_grads)
    for i, n in enumerate(need):
        if n:
            tg = tt[i].grad
            eg = et[i].grad
            if tg is None:
                assert eg is None or not np.any(eg.numpy()), f"grad of input {i}: torch has none"
                continue
            assert eg is not None, f"grad of input {i} is None in ember"
            assert_same(eg, tg, atol * 10, rtol * 10, check_dtype, what=f"grad of input {i}")
    from saved_oracle import check_saved

    check_saved(fn, inputs, need, atol, rtol, check_dtype, seed)
    return eo, to


def check_error(fn, *inputs, match: str | None = None):
    """ember raises the same exception type as torch (and optionally shares a phrase)."""
    tt = [to_torch(a) for a in inputs]
    et = [to_ember(a) for a in inputs]
    try:
        fn(torch, *tt)
    except Exception as t_exc:  # noqa: BLE001 - we compare whatever torch raises
        t_type = type(t_exc)
    else:
        raise AssertionError("torch did not raise")
    try:
        fn(ember, *et)
    except Exception as e_exc:  # noqa: BLE001
        assert isinstance(e_exc, t_type) or issubclass(t_type, type(e_exc)) and \
            type(e_exc) is not Exception, f"ember raised {type(e_exc).__name__}: {e_exc}; " \
                                          f"torch raised {t_type.__name__}"
        if match is not None:
            assert match in str(e_exc), f"{match!r} not in {str(e_exc)!r}"
        return e_exc
    raise AssertionError(f"ember did not raise; torch raised {t_type.__name__}")


def outcome(fn, lib):
    """repr of the result (torch. -> ember.), or the exception type and message."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return "ok", repr(fn(lib)).replace("torch.", "ember.")
        except Exception as exc:  # noqa: BLE001 - the exception is what we compare
            return "error", type(exc), str(exc)


def same(fn, match: str | None = None):
    """``fn(ember)`` prints what ``fn(torch)`` prints, or raises the same exception type (and
    both messages contain ``match`` if given)."""
    t, e = outcome(fn, torch), outcome(fn, ember)
    if t[0] == "error":
        assert e[0] == "error", f"torch raised {t[1].__name__}: {t[2]}; ember gave {e[1]}"
        assert issubclass(e[1], t[1]), f"ember raised {e[1].__name__}: {e[2]}; torch {t[1]}"
        if match is not None:
            assert match in e[2] and match in t[2], (e[2], t[2])
        return
    assert e == t


def grad_fn_names(fn, x: np.ndarray, lib) -> tuple:
    """The grad_fn of ``fn(x)`` and of its gradient built with create_graph (for an upstream
    gradient that requires grad, so that the gradient has a graph in both libraries)."""
    t = lib.tensor(x, requires_grad=True)
    out = fn(lib, t)
    out = out[0] if isinstance(out, tuple) else out
    u = lib.ones_like(out).requires_grad_()
    g = lib.autograd.grad(out, t, u, create_graph=True)[0]
    return type(out.grad_fn).__name__, type(g.grad_fn).__name__ if g.grad_fn else None


def fd_check(fn, *arrays, eps=1e-6, atol=1e-5, rtol=1e-4, seed=0) -> None:
    """ember's vector-Jacobian product of ``fn`` equals float64 central differences."""
    rng = np.random.default_rng(seed)
    xs = [np.asarray(a, dtype=np.float64) for a in arrays]
    ts = [ember.tensor(x, dtype=ember.float64, requires_grad=True) for x in xs]
    out = fn(*ts)
    u = rng.standard_normal(tuple(out.shape))
    grads = ember.autograd.grad(out, ts, ember.tensor(u), allow_unused=True)

    def f(vals):
        o = fn(*[ember.tensor(v, dtype=ember.float64, requires_grad=True) for v in vals])
        return float((o.detach().numpy() * u).sum())

    for i, x in enumerate(xs):
        num = np.zeros_like(x)
        for j in np.ndindex(x.shape):
            xp = [v.copy() for v in xs]
            xm = [v.copy() for v in xs]
            xp[i][j] += eps
            xm[i][j] -= eps
            num[j] = (f(xp) - f(xm)) / (2 * eps)
        ana = np.zeros_like(x) if grads[i] is None else grads[i].numpy()
        np.testing.assert_allclose(ana, num, atol=atol, rtol=rtol,
                                   err_msg=f"analytical vs numerical gradient of input {i}")


def gradgrad_check(fn, *arrays, **kw) -> None:
    """The gradient function itself (built with create_graph=True) passes ``fd_check``."""
    rng = np.random.default_rng(kw.pop("seed", 1))
    with ember.no_grad():
        out_shape = tuple(fn(*[ember.tensor(a, dtype=ember.float64) for a in arrays]).shape)
    u = ember.tensor(rng.standard_normal(out_shape))

    def grad_fn(*ts):
        out = fn(*ts)
        gs = ember.autograd.grad(out, ts, u, create_graph=True, allow_unused=True)
        total = None
        for g, t in zip(gs, ts):
            if g is not None:
                # A random linear functional of all input grads keeps shapes simple.
                w = ember.tensor(np.random.default_rng(2).standard_normal(tuple(t.shape)))
                term = (g * w).sum()
                total = term if total is None else total + term
        return total

    fd_check(grad_fn, *arrays, **kw)


def _double_backward(lib, fn, arrays, seed):
    xs = [lib.tensor(a, requires_grad=True) for a in arrays]
    out = fn(lib, *xs)
    rng = np.random.default_rng(seed)
    u = lib.tensor(rng.standard_normal(tuple(out.shape)), dtype=out.dtype)
    g = lib.autograd.grad(out, xs, u, create_graph=True, allow_unused=True)
    terms = [(gi * lib.tensor(rng.standard_normal(tuple(x.shape)), dtype=x.dtype)).sum()
             for gi, x in zip(g, xs) if gi is not None and gi.requires_grad]
    gg = lib.autograd.grad(sum(terms), xs, allow_unused=True) if terms else None
    return g, gg


def check_double_backward(fn, *arrays, seed: int = 0, atol=1e-5, rtol=1e-4) -> None:
    """``fn(lib, *inputs)``'s first-order gradients (built with create_graph, for a random
    upstream gradient) and the gradients of a random linear functional of them equal torch's:
    values, which are None, and which require grad (a gradient with no history in torch, such
    as zeros_like(grad), must have none in ember)."""
    eg, egg = _double_backward(ember, fn, arrays, seed)
    tg, tgg = _double_backward(torch, fn, arrays, seed)
    for what, es, ts in (("grad", eg, tg), ("grad of grad", egg, tgg)):
        assert (es is None) == (ts is None), f"{what}: torch {ts}, ember {es}"
        for i, (e, t) in enumerate(zip(es or (), ts or ())):
            assert (e is None) == (t is None), f"{what} {i}: torch {t}, ember {e}"
            if t is not None:
                assert e.requires_grad == t.requires_grad, f"{what} {i}: requires_grad"
                if t._is_zerotensor():  # torch's ZeroTensor has no numpy()
                    t = torch.zeros_like(t)
                assert_same(e, t, atol, rtol, what=f"{what} {i}")
