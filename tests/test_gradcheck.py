"""gradcheck / gradgradcheck: pass on correct ops, catch wrong backwards with torch's messages."""

import warnings

import numpy as np
import pytest
import torch

import ember
from ember.autograd.gradcheck import GradcheckError as ImportedError
from ember.autograd.gradcheck import gradcheck as imported_gradcheck


def _wrong(lib, scale):
    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x * scale  # correct only when scale == 2
    return Square


def _inputs(lib, *vals):
    return tuple(lib.tensor(v, dtype=lib.float64, requires_grad=True) for v in vals)


def test_importable_like_torch():
    assert imported_gradcheck is ember.autograd.gradcheck
    assert ImportedError is ember.autograd.GradcheckError
    assert issubclass(ImportedError, RuntimeError)


@pytest.mark.parametrize("fast_mode", [False, True])
def test_correct_ops_pass(fast_mode):
    for lib in (ember, torch):
        xs = _inputs(lib, [0.3, -1.2, 2.0], [[0.5], [1.5]])
        assert lib.autograd.gradcheck(lambda a, b: (a * b).exp().tanh() / (b * b + 1), xs,
                                      fast_mode=fast_mode)
        assert lib.autograd.gradcheck(_wrong(lib, 2).apply, xs[:1], fast_mode=fast_mode)
        assert lib.autograd.gradgradcheck(lambda a, b: (a * b).exp() * a, xs,
                                          fast_mode=fast_mode)


def test_multiple_outputs_and_non_tensor_inputs():
    for lib in (ember, torch):
        (x,) = _inputs(lib, [0.3, -1.2])
        assert lib.autograd.gradcheck(lambda a, k: (a * k, a.exp()), (x, 3.0))


@pytest.mark.parametrize("fast_mode", [False, True])
def test_wrong_backward_is_caught_with_torch_message(fast_mode):
    msgs = []
    for lib in (ember, torch):
        xs = _inputs(lib, [1.0, 2.0])
        with pytest.raises(RuntimeError) as info:
            lib.autograd.gradcheck(_wrong(lib, 1).apply, xs, fast_mode=fast_mode)
        assert type(info.value).__name__ == "GradcheckError"
        msgs.append(str(info.value).replace("torch.", "ember."))
    e, t = msgs
    assert e.startswith("Jacobian mismatch for output 0 with respect to input 0,\nnumerical:")
    if fast_mode:  # the projections are random; the slow-mode recomputation is not
        assert e.split("Below, we")[1] == t.split("Below, we")[1]
    else:
        assert e == t


def test_wrong_second_derivative_is_caught():
    for lib in (ember, torch):
        class Sq(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * (x * 2).detach()  # first derivative right, second wrong

        xs = _inputs(lib, [1.0, 2.0])
        assert lib.autograd.gradcheck(Sq.apply, xs)
        with pytest.raises(RuntimeError, match="Jacobian mismatch for output 0 with respect to "
                                               "input 0"):
            lib.autograd.gradgradcheck(Sq.apply, xs)


def test_raise_exception_false_returns_false():
    for lib in (ember, torch):
        assert lib.autograd.gradcheck(_wrong(lib, 3).apply, _inputs(lib, [1.0]),
                                      raise_exception=False) is False


def test_input_errors_and_warnings_match_torch():
    for lib in (ember, torch):
        with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
            lib.autograd.gradcheck(lambda a: a * 2, (lib.ones(2, dtype=lib.float64),))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lib.autograd.gradcheck(lambda a: a * 2, (lib.ones(2, requires_grad=True),),
                                   atol=1e-1, rtol=1e-1)
        assert any("Input #0 requires gradient and is not a double precision" in str(x.message)
                   for x in w)


def test_check_undefined_grad_runs():
    (x,) = _inputs(ember, [0.5, 1.5])
    assert ember.autograd.gradcheck(lambda a: (a.exp(), a * 2), (x,), check_undefined_grad=True)


def test_inputs_are_restored():
    (x,) = _inputs(ember, [0.5, 1.5])
    before = x.detach().numpy().copy()
    ember.autograd.gradcheck(lambda a: a.exp(), (x,))
    np.testing.assert_array_equal(x.detach().numpy(), before)


def test_non_reentrant_backward_is_caught():
    for lib in (ember, torch):
        class Flaky(lib.autograd.Function):
            rng = np.random.default_rng(0)

            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * (2 + 1e-4 * Flaky.rng.random())  # differs from call to call

        xs = _inputs(lib, [1.0, 2.0])
        with pytest.raises(RuntimeError, match="Backward is not reentrant"):
            lib.autograd.gradcheck(Flaky.apply, xs, atol=1e-3, check_undefined_grad=False)
        assert lib.autograd.gradcheck(Flaky.apply, xs, atol=1e-3, nondet_tol=1e-3,
                                      check_undefined_grad=False)
