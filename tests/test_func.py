"""ember.func against torch.func: values, compositions, structures, errors."""

import numpy as np
import pytest
import torch
from oracle import arr

import ember


def _np(x):
    if isinstance(x, tuple | list):
        return [_np(v) for v in x]
    if isinstance(x, dict):
        return {k: _np(v) for k, v in x.items()}
    return x.detach().numpy() if hasattr(x, "detach") else x


def _same(fn, *arrays, rtol=1e-5, atol=1e-6):
    """fn(lib, *tensors) gives the same nested result in ember and torch."""
    e = _np(fn(ember, *[ember.tensor(a) for a in arrays]))
    t = _np(fn(torch, *[torch.tensor(a) for a in arrays]))

    def cmp(a, b):
        if isinstance(b, list):
            assert isinstance(a, list) and len(a) == len(b)
            for x, y in zip(a, b):
                cmp(x, y)
        elif isinstance(b, dict):
            assert set(a) == set(b)
            for k in b:
                cmp(a[k], b[k])
        else:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    cmp(e, t)


def f(x):
    return (x.sin() * x).sum()


CASES = {
    "grad": lambda m, x, v: m.func.grad(f)(x),
    "grad_and_value": lambda m, x, v: m.func.grad_and_value(f)(x),
    "grad_of_grad": lambda m, x, v: m.func.grad(lambda y: m.func.grad(f)(y).sum())(x),
    "argnums": lambda m, x, v: m.func.grad(lambda a, b: (a * b.exp()).sum(), argnums=(0, 1))(x, v),
    "has_aux": lambda m, x, v: m.func.grad(lambda y: ((y * y).sum(), y.mean()), has_aux=True)(x),
    "pytree_arg": lambda m, x, v: m.func.grad(lambda d: (d["a"] * d["b"][0]).sum())(
        {"a": x, "b": (v,)}),
    "jvp": lambda m, x, v: m.func.jvp(lambda y: y.sin() * y, (x,), (v,)),
    "vjp": lambda m, x, v: m.func.vjp(lambda y: y.sin() * y, x)[1](v),
    "jacrev": lambda m, x, v: m.func.jacrev(lambda y: y.sin() * y.sum())(x),
    "jacfwd": lambda m, x, v: m.func.jacfwd(lambda y: y.sin() * y.sum())(x),
    "jacrev_tuple": lambda m, x, v: m.func.jacrev(lambda a, b: (a * b, a.sum() * b),
                                                  argnums=(0, 1))(x, v),
    "hessian": lambda m, x, v: m.func.hessian(f)(x),
    "jacrev_jacrev": lambda m, x, v: m.func.jacrev(m.func.jacrev(f))(x),
    "vmap": lambda m, x, v: m.func.vmap(lambda a, b: (a * b).sum(), in_dims=(0, None))(
        x.reshape(3, 2), v[:2]),
    "vmap_out_dims": lambda m, x, v: m.func.vmap(lambda a: (a * 2, a.sum()), in_dims=1,
                                                 out_dims=(1, 0))(x.reshape(2, 3)),
    "vmap_grad": lambda m, x, v: m.func.vmap(m.func.grad(f))(x.reshape(3, 2)),
    "vmap_jacrev": lambda m, x, v: m.func.vmap(m.func.jacrev(lambda y: y.exp() * y[0]))(
        x.reshape(2, 3)),
    "linearize": lambda m, x, v: m.func.linearize(lambda y: y.sin() * y, x)[1](v),
}


@pytest.mark.parametrize("name", CASES)
def test_transforms_match_torch(name):
    _same(CASES[name], arr(6), arr(6))


def test_functional_call_and_ensembles():
    def run(m):
        m.manual_seed(0)
        models = [m.nn.Linear(3, 2) for _ in range(4)]
        params, buffers = m.func.stack_module_state(models)
        base = m.nn.Linear(3, 2)
        x = m.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))

        def one(p, b, x):
            return m.func.functional_call(base, (p, b), (x,))
        out = m.func.vmap(one, in_dims=(0, 0, None))(params, buffers, x)
        p1 = {k: v[1] for k, v in params.items()}
        g = m.func.grad(lambda p: m.func.functional_call(base, p, (x,)).pow(2).sum())(p1)
        return out, g, sorted(params), base.weight  # base's own weight is untouched
    e, t = run(ember), run(torch)
    np.testing.assert_allclose(_np(e[0]), _np(t[0]), rtol=1e-5, atol=1e-6)
    for k in t[1]:
        np.testing.assert_allclose(_np(e[1][k]), _np(t[1][k]), rtol=1e-5)
    assert e[2] == t[2]
    np.testing.assert_allclose(_np(e[3]), _np(t[3]), rtol=1e-6)


def test_results_keep_a_graph_only_when_the_caller_can_use_it():
    for lib in (ember, torch):
        x = lib.tensor([0.5, 1.0])
        assert not lib.func.grad(f)(x).requires_grad
        xr = x.clone().requires_grad_()
        g = lib.func.grad(f)(xr)
        assert g.requires_grad
        (h,) = lib.autograd.grad(g.sum(), xr)  # differentiate the gradient in plain autograd
        np.testing.assert_allclose(_np(h), _np(lib.func.hessian(f)(x).sum(0)), rtol=1e-5)


@pytest.mark.parametrize("bad", [
    lambda m: m.func.grad(lambda y: y * 2)(m.ones(2)),
    lambda m: m.func.grad(lambda y: 3.0)(m.ones(2)),
    lambda m: m.func.vmap(lambda a, b: a + b)(m.ones(2, 3), m.ones(3, 3)),
    lambda m: m.func.vmap(lambda a: m.rand(3))(m.ones(2, 3)),
    lambda m: m.func.vmap(lambda a: a)(3),
    lambda m: m.func.vmap(lambda a: a, in_dims=2)(m.ones(2)),
    lambda m: m.func.vmap(lambda a: 5)(m.ones(2)),
    lambda m: m.func.jvp(lambda a: a, m.ones(2), (m.ones(2),)),
    lambda m: m.func.grad(f, argnums=3)(m.ones(2)),
])
def test_errors_match_torch(bad):
    with pytest.raises(Exception) as te:
        bad(torch)
    with pytest.raises(type(te.value)) as ee:
        bad(ember)
    assert str(ee.value).split(":")[0] == str(te.value).split(":")[0] or \
        str(te.value)[:30] in str(ee.value), (str(ee.value), str(te.value))


def test_vmap_randomness_same_and_different():
    ember.manual_seed(0)
    same = ember.func.vmap(lambda a: a + ember.rand(3), randomness="same")(ember.zeros(4, 3))
    assert all(np.array_equal(same[0].numpy(), r.numpy()) for r in same)
    diff = ember.func.vmap(lambda a: a + ember.rand(3), randomness="different")(
        ember.zeros(4, 3))
    assert len({tuple(r.tolist()) for r in diff}) == 4
