"""Second-order gradients as torch has them, including which first-order gradients have a
history: a formula such as zeros_like(grad) gives none (its gradient is then "not used in the
graph"), one such as threshold_backward(grad, result) keeps the input in the graph (its
gradient is a zero tensor). Each case is compared with torch by ``check_double_backward``."""

import numpy as np
import pytest
import torch
from oracle import arr, check, check_double_backward, check_error

import ember

ACT = [
    lambda m, x: m.relu(x), lambda m, x: m.nn.functional.relu(x),
    lambda m, x: m.nn.functional.threshold(x, 0.1, -0.5),
    lambda m, x: m.nn.functional.leaky_relu(x, 0.1), lambda m, x: m.nn.functional.hardtanh(x),
    lambda m, x: m.nn.functional.relu6(x),
    lambda m, x: m.nn.functional.hardshrink(x), lambda m, x: m.nn.functional.softshrink(x),
    lambda m, x: m.nn.functional.relu(x * 1, inplace=True),
]


@pytest.mark.parametrize("fn", ACT)
def test_piecewise_linear_activations_keep_the_input_in_the_graph(fn):
    x = np.array([-4.0, -1.5, -0.2, 0.3, 0.7, 2.0, 5.0], np.float32)
    check_double_backward(lambda m, x: fn(m, x).mean(), x)
    check_double_backward(lambda m, x: fn(m, x) * x, x)


def test_hardsigmoid_has_no_second_derivative_in_torch():
    def fn(m, x):
        x.requires_grad_()
        g, = m.autograd.grad(m.nn.functional.hardsigmoid(x).sum(), x, create_graph=True)
        assert g.requires_grad
        m.autograd.grad(g.sum(), x)
    check_error(fn, arr(3), match="derivative for aten::hardsigmoid_backward is not implemented")


def test_relu_double_backward_from_the_issue():
    # issue 11: torch gives a zero tensor, ember said "not used in the graph"
    def fn(lib):
        a = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
        g, = lib.autograd.grad(lib.nn.functional.relu(a).mean(), a, create_graph=True)
        return lib.autograd.grad((g * lib.tensor([1.0, 2.0, 3.0])).sum(), a)[0]
    np.testing.assert_array_equal(fn(ember).numpy(), fn(torch).numpy())


@pytest.mark.parametrize("fn", [
    lambda m, x: m.floor(x) * x, lambda m, x: m.ceil(x) * x, lambda m, x: m.round(x) * x,
    lambda m, x: m.trunc(x) * x, lambda m, x: m.sign(x) * x, lambda m, x: m.floor(x).sigmoid(),
    lambda m, x: x ** 0, lambda m, x: (x * 1) ** 0 * x, lambda m, x: x.clamp(-0.5, 0.5) * x,
    lambda m, x: (x * 1).copy_(x.detach()) * x, lambda m, x: (x * 1).fill_(2.0) * x,
    lambda m, x: (x * 1).zero_() + x * x, lambda m, x: m.cumprod(x[:1], 0) * x[:1],
    lambda m, x: x[:1].prod(0) * x[0], lambda m, x: x[0].prod() * x[0],
])
def test_gradients_with_no_history(fn):
    check_double_backward(fn, arr(5))


def test_cumprod_of_a_single_element_slice_and_empty_input():
    check_double_backward(lambda m, x: m.cumprod(x, 1) * 2, arr(3, 1))
    check_double_backward(lambda m, x: m.cumprod(x @ m.ones(3, 2), 0) * 2, arr(0, 3))


def test_var_without_degrees_of_freedom():
    with pytest.warns(UserWarning):
        check_double_backward(lambda m, x: x.var(0) + x, arr())
        check_double_backward(lambda m, x: x.var() * x.sum(), arr(1))
        check_double_backward(lambda m, x: x.var(0) * x.sum(), arr(1))  # a dim: not NaN-only
        check_double_backward(lambda m, x: m.nn.functional.relu6(x.max()).std(), arr(2))


def test_whole_tensor_max_sends_a_nan_gradient_only_to_the_maximum():
    def fn(m, x):
        return m.nn.functional.relu6(x.max()).std() + x.sum() * 0
    with pytest.warns(UserWarning):
        check(fn, np.array([-2.0, 2.0], np.float32))


def test_hypot_second_derivative_rounds_like_torch():
    # torch's div backward: -grad * ((self / other) / other); an exact 0 stays exact
    x = np.array([[-1.7666, 1.5204], [1.1867, 0.0033]], np.float32)
    check_double_backward(lambda m, x: m.hypot(m.floor(x.masked_fill(x < 0, 0.0)), x), x,
                          atol=0, rtol=1e-6)


def test_clamp_with_tensor_bounds():
    lo, x = np.array([0.3], np.float32), np.array([1.0, -0.0], np.float32)
    check(lambda m, x, lo: m.clamp(x, lo, lo), x, lo)  # min == max: neither bound gets a grad
    check(lambda m, x, lo, hi: m.clamp(x, lo, hi), arr(4), arr(4), arr(4))
    check(lambda m, x, lo: m.clamp(x, min=lo), arr(4), arr(4))

    def broadcast_error(m, x, lo):  # torch's in-place mask logic refuses to grow the mask
        m.clamp(x.requires_grad_(), x, lo).sum().backward()
    check_error(broadcast_error, arr(), arr(1), match="doesn't match the broadcast shape")


def test_where_sums_gradients_to_inputs_broadcast_by_the_condition():
    # issue 11: a 0-d input got a gradient of the condition's shape
    cond = np.array([True, False, True])
    check(lambda m, a: m.where(m.tensor(cond), a, 0.0), arr())
    check(lambda m, a, b: m.where(m.tensor(cond[:, None]), a, b), arr(1), arr(1))
    check(lambda m, a: a.where(m.tensor([[True], [False]]), a * 2), arr(2, 1))


def test_threshold_and_relu_keep_nan_inputs():
    # torch: x <= threshold ? value : x, and grad where not (x <= threshold)
    x = np.array([np.nan, -1.0, 0.5, 2.0], np.float32)
    check(lambda m, x: m.nn.functional.threshold(x, 0.1, -0.5), x)
    check(lambda m, x: m.relu(x), x)


def test_atan2_gradient_at_the_origin_is_zero():
    # torch's atan2_backward masks 1 / (a^2 + b^2) to 0 where it is 1 / 0
    for a, b in [(0.0, 0.0), (-0.0, 0.0), (0.0, -0.0), (1e-30, 1e-30), (1.0, 0.0)]:
        check(lambda m, a, b: m.atan2(a, b), np.float32(a) * np.ones(2, np.float32),
              np.float32(b) * np.ones(2, np.float32))


def test_clamp_bounds_that_do_not_broadcast_with_each_other():
    check_error(lambda m, x, lo, hi: m.clamp(x, lo, hi), arr(), arr(3), arr(2),
                match="must match the size of tensor b")


@pytest.mark.parametrize("vals,dim", [([0.0], None), ([0.0445], None), ([0.0, 2.0], None),
                                      ([[0.0], [2.0]], 1),
                                      ([[0.0, 2.0]], 0), ([[0.0, 2.0], [1.0, 3.0]], 1)])
def test_prod_with_zeros(vals, dim):
    # a single factor that is zero: torch's gradient is grad * ones, with no history
    x = np.array(vals, np.float32)
    check_double_backward(lambda m, x: (x.prod() if dim is None else x.prod(dim)) * 2, x)
