"""Reductions vs torch: values, dtypes, grad_fn names, gradients, finite differences, errors."""

import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import arr, check, check_error, fd_check, gradgrad_check, negstride, noncontig

import ember

INPUTS = {
    "2d": lambda: arr(3, 4),
    "0d": lambda: arr(),
    "noncontig": lambda: noncontig(3, 4),
    "negstride": lambda: negstride(3, 4),
    "3d": lambda: arr(2, 3, 4),
}


def _grad_fn(out):
    out = out[0] if isinstance(out, tuple) else out
    return type(out.grad_fn).__name__ if out.grad_fn is not None else None


def same_grad_fn(fn, *inputs):
    """ember and torch name the same backward node."""
    e, t = check(fn, *inputs)
    assert _grad_fn(e) == _grad_fn(t), (_grad_fn(e), _grad_fn(t))


@pytest.mark.parametrize("kind", list(INPUTS))
@pytest.mark.parametrize("fn", [
    lambda m, x: x.sum(),
    lambda m, x: x.sum(-1),
    lambda m, x: x.sum((-1,), keepdim=True),
    lambda m, x: x.mean(),
    lambda m, x: x.mean(0, keepdim=True),
    lambda m, x: x.nansum(),
    lambda m, x: m.nansum(x, -1),
    lambda m, x: x.nanmean(-1),
    lambda m, x: x.prod(),
    lambda m, x: x.prod(0),
    lambda m, x: x.prod(-1, keepdim=True),
    lambda m, x: x.logsumexp(-1),
    lambda m, x: m.logsumexp(x, (-1,), keepdim=True),
    lambda m, x: m.logsumexp(x, (0, -1)) if x.ndim else x.logsumexp(()),
    lambda m, x: x.amax(),
    lambda m, x: x.amin(-1),
    lambda m, x: x.max(),
    lambda m, x: x.min(),
    lambda m, x: x.max(0),
    lambda m, x: x.min(-1, keepdim=True),
    lambda m, x: m.max(x, dim=0).values,
])
def test_reductions_match_torch(fn, kind):
    same_grad_fn(fn, INPUTS[kind]())


@pytest.mark.parametrize("kind", ["2d", "noncontig", "negstride", "3d"])
@pytest.mark.parametrize("fn", [
    lambda m, x: x.var(),
    lambda m, x: x.std(),
    lambda m, x: x.std(0),
    lambda m, x: x.var(-1, keepdim=True),
    lambda m, x: x.var(0, unbiased=False),
    lambda m, x: x.std(False),
    lambda m, x: m.std(x, dim=(0, 1), correction=2),
    lambda m, x: m.var(x, -1, correction=0),
    lambda m, x: m.std_mean(x, 0),
    lambda m, x: m.var_mean(x, dim=-1, keepdim=True),
    lambda m, x: m.std_mean(x),
])
def test_var_std_match_torch(fn, kind):
    same_grad_fn(fn, INPUTS[kind]())


def test_std_mean_single_output_grad():
    check(lambda m, x: m.std_mean(x, 0)[0] * 2, arr(3, 4))
    check(lambda m, x: m.var_mean(x, 0)[1] * 2, arr(3, 4))


def test_var_dof_warning_and_nan():
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        out = ember.tensor([2.0]).std()
    assert math.isnan(out.item())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(lambda m, x: m.var(x, correction=3), arr(2), grad=False)
    check_error(lambda m, x: x.std(), arr(3, dtype="int64"), match="floating point")


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
def test_integer_reduction_dtypes(dtype):
    x = arr(3, 4, dtype=dtype, low=0, high=4)
    for fn in [lambda m, x: x.sum(), lambda m, x: x.sum(0), lambda m, x: x.prod(1),
               lambda m, x: x.nansum(), lambda m, x: x.amax(0), lambda m, x: x.max(),
               lambda m, x: x.min(1), lambda m, x: x.all(),
               lambda m, x: x.any(1), lambda m, x: m.count_nonzero(x, 0),
               lambda m, x: x.logsumexp(1), lambda m, x: x.sum(dtype=m.float64)]:
        check(fn, x)


def test_mean_of_int_errors():
    check_error(lambda m, x: x.mean(), arr(3, dtype="int64"), match="could not infer output")
    check_error(lambda m, x: x.nanmean(), arr(3, dtype="int64"))


def test_nan_handling():
    x = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, 2.0]], dtype=np.float32)
    for fn in [lambda m, x: x.nansum(), lambda m, x: x.nansum(1), lambda m, x: x.nanmean(1),
               lambda m, x: x.max(), lambda m, x: x.amax(0), lambda m, x: x.argmax(),
               lambda m, x: x.max(1).indices, lambda m, x: x.sum()]:
        check(fn, x)


@pytest.mark.parametrize("x", [
    np.array([1.0, 0.0, 3.0, 2.0], dtype=np.float32),
    np.array([0.0, 0.0, 3.0, 2.0], dtype=np.float32),
    np.array([[1.0, 0.0, 3.0], [2.0, 4.0, 0.5], [0.0, 0.0, 1.0]], dtype=np.float32),
])
def test_prod_with_zeros(x):
    check(lambda m, x: x.prod(), x)
    check(lambda m, x: x.prod(-1), x)
    check(lambda m, x: x.prod(0, keepdim=True), x)


def test_ties_split_gradient_evenly():
    x = np.array([[3.0, 1.0, 3.0], [2.0, 2.0, 2.0]], dtype=np.float32)
    for fn in [lambda m, x: x.max(), lambda m, x: x.amax(1), lambda m, x: x.amin(),
               lambda m, x: x.amax((0, 1)), lambda m, x: x.min()]:
        same_grad_fn(fn, x)


def test_max_binary_is_maximum():
    same_grad_fn(lambda m, a, b: m.max(a, b), arr(3, 4), arr(4))
    same_grad_fn(lambda m, a, b: m.min(a, b), arr(3, 1), arr(4))


def test_argmax_argmin():
    x = arr(3, 4, 5)
    for fn in [lambda m, x: x.argmax(), lambda m, x: x.argmin(1),
               lambda m, x: x.argmax(-1, keepdim=True), lambda m, x: m.argmin(x, keepdim=True),
               lambda m, x: x[0, 0, 0].argmax(0)]:
        check(fn, x)


def test_logsumexp_is_stable():
    x = np.array([[1000.0, 1000.0], [-1000.0, -1e4], [-np.inf, -np.inf]], dtype=np.float32)
    check(lambda m, x: x.logsumexp(1), x, grad=False)
    check(lambda m, x: x[:2].logsumexp(1), x)


def test_empty_inputs():
    e = np.zeros((0, 3), dtype=np.float32)
    for fn in [lambda m, x: x.sum(), lambda m, x: x.sum(0), lambda m, x: x.mean(0),
               lambda m, x: x.prod(), lambda m, x: x.prod(0), lambda m, x: x.amax(1),
               lambda m, x: x.max(1), lambda m, x: x.logsumexp(0),
               lambda m, x: x.all(), lambda m, x: x.any(0), lambda m, x: x.nansum(1)]:
        check(fn, e)


@pytest.mark.parametrize("fn,match", [
    (lambda m, x: x[:0].max(), "Expected reduction dim to be specified"),
    (lambda m, x: x[:0].amax(), "Expected reduction dim to be specified"),
    (lambda m, x: x[:0].argmax(), "Expected reduction dim to be specified"),
    (lambda m, x: x[:0].max(0), "Expected reduction dim 0 to have non-zero size"),
    (lambda m, x: x[:0].amin(0), "Expected reduction dim 0 to have non-zero size"),
    (lambda m, x: x.sum(2), "Dimension out of range"),
    (lambda m, x: x.max(-3), "Dimension out of range"),
    (lambda m, x: x.mean((0, 0)), "appears multiple times"),
    (lambda m, x: x[0, 0].sum((0, -1)), "appears multiple times"),
    (lambda m, x: x.max(dim=(0, 1)), None),
    (lambda m, x: x.prod(dim=(0, 1)), None),
    (lambda m, x: x.logsumexp(5), "Dimension out of range"),
])
def test_errors(fn, match):
    check_error(fn, arr(3, 4), match=match)


def test_return_type_repr_and_fields():
    x = ember.tensor([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]])
    r = x.max(1)
    assert repr(r) == ("ember.return_types.max(\nvalues=tensor([5., 6.]),\n"
                       "indices=tensor([1, 2]))")
    assert repr(r).replace("ember", "torch") == repr(torch.tensor(x.numpy()).max(1))
    v, i = r
    assert r.values is v and r.indices is i and r[0] is v
    assert isinstance(r, tuple) and isinstance(r, ember.return_types.max)


def test_all_any_count_nonzero():
    x = arr(3, 4, dtype="int64", low=0, high=2)
    for fn in [lambda m, x: x.all(), lambda m, x: x.any(), lambda m, x: x.all(1),
               lambda m, x: m.any(x, 0, keepdim=True), lambda m, x: m.all(x, (0, 1)),
               lambda m, x: m.count_nonzero(x), lambda m, x: m.count_nonzero(x, (0, 1)),
               lambda m, x: x.bool().all(0)]:
        check(fn, x)


def test_float32_stays_float32():
    x = ember.tensor(arr(5))
    for out in [x.var(), x.std(0), x.logsumexp(0), x.prod(), x.nanmean(), x.norm()]:
        assert out.dtype is ember.float32


F64 = [
    lambda x: x.prod(1),
    lambda x: x.prod(),
    lambda x: x.var(0),
    lambda x: x.std(1, keepdim=True),
    lambda x: ember.std_mean(x, 0)[0] + ember.std_mean(x, 0)[1] * 2,
    lambda x: ember.var_mean(x)[0] * ember.var_mean(x)[1],
    lambda x: x.logsumexp(1),
    lambda x: x.amax(0) * x.sum(),
    lambda x: x.max(1).values ** 2,
    lambda x: x.min() * x,
    lambda x: x.nansum(0) ** 2,
    lambda x: x.nanmean() * x,
    lambda x: x.sum((0, 1)) * x,
]


@pytest.mark.parametrize("fn", F64)
def test_fd_and_gradgrad(fn):
    x = arr(3, 4, dtype="float64")
    fd_check(fn, x)
    gradgrad_check(fn, x)


def test_prod_zero_fd():
    x = np.array([[1.5, 0.0, 2.0], [0.5, -1.0, 3.0]])
    fd_check(lambda t: t.prod(1), x)
    fd_check(lambda t: t.prod(), x)
    gradgrad_check(lambda t: t.prod(1), x)


# --- cumulative ops ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(INPUTS))
@pytest.mark.parametrize("fn", [
    lambda m, x: x.cumsum(0),
    lambda m, x: m.cumsum(x, -1),
    lambda m, x: x.cumprod(-1),
    lambda m, x: m.cumprod(x, 0),
    lambda m, x: x.cummax(-1),
    lambda m, x: m.cummin(x, 0),
])
def test_cumulative_match_torch(fn, kind):
    same_grad_fn(fn, INPUTS[kind]())


@pytest.mark.parametrize("x", [
    np.array([2.0, 0.0, 3.0, 0.5], dtype=np.float32),
    np.array([0.0, 2.0, 0.0, 3.0], dtype=np.float32),
    np.array([[1.0, 2.0, 0.0, 4.0], [0.0, 0.0, 1.0, 2.0], [1.5, -1.0, 2.0, 0.5]],
             dtype=np.float32),
])
def test_cumprod_with_zeros(x):
    check(lambda m, x: x.cumprod(-1), x)
    check(lambda m, x: x.cumprod(0), x)
    fd_check(lambda t: t.cumprod(-1), x.astype(np.float64))
    gradgrad_check(lambda t: t.cumprod(-1), x.astype(np.float64))


def test_cumulative_dtypes_and_ties():
    for dt in ["int32", "int64", "bool", "uint8"]:
        x = arr(3, 4, dtype=dt, low=0, high=3)
        check(lambda m, x: x.cumsum(1), x)
        check(lambda m, x: x.cumprod(0), x)
        check(lambda m, x: m.cumsum(x, 0, dtype=m.float64), x)
    ties = np.array([[3.0, 1.0, 3.0, 2.0, 3.0], [1.0, 1.0, 0.0, 0.0, 2.0]], dtype=np.float32)
    check(lambda m, x: x.cummax(1), ties)
    check(lambda m, x: x.cummin(1), ties)
    check(lambda m, x: x.cumsum(0), np.zeros((0, 3), np.float32))
    check_error(lambda m, x: x.cumsum(2), arr(3, 4), match="Dimension out of range")


@pytest.mark.parametrize("fn", [
    lambda x: x.cumsum(1) ** 2,
    lambda x: x.cumprod(0),
    lambda x: x.cummax(1).values ** 2,
    lambda x: x.cummin(0).values * x.sum(),
])
def test_cumulative_fd(fn):
    x = arr(3, 4, dtype="float64")
    fd_check(fn, x)
    gradgrad_check(fn, x)


# --- property-based: random dims and keepdim ----------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(1, 3), min_size=1, max_size=3), data=st.data(),
       keepdim=st.booleans())
def test_reduce_random_dims_property(shape, data, keepdim):
    n = len(shape)
    axes = data.draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=n))
    dims = tuple(d - n if data.draw(st.booleans()) else d for d in sorted(axes))  # some negative
    x = arr(*shape)
    check(lambda m, x: x.sum(dims, keepdim=keepdim), x)
    check(lambda m, x: x.mean(dims, keepdim=keepdim), x)
    check(lambda m, x: x.amax(dims, keepdim=keepdim), x)
    check(lambda m, x: x.logsumexp(dims, keepdim=keepdim), x)
    check(lambda m, x: m.var(x, dims, keepdim=keepdim, correction=0), x)
    check(lambda m, x: m.linalg.vector_norm(x, 3, dims, keepdim), x)


def test_aminmax():
    x = arr(3, 4)
    for fn in [lambda m, x: m.aminmax(x), lambda m, x: m.aminmax(x, dim=1),
               lambda m, x: x.aminmax(dim=0, keepdim=True), lambda m, x: m.aminmax(x)[1] * 2]:
        e, t = check(fn, x)
        e, t = (e[0], t[0]) if isinstance(e, tuple) else (e, t)
        assert type(e.grad_fn).__name__ == type(t.grad_fn).__name__
    assert repr(ember.aminmax(ember.tensor([1.0, 2.0]))).startswith(
        "ember.return_types.aminmax(\nmin=tensor(1.)")
    check_error(lambda m, x: m.aminmax(x[:0]), x, match="cannot compute aminmax over an empty")
    check_error(lambda m, x: m.aminmax(x[:0], dim=0), x, match="to have non-zero size")
    fd_check(lambda t: ember.aminmax(t, dim=1)[0] * ember.aminmax(t, dim=1)[1], x.astype(float))


@pytest.mark.parametrize("kind", list(INPUTS))
def test_logcumsumexp(kind):
    same_grad_fn(lambda m, x: x.logcumsumexp(-1), INPUTS[kind]())
    same_grad_fn(lambda m, x: m.logcumsumexp(x, 0), INPUTS[kind]())


def test_logcumsumexp_stable_and_fd():
    big = np.array([[1000.0, 1001.0, -1000.0], [-1e4, 0.0, 5.0]], dtype=np.float32)
    check(lambda m, x: x.logcumsumexp(1), big)
    check_error(lambda m, x: x.logcumsumexp(1), arr(2, 3, dtype="int64", high=3),
                match="not implemented for 'Long'")
    x = arr(3, 4, dtype="float64")
    fd_check(lambda t: t.logcumsumexp(1), x)
    gradgrad_check(lambda t: t.logcumsumexp(0), x)


@pytest.mark.parametrize("fn", [
    lambda m, x: x.sum(axis=0), lambda m, x: m.sum(x, axis=1, keepdims=True),
    lambda m, x: x.mean(axis=-1), lambda m, x: x.std(axis=0), lambda m, x: x.max(axis=0),
    lambda m, x: x.amax(axis=1, keepdims=True), lambda m, x: x.argmax(axis=0),
    lambda m, x: x.prod(axis=0), lambda m, x: x.logsumexp(axis=0), lambda m, x: x.cumsum(axis=1),
    lambda m, x: x.sort(axis=0), lambda m, x: x.median(axis=0), lambda m, x: x.norm(dim=0),
    lambda m, x: m.std_mean(x, axis=0), lambda m, x: x.topk(1, axis=0),
    lambda m, x: m.cummax(x, axis=0), lambda m, x: x.count_nonzero(axis=0),
])
def test_numpy_style_axis_and_keepdims(fn):
    check(fn, arr(3, 4))


@pytest.mark.parametrize("fn", [
    lambda m, x: x.cumprod(0), lambda m, x: x.cumprod(1), lambda m, x: x.cumsum(1),
    lambda m, x: x.cummax(1), lambda m, x: x.cummin(0), lambda m, x: x.logcumsumexp(0),
    lambda m, x: x.var(1), lambda m, x: x.std(0), lambda m, x: x.nanmean(1),
    lambda m, x: x.norm(dim=1), lambda m, x: x.amin(1), lambda m, x: x.min(1),
    lambda m, x: x.argmax(1), lambda m, x: x.count_nonzero(0),
])
def test_empty_more(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # degrees-of-freedom warnings, in both libraries
        check(fn, np.zeros((0, 3), dtype=np.float32))


@pytest.mark.parametrize("fn", [lambda x: x.mean(), lambda x: x.mean(1),
                                lambda x: x.mean((0, 1), keepdim=True),
                                lambda x: x.double().mean(0), lambda x: x.sum(0)])
def test_mean_gradient_graph_like_torch(fn):
    """create_graph: mean's gradient is expand, then DivBackward1 (one edge), as in torch; a
    third derivative goes through it again."""
    from oracle import grad_fn_names

    names = {}
    for L in (torch, ember):
        x = L.tensor(arr(2, 3), requires_grad=True)
        y = fn(x)
        g = L.autograd.grad(y, x, L.ones_like(y).requires_grad_(), create_graph=True)[0]
        names[L.__name__] = [type(n).__name__ for n, _ in g.grad_fn.next_functions]
    assert names["ember"] == names["torch"]
    assert grad_fn_names(lambda L, t: fn(t), arr(2, 3), ember) == grad_fn_names(
        lambda L, t: fn(t), arr(2, 3), torch)


def test_amax_checks_empty_dims_before_repeated_ones():
    check_error(lambda m, x: x.amax((0, 0), keepdim=True), arr(0, 2), match="non-zero size")
