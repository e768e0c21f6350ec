"""A leaf's gradient has the leaf's dtype, whatever dtype a backward formula hands it (torch's
engine casts each gradient to its input's dtype): a custom Function returning a float16
gradient for a float32 input, and autocast's float16 branches reaching float32 weights."""

import numpy as np
import torch

import ember


def _half_grad(lib, grad: bool = False):
    class Half(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return (g * 2).half()

    w = lib.tensor(np.arange(3.0), dtype=lib.float32, requires_grad=True)
    if grad:  # autograd.grad hands back what .grad would receive
        return lib.autograd.grad(Half.apply(w).sum(), w)[0]
    Half.apply(w).sum().backward()
    Half.apply(w).sum().backward()  # accumulation keeps the dtype too
    return w.grad


def test_leaf_gradient_is_cast_to_the_leafs_dtype():
    e, t = _half_grad(ember), _half_grad(torch)
    assert str(e.dtype) == str(t.dtype).replace("torch", "ember") == "ember.float32"
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_autograd_grad_result_has_the_inputs_dtype():
    e, t = _half_grad(ember, grad=True), _half_grad(torch, grad=True)
    assert str(e.dtype) == str(t.dtype).replace("torch", "ember") == "ember.float32"
    np.testing.assert_array_equal(e.numpy(), t.numpy())
