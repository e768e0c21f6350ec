"""Sorting and selection vs torch: sort, argsort, topk, kthvalue, median, mode, unique."""

import numpy as np
import pytest
import torch
from oracle import arr, check, check_error, fd_check, gradgrad_check, negstride, noncontig

import ember


def distinct(*shape, dtype="float32"):
    """Values without ties, so that every library picks the same indices."""
    n = int(np.prod(shape))
    return (np.random.default_rng(n).permutation(n).reshape(shape) * 0.5 - n / 4).astype(dtype)


INPUTS = {
    "2d": lambda: distinct(3, 5),
    "3d": lambda: distinct(2, 3, 4),
    "noncontig": lambda: np.ascontiguousarray(distinct(5, 3)).T,
    "negstride": lambda: distinct(4, 5)[::-1],
    "0d": lambda: np.array(1.5, dtype=np.float32),
}


def _name(out):
    out = out[0] if isinstance(out, tuple) else out
    return type(out.grad_fn).__name__ if out.grad_fn is not None else None


@pytest.mark.parametrize("kind", list(INPUTS))
@pytest.mark.parametrize("fn", [
    lambda m, x: x.sort(),
    lambda m, x: x.sort(0, descending=True),
    lambda m, x: m.sort(x, dim=-1, descending=True, stable=True),
    lambda m, x: x.argsort(),
    lambda m, x: m.argsort(x, 0, descending=True),
    lambda m, x: x.topk(1),
    lambda m, x: x.topk(1, dim=0, largest=False),
    lambda m, x: x.kthvalue(1),
    lambda m, x: x.kthvalue(1, 0, keepdim=True),
    lambda m, x: x.median(),
    lambda m, x: x.median(0),
    lambda m, x: x.median(-1, keepdim=True),
    lambda m, x: m.msort(x) if x.ndim else x.sort().values,
])
def test_selection_matches_torch(fn, kind):
    e, t = check(fn, INPUTS[kind]())
    assert _name(e) == _name(t)


def test_topk_and_kthvalue_larger_k():
    x = distinct(4, 6)
    for fn in [lambda m, x: x.topk(3), lambda m, x: x.topk(4, 0), lambda m, x: x.topk(0),
               lambda m, x: x.topk(2, largest=False), lambda m, x: x.kthvalue(4),
               lambda m, x: x.kthvalue(3, 0), lambda m, x: x.median(1)]:
        check(fn, x)


def test_stable_sort_keeps_tie_order():
    x = np.array([[2.0, 1.0, 2.0, 1.0, 3.0, 2.0]], dtype=np.float32)
    check(lambda m, x: x.sort(stable=True), x)
    check(lambda m, x: x.sort(descending=True, stable=True), x)
    check(lambda m, x: x.argsort(stable=True, descending=True), x, grad=False)


def test_nan_sorts_last_and_median_propagates():
    x = np.array([[1.0, np.nan, 0.0, 3.0], [2.0, -1.0, 5.0, 4.0]], dtype=np.float32)
    check(lambda m, x: x.sort(), x)
    check(lambda m, x: x.sort(descending=True), x)
    check(lambda m, x: x.median(1), x)
    check(lambda m, x: x.median(), x)


def test_mode():
    x = np.array([[1.0, 3.0, 1.0, 2.0, 3.0, 3.0], [4.0, 4.0, 2.0, 2.0, 1.0, 5.0]],
                 dtype=np.float32)
    check(lambda m, x: x.mode(), x)
    check(lambda m, x: x.mode(0), np.ascontiguousarray(x[:, [0, 1]]))
    check(lambda m, x: m.mode(x, 1, keepdim=True), x)


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "float64"])
def test_integer_and_double_sorts(dtype):
    x = arr(3, 5, dtype=dtype, low=0, high=50)
    check(lambda m, x: x.sort(dim=1, stable=True), x, grad=False)
    check(lambda m, x: x.argsort(dim=0, stable=True), x, grad=False)
    check(lambda m, x: x.median(), x, grad=False)
    check(lambda m, x: x.topk(2).values, x, grad=False)


def test_empty():
    e = np.zeros((3, 0), dtype=np.float32)
    check(lambda m, x: x.sort(1), e)
    check(lambda m, x: x.argsort(), e)
    check(lambda m, x: x.median(), e, grad=False)
    check(lambda m, x: x.topk(0), e)


@pytest.mark.parametrize("fn,match", [
    (lambda m, x: x.topk(6), "selected index k out of range"),
    (lambda m, x: x.kthvalue(0), "out of range"),
    (lambda m, x: x.kthvalue(6), "out of range"),
    (lambda m, x: x.sort(2), "Dimension out of range"),
    (lambda m, x: x.median(3), "Dimension out of range"),
    (lambda m, x: x[:, :0].median(1), "Expected reduction dim 1 to have non-zero size"),
])
def test_errors(fn, match):
    check_error(fn, distinct(3, 5), match=match)


@pytest.mark.parametrize("kw", [
    {}, {"return_inverse": True}, {"return_counts": True},
    {"return_inverse": True, "return_counts": True}, {"dim": 0}, {"dim": 1, "return_inverse": True},
    {"dim": 0, "return_counts": True, "return_inverse": True},
])
def test_unique(kw):
    x = arr(4, 3, dtype="int64", low=0, high=3)
    x[2] = x[0]
    check(lambda m, x: m.unique(x, **kw), x)
    check(lambda m, x: x.unique(sorted=True, **kw), x)


def test_unique_float_and_0d():
    check(lambda m, x: m.unique(x, return_inverse=True), np.array([1.5, -1.0, 1.5, 0.0],
                                                                  dtype=np.float32), grad=False)
    check(lambda m, x: m.unique(x, return_inverse=True, return_counts=True),
          np.array(3, dtype=np.int64))


def test_return_type_reprs():
    x = np.array([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]], dtype=np.float32)
    e, t = ember.tensor(x), torch.tensor(x)
    for fn in [lambda v: v.sort(1), lambda v: v.topk(2), lambda v: v.median(0),
               lambda v: v.kthvalue(2), lambda v: v.mode(1), lambda v: v.cummax(1),
               lambda v: v.min(0), lambda v: v.max(1, keepdim=True)]:
        assert repr(fn(e)).replace("ember", "torch") == repr(fn(t))
    r = e.sort(1)
    assert r.values is r[0] and r.indices is r[1]
    assert type(r).__name__ == "sort" and isinstance(r, ember.return_types.sort)


@pytest.mark.parametrize("fn", [
    lambda x: x.sort(1).values ** 2,
    lambda x: x.sort(0, descending=True).values * x,
    lambda x: x.topk(2).values ** 2,
    lambda x: x.kthvalue(2, 0).values ** 2,
    lambda x: x.median(1).values ** 2,
    lambda x: x.median() * x,
    lambda x: x.mode(1).values ** 2,
])
def test_fd_and_gradgrad(fn):
    x = distinct(3, 4, dtype="float64")
    fd_check(fn, x)
    gradgrad_check(fn, x)


def test_noncontig_helpers_used():
    check(lambda m, x: x.sort(0), noncontig(3, 4))
    check(lambda m, x: x.topk(2, 0), negstride(4, 3))


def test_nanmedian():
    x = np.array([[1.0, np.nan, 3.0, 2.0], [np.nan] * 4, [4.0, -1.0, np.nan, 0.5]],
                 dtype=np.float32)
    some = x[[0, 2]]  # the index in an all-NaN row is unspecified
    for fn in [lambda m, x: x.nanmedian(), lambda m, x: x.nanmedian(1),
               lambda m, x: m.nanmedian(x, 0, keepdim=True), lambda m, x: x[0].nanmedian(0)]:
        e, t = check(fn, some)
        assert _name(e) == _name(t)
    check(lambda m, x: x.nanmedian(), x)
    check(lambda m, x: x.nanmedian(1).values, x, grad=False)
    check(lambda m, x: x.nanmedian(1), distinct(3, 5))
    check(lambda m, x: x.nanmedian(), np.array(2.0, dtype=np.float32))
    fd_check(lambda t: t.nanmedian(1).values ** 2, distinct(3, 4, dtype="float64"))


@pytest.mark.parametrize("fn", [
    lambda m, x: x.argmax(), lambda m, x: x.argmin(1), lambda m, x: x.median(),
    lambda m, x: x.median(1), lambda m, x: x.nanmedian(), lambda m, x: x.kthvalue(1),
    lambda m, x: x.topk(1),
])
def test_bool_inputs_rejected_like_torch(fn):
    check_error(fn, arr(2, 3, dtype="bool"))


def test_bool_inputs_that_work():
    b = arr(2, 3, dtype="bool")
    for fn in [lambda m, x: x.sort(1), lambda m, x: x.msort(), lambda m, x: x.max(1),
               lambda m, x: x.amax(0), lambda m, x: x.unique(), lambda m, x: x.cumsum(0),
               lambda m, x: x.prod()]:
        check(fn, b)


@pytest.mark.parametrize("fn", [
    lambda m, s, v: m.searchsorted(s[0], v),
    lambda m, s, v: m.searchsorted(s[0], v, right=True),
    lambda m, s, v: m.searchsorted(s[0], v, side="right", out_int32=True),
    lambda m, s, v: m.searchsorted(s, v[:, :3]),
    lambda m, s, v: m.searchsorted(s, v[:, :3], side="right"),
    lambda m, s, v: m.searchsorted(s[0], 0.5),
    lambda m, s, v: m.bucketize(v, s[0]),
    lambda m, s, v: m.bucketize(v, s[0], right=True),
    lambda m, s, v: m.searchsorted(s[0].flip(0), v, sorter=m.arange(4).flip(0)),
])
def test_searchsorted_bucketize(fn):
    s = np.array([[-1.0, 0.0, 0.5, 2.0], [-3.0, -1.0, 1.0, 1.5]], dtype=np.float32)
    v = np.array([[0.5, -2.0, 3.0, 0.0, 1.0], [1.5, -1.0, 0.2, 9.0, -9.0]], dtype=np.float32)
    check(fn, s, v, grad=False)


@pytest.mark.parametrize("fn,match", [
    (lambda m, s, v: m.searchsorted(s, v), "boundaries tensor should be 1 dimension"),
    (lambda m, s, v: m.bucketize(v, s), "boundaries tensor must be 1 dimension"),
    (lambda m, s, v: m.searchsorted(s[0], v, side="middle"), "side can only be"),
])
def test_searchsorted_errors(fn, match):
    check_error(fn, arr(2, 3), arr(3, 2), match=match)


@pytest.mark.parametrize("kw", [{}, {"return_inverse": True}, {"return_counts": True},
                                {"return_inverse": True, "return_counts": True}, {"dim": 0},
                                {"dim": 1, "return_counts": True, "return_inverse": True}])
def test_unique_consecutive(kw):
    x = np.array([[1, 1, 2], [1, 1, 2], [3, 1, 1], [3, 1, 1], [1, 1, 2]], dtype=np.int64)
    check(lambda m, x: m.unique_consecutive(x, **kw), x)
    if "dim" not in kw:
        check(lambda m, x: x.unique_consecutive(**kw), np.zeros((0, 3), np.int64))
