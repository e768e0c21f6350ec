"""Tensor.as_subclass, Tensor.grad_dtype, autograd.set_multithreading_enabled,
enforce_grad_layout_policy, autograd.graph.GradientEdge / get_gradient_edge against torch 2.13."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from oracle import arr, assert_same, same

import ember
from ember.autograd import grad_mode


class _ESub(ember.Tensor):
    pass


class _TSub(torch.Tensor):
    pass


def _sub(lib):
    return _ESub if lib is ember else _TSub


@pytest.mark.parametrize("rg", [False, True])
def test_as_subclass(rg):
    x = arr(3, 2)
    res = []
    for lib in (ember, torch):
        t = lib.tensor(x, requires_grad=rg)
        s = t.as_subclass(_sub(lib))
        res.append((type(s) is _sub(lib), s.requires_grad, s.is_leaf, s._base is t,
                    type(s.grad_fn).__name__, s.data_ptr() == t.data_ptr()))
        with lib.no_grad():
            s.add_(1)  # writes show in both, one version counter
        res[-1] += (t._version, s._version, round(float(t.sum()), 4))
        if rg:
            u = lib.tensor(np.arange(6.0, dtype="float32").reshape(3, 2))
            (s * s).backward(u)
            res[-1] += (t.grad.numpy().tolist(),)
    assert res[0] == res[1]


def test_as_subclass_others():
    same(lambda L: L.ones(2, requires_grad=True).as_subclass(L.Tensor))
    same(lambda L: type(L.ones(2).as_subclass(L.nn.Parameter)).__name__)
    same(lambda L: (L.ones(2) * 3).as_subclass(L.nn.Parameter).requires_grad)
    same(lambda L: L.ones(2).as_subclass(int))
    same(lambda L: L.ones(2).as_subclass(dict))


def _grad_dtype_case(lib, steps):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    out = []
    for step in steps:
        try:
            out.append(repr(step(lib, a)).replace("torch", "ember"))
        except Exception as e:  # noqa: BLE001 - the exception is what we compare
            out.append((type(e).__name__, str(e)))
    return out


GRAD_DTYPE_CASES = {
    "default": [lambda L, a: a.grad_dtype, lambda L, a: L.ones(2).grad_dtype],
    "accumulate": [lambda L, a: setattr(a, "grad_dtype", L.float64),
                   lambda L, a: (a * 2).sum().backward(), lambda L, a: a.grad,
                   lambda L, a: (a * 3).sum().backward(), lambda L, a: a.grad],
    "half": [lambda L, a: setattr(a, "grad_dtype", L.float16),
             lambda L, a: (a * 2).sum().backward(), lambda L, a: a.grad,
             lambda L, a: L.autograd.grad((a * 5).sum(), a)],
    "none": [lambda L, a: setattr(a, "grad_dtype", None), lambda L, a: a.grad_dtype,
             lambda L, a: setattr(a, "grad", L.ones(2, dtype=L.float16)), lambda L, a: a.grad,
             lambda L, a: setattr(a, "grad", L.ones(2, dtype=L.int64)), lambda L, a: a.grad],
    "assign": [lambda L, a: setattr(a, "grad", L.ones(2, dtype=L.float64)),
               lambda L, a: setattr(a, "grad", L.ones(2, dtype=L.float16)),
               lambda L, a: setattr(a, "grad_dtype", L.bfloat16),
               lambda L, a: setattr(a, "grad", L.ones(2, dtype=L.int64)),
               lambda L, a: setattr(a, "grad", L.ones(2, dtype=L.bfloat16)), lambda L, a: a.grad],
    "conflict": [lambda L, a: setattr(a, "grad", L.ones(2)),
                 lambda L, a: setattr(a, "grad_dtype", L.float64),
                 lambda L, a: setattr(a, "grad_dtype", L.float32), lambda L, a: a.grad_dtype],
    "non-leaf": [lambda L, a: (a * 2).grad_dtype,
                 lambda L, a: setattr(a * 2, "grad_dtype", L.float64)],
    "bad": [lambda L, a: setattr(a, "grad_dtype", 3), lambda L, a: setattr(a, "grad_dtype", "x"),
            lambda L, a: setattr(a, "grad_dtype", L.int64), lambda L, a: a.grad_dtype],
    "copies": [lambda L, a: setattr(a, "grad_dtype", L.float64),
               lambda L, a: __import__("copy").deepcopy(a).grad_dtype,
               lambda L, a: a.detach().grad_dtype],
    "parameter": [lambda L, a: L.nn.Parameter(L.ones(2)).grad_dtype],
}


@pytest.mark.parametrize("name", sorted(GRAD_DTYPE_CASES))
def test_grad_dtype(name):
    steps = GRAD_DTYPE_CASES[name]
    assert _grad_dtype_case(ember, steps) == _grad_dtype_case(torch, steps)


def test_set_multithreading_enabled():
    assert grad_mode._MULTITHREADING[0] is True
    for lib in (ember, torch):
        state = (lambda: grad_mode._MULTITHREADING[0]) if lib is ember else \
            torch._C._is_multithreading_enabled
        with lib.autograd.set_multithreading_enabled(False):
            assert state() is False
        assert state() is True
        lib.autograd.set_multithreading_enabled(False)  # acts at once, as a function
        assert state() is False
        lib.autograd.set_multithreading_enabled(True)

        @lib.autograd.set_multithreading_enabled(False)
        def f(state=state):
            return state()

        assert f() is False and state() is False  # (torch's decorator sets it at once too)
        lib.autograd.set_multithreading_enabled(True)
        x = lib.ones(2, requires_grad=True)
        with lib.autograd.set_multithreading_enabled(False):
            (x * 3).sum().backward()
        assert x.grad.tolist() == [3.0, 3.0]
    assert type(ember.autograd.set_multithreading_enabled(True)).__module__ == \
        "ember.autograd.grad_mode"


def test_enforce_grad_layout_policy():
    for lib in (ember, torch):
        state = (lambda: grad_mode.STATE.grad_layout_enforced) if lib is ember else \
            torch._C._is_grad_layout_enforcement_enabled
        with lib.autograd.enforce_grad_layout_policy(False):
            assert state() is False
        assert state() is True

        @lib.autograd.enforce_grad_layout_policy(False)
        def f(state=state):
            return state()

        assert state() is True and f() is False and state() is True
        lib.autograd.enforce_grad_layout_policy(False)
        assert state() is False
        lib.autograd.enforce_grad_layout_policy()
        assert state() is True


def _edge_graph(lib):
    x = lib.tensor(arr(3, rng=np.random.default_rng(0)), requires_grad=True)
    y = x * 2
    z = y.sin()
    return x, y, z


def test_get_gradient_edge():
    for lib in (ember, torch):
        x, y, _ = _edge_graph(lib)
        e = lib.autograd.graph.get_gradient_edge(y)
        assert e.node is y.grad_fn and e.output_nr == 0 and e.ownership_token is None
        ex = lib.autograd.graph.get_gradient_edge(x)
        assert type(ex.node).__name__ == "AccumulateGrad"
        assert ex.node is lib.autograd.graph.get_gradient_edge(x).node
        _, b = lib.randn(2, requires_grad=True).unbind()
        assert lib.autograd.graph.get_gradient_edge(b).output_nr == 1
        assert lib.autograd.graph.GradientEdge._fields == ("node", "output_nr",
                                                           "ownership_token")
    assert ember.autograd.graph.GradientEdge.__module__ == "ember.autograd.graph"
    same(lambda L: L.autograd.graph.get_gradient_edge(L.ones(2)))


CASES = {
    "input edge": lambda L, x, y, z, E: L.autograd.grad(z.sum(), E(y)),
    "mixed inputs": lambda L, x, y, z, E: L.autograd.grad(z.sum(), [E(y), x]),
    "leaf edge": lambda L, x, y, z, E: L.autograd.grad(z.sum(), E(x)),
    "output edge": lambda L, x, y, z, E: L.autograd.grad(E(z), x, grad_outputs=L.ones(3) * 2),
    "both": lambda L, x, y, z, E: L.autograd.grad([E(z)], [E(y)], grad_outputs=[L.ones(3)]),
    "create_graph": lambda L, x, y, z, E: L.autograd.grad(z.sum(), E(y), create_graph=True)[0]
    .requires_grad,
    "unused": lambda L, x, y, z, E: L.autograd.grad(
        z.sum(), [E(L.ones(2, requires_grad=True))], allow_unused=True),
    "materialize": lambda L, x, y, z, E: L.autograd.grad(z.sum(), [E(y)],
                                                         materialize_grads=True),
    "backward inputs": lambda L, x, y, z, E: (L.autograd.backward(z.sum(), inputs=[E(x)]),
                                              x.grad),
    "backward output": lambda L, x, y, z, E: (L.autograd.backward(E(z), L.ones(3), inputs=[x]),
                                              x.grad),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_edge_in_grad(name):
    def run(lib):
        x, y, z = _edge_graph(lib)
        return CASES[name](lib, x, y, z, lib.autograd.graph.get_gradient_edge)

    res = []
    for lib in (ember, torch):
        try:
            res.append(run(lib))
        except Exception as e:  # noqa: BLE001 - compared below
            res.append(e)
    e, t = res
    if isinstance(t, Exception):
        assert type(e) is type(t) and str(e) == str(t), (e, t)
        return
    e, t = (e if isinstance(e, tuple) else (e,)), (t if isinstance(t, tuple) else (t,))
    assert len(e) == len(t)
    for a, b in zip(e, t):
        if isinstance(b, torch.Tensor):
            assert_same(a, b)
        else:
            assert a == b


def test_gradient_edge_scalar_output_needs_grad_outputs():
    """ember's nodes do not record their outputs' shapes (torch's do), so a GradientEdge
    output needs its grad_outputs, except a leaf's or a multi-output op's."""
    x, _, z = _edge_graph(ember)
    with pytest.raises(RuntimeError, match="grad_outputs must be given"):
        ember.autograd.grad(ember.autograd.graph.get_gradient_edge(z.sum()), x)
    res = []
    for lib in (ember, torch):
        base = lib.ones(2, requires_grad=True)
        _, b = base.unbind()
        leaf = lib.ones(1, requires_grad=True)
        edge = lib.autograd.graph.get_gradient_edge
        res.append((lib.autograd.grad(edge(b), base)[0].tolist(),
                    lib.autograd.grad(edge(leaf), leaf)[0].tolist()))
        with pytest.raises(RuntimeError, match="only for scalar outputs"):
            lib.autograd.grad(edge(base), base)
    assert res[0] == res[1]
