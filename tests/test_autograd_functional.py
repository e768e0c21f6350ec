"""ember.autograd.functional against torch.autograd.functional."""

import numpy as np
import pytest
import torch
from oracle import arr, assert_same

import ember

X = arr(3).astype(np.float64)
Y = arr(2, 3).astype(np.float64)
V3 = arr(3).astype(np.float64)
V23 = arr(2, 3).astype(np.float64)


def f_single(x):
    return (x * x).exp() * x.sum()


def f_multi(x, y):
    return (x * y).tanh(), (y * y).sum(0) + x


def f_scalar(x):
    return (x.exp() * x * x).sum()


def f_scalar2(x, y):
    return ((x * y).tanh() * y).sum()


def _t(lib, *arrays):
    return tuple(lib.tensor(a) for a in arrays)


def _compare(e, t):
    if isinstance(t, tuple):
        assert isinstance(e, tuple) and len(e) == len(t)
        for a, b in zip(e, t):
            _compare(a, b)
    else:
        assert_same(e, t, atol=1e-8, rtol=1e-6)
        assert e.requires_grad == t.requires_grad


CASES = [
    ("jacobian", lambda lib, F: F.jacobian(f_single, *_t(lib, X))),
    ("jacobian_tuple", lambda lib, F: F.jacobian(f_multi, _t(lib, X, Y))),
    ("jacobian_single_in_tuple", lambda lib, F: F.jacobian(f_single, _t(lib, X))),
    ("hessian", lambda lib, F: F.hessian(f_scalar, *_t(lib, X))),
    ("hessian_tuple", lambda lib, F: F.hessian(f_scalar2, _t(lib, X, Y))),
    ("vjp", lambda lib, F: F.vjp(f_single, *_t(lib, X, V3))),
    ("vjp_tuple", lambda lib, F: F.vjp(f_multi, _t(lib, X, Y), _t(lib, V23, V3))),
    ("vjp_scalar_default_v", lambda lib, F: F.vjp(f_scalar, *_t(lib, X))),
    ("jvp", lambda lib, F: F.jvp(f_single, *_t(lib, X, V3))),
    ("jvp_tuple", lambda lib, F: F.jvp(f_multi, _t(lib, X, Y), _t(lib, V3, V23))),
    ("vhp", lambda lib, F: F.vhp(f_scalar, *_t(lib, X, V3))),
    ("hvp", lambda lib, F: F.hvp(f_scalar, *_t(lib, X, V3))),
    ("hvp_tuple", lambda lib, F: F.hvp(f_scalar2, _t(lib, X, Y), _t(lib, V3, V23))),
    ("vhp_tuple", lambda lib, F: F.vhp(f_scalar2, _t(lib, X, Y), _t(lib, V3, V23))),
]


@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(name, fn):
    _compare(fn(ember, ember.autograd.functional), fn(torch, torch.autograd.functional))


def test_create_graph_keeps_history():
    def body(lib):
        x = lib.tensor(X, requires_grad=True)
        h = lib.autograd.functional.hessian(f_scalar, x, create_graph=True)
        h.sum().backward()
        _, j = lib.autograd.functional.vjp(f_single, x, lib.tensor(V3), create_graph=True)
        return h, x.grad, j.requires_grad
    e, t = body(ember), body(torch)
    assert_same(e[0], t[0], atol=1e-8)
    assert_same(e[1], t[1], atol=1e-8)
    assert e[2] == t[2]


def test_unused_input_zeros_and_strict():
    for lib in (ember, torch):
        x, y = _t(lib, X, X)
        F = lib.autograd.functional
        j = F.jacobian(lambda a, b: a * 2, (x, y))
        assert not j[1].any()
        with pytest.raises(RuntimeError, match="is independent of input 1"):
            F.jacobian(lambda a, b: a * 2, (x, y), strict=True)


@pytest.mark.parametrize("call,match", [
    (lambda F, lib: F.vjp(f_single, lib.tensor(X)), "The vector v can only be None if the "
                                                    "user-provided function returns"),
    (lambda F, lib: F.jvp(f_single, lib.tensor(X)), "The vector v can only be None if the input"),
    (lambda F, lib: F.hessian(f_single, lib.tensor(X)), "should contain a single element"),
    (lambda F, lib: F.hvp(f_multi, (lib.tensor(X), lib.tensor(Y)), (lib.tensor(X), lib.tensor(
        Y))), "should return a single Tensor"),
    (lambda F, lib: F.jacobian(f_single, [1.0]), "must be either a Tensor or a tuple of "
                                                 "Tensors"),
])
def test_errors_match_torch(call, match):
    types = []
    for lib in (ember, torch):
        with pytest.raises((RuntimeError, TypeError), match=match) as info:
            call(lib.autograd.functional, lib)
        types.append(type(info.value))
    assert types[0] is types[1]
