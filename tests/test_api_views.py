"""The copying forms of view ops (diagonal_copy, ..., narrow_copy, unsafe_split), the scatter
forms (diagonal_scatter, select_scatter, slice_scatter, as_strided_scatter) and the in-place
view ops (t_, transpose_, squeeze_, unsqueeze_, ...) against torch."""

import numpy as np
import oracle
import pytest
from oracle import check, check_error, fd_check, gradgrad_check, same

import ember

_RNG = np.random.default_rng(1313)


def arr(*shape, **kw):
    return oracle.arr(*shape, rng=_RNG, **kw)


def _nodes(out):
    outs = out if isinstance(out, tuple | list) else (out,)
    return [type(o.grad_fn).__name__ if o.grad_fn is not None else None for o in outs]


X = arr(3, 4)

COPIES = [
    lambda m, x: m.diagonal_copy(x),
    lambda m, x: m.diagonal_copy(x, 1),
    lambda m, x: m.t_copy(x),
    lambda m, x: m.expand_copy(x, [2, 3, 4]),
    lambda m, x: m.view_copy(x, [12]),
    lambda m, x: m.unbind_copy(x),
    lambda m, x: m.unbind_copy(x, 1),
    lambda m, x: m.alias_copy(x),
    lambda m, x: m.permute_copy(x, [1, 0]),
    lambda m, x: m.select_copy(x, 1, -1),
    lambda m, x: m.slice_copy(x, 1, 0, 3, 2),
    lambda m, x: m.slice_copy(x),
    lambda m, x: m.split_copy(x, 2, 1),
    lambda m, x: m.split_with_sizes_copy(x, [1, 2]),
    lambda m, x: m.squeeze_copy(x[None]),
    lambda m, x: m.squeeze_copy(x[None], 0),
    lambda m, x: m.transpose_copy(x, 0, 1),
    lambda m, x: m.unfold_copy(x, 1, 2, 1),
    lambda m, x: m.unsqueeze_copy(x, -1),
    lambda m, x: m.as_strided_copy(x, [2, 2], [1, 2], 1),
    lambda m, x: m.narrow_copy(x, 1, 1, 2),
    lambda m, x: x.narrow_copy(0, 1, 2),
    lambda m, x: m.unsafe_split(x, 2, 1),
    lambda m, x: x.unsafe_chunk(2),
    lambda m, x: x.unsafe_split_with_sizes([1, 3], 1),
]


@pytest.mark.parametrize("fn", COPIES)
def test_copy_forms(fn):
    e, t = check(fn, X)
    assert _nodes(e) == _nodes(t)
    outs = e if isinstance(e, tuple) else (e,)
    assert all(o._base is None for o in outs)


@pytest.mark.parametrize("fn", COPIES[:21])
def test_copy_forms_own_their_memory(fn):
    x = ember.tensor(X)
    outs = fn(ember, x)
    outs = outs if isinstance(outs, tuple) else (outs,)
    before = [o.clone() for o in outs]
    x.add_(1)
    for o, b in zip(outs, before):
        assert ember.equal(o, b) and o.is_contiguous()


def test_narrow_copy_negative_start():
    check(lambda m, x: x.narrow_copy(0, -2, 2), X, grad=False)  # torch's backward fails here


def test_unsafe_split_shares_memory():
    same(lambda m: (lambda x: (x.unsafe_split(2)[0].add_(1), x)[1])(m.zeros(4)))


def test_detach_copy():
    same(lambda m: m.detach_copy(m.ones(2, requires_grad=True) * 2).requires_grad)
    same(lambda m: m.detach_copy(m.ones(2)).requires_grad)
    check_error(lambda m, x: m.detach_copy(x.requires_grad_()).sum().backward(), X)


SCATTERS = [
    (lambda m, x, s: m.diagonal_scatter(x, s[0, :3]), None),
    (lambda m, x, s: m.diagonal_scatter(x, s[0, :2], 2), None),
    (lambda m, x, s: m.diagonal_scatter(x, s[0, :3], -1, 1, 0), None),
    (lambda m, x, s: x.diagonal_scatter(s[0, :3].double()), None),
    (lambda m, x, s: m.select_scatter(x, s[0], 0, 1), None),
    (lambda m, x, s: m.select_scatter(x, s[:, 0], 1, -1), None),
    (lambda m, x, s: x.select_scatter(s[0], 0, -3), None),
    (lambda m, x, s: m.slice_scatter(x, s[:, :2], 1, 0, 4, 2), None),
    (lambda m, x, s: m.slice_scatter(x, s[1:], start=-2), None),
    (lambda m, x, s: m.slice_scatter(x, s), None),
    (lambda m, x, s: x.slice_scatter(s[:, 1:3], 1, 1, 3), None),
]


@pytest.mark.parametrize("fn", [f for f, _ in SCATTERS])
def test_scatters(fn):
    e, t = check(fn, X, arr(3, 4))
    assert _nodes(e) == _nodes(t)


def test_scatter_integer_and_mixed_dtypes():
    check(lambda m, x, s: m.diagonal_scatter(x, s), arr(3, 3, dtype="int64"),
          arr(3, dtype="float32"), grad=False)
    check(lambda m, x, s: m.select_scatter(x, s, 0, 0), arr(2, 3), arr(3, dtype="int32"))


def test_scatter_double_backward():
    gradgrad_check(lambda x, s: ember.diagonal_scatter(x, s * s), arr(3, 3, dtype="float64"),
                   arr(3, dtype="float64"))
    gradgrad_check(lambda x, s: ember.slice_scatter(x * x, s, 1, 1, 3),
                   arr(3, 4, dtype="float64"), arr(3, 2, dtype="float64"))


def test_as_strided_scatter():
    e, t = check(lambda m, x, s: m.as_strided_scatter(x, s, (3,), (1,)), X, arr(3),
                 grad_inputs=(1,))
    assert _nodes(e) == _nodes(t)
    check(lambda m, x, s: m.as_strided_scatter(x, s, (2, 2), (4, 1), 1), X, arr(2, 2),
          grad=False)
    # torch 2.13 gives ``input`` the gradient of the overwritten region (and nothing elsewhere);
    # ember gives the true one, checked against finite differences.
    fd_check(lambda x, s: ember.as_strided_scatter(x * x, s, (2, 2), (4, 1), 1),
             arr(3, 4, dtype="float64"), arr(2, 2, dtype="float64"))


@pytest.mark.parametrize("fn", [
    lambda m, x: m.diagonal_scatter(x, m.ones(2)),
    lambda m, x: m.diagonal_scatter(x, m.tensor(1.0)),
    lambda m, x: m.diagonal_scatter(x, m.ones(3), 0, 0, 0),
    lambda m, x: m.select_scatter(x, m.ones(3), 0, 1),
    lambda m, x: m.select_scatter(x, m.ones(4), 0, 5),
    lambda m, x: m.select_scatter(x, m.ones(4), 0, 1.5),
    lambda m, x: m.slice_scatter(x, m.ones(3, 3), 1, 0, 4, 2),
    lambda m, x: m.slice_scatter(x, m.ones(3, 2), 1, step=0),
    lambda m, x: m.as_strided_scatter(x, m.ones(3), (2, 2), (1, 2)),
])
def test_scatter_errors(fn):
    same(lambda m: fn(m, m.tensor(X)))


INPLACE_VIEWS = [
    lambda m, x: (x * 2).t_(),
    lambda m, x: (x * 2).transpose_(0, 1),
    lambda m, x: (x * 2).swapaxes_(1, 0),
    lambda m, x: (x * 2).swapdims_(-1, 0),
    lambda m, x: (x * 2)[None].squeeze_(),
    lambda m, x: (x * 2)[None].squeeze_(0),
    lambda m, x: (x * 2)[None, :, None].squeeze_((0, 2)),
    lambda m, x: (x * 2).unsqueeze_(1),
    lambda m, x: (x * 2)[1:].t_(),
]


@pytest.mark.parametrize("fn", INPLACE_VIEWS)
def test_inplace_views(fn):
    e, t = check(fn, X)
    assert _nodes(e) == _nodes(t)


@pytest.mark.parametrize("fn", [
    lambda m: (lambda y: (y.t_() is y, y._version, tuple(y.shape), y.stride()))(m.randn(2, 3)),
    lambda m: (lambda z: (lambda b: (b.t_()._base is z, z._version, b.stride()))(z[0:2]))(
        m.zeros(3, 4)),
    lambda m: m.zeros(3, 4, requires_grad=True).t_(),
    lambda m: m.zeros(3, 4, requires_grad=True)[0:2].t_(),
    lambda m: m.zeros(2, 3, 4).t_(),
    lambda m: m.zeros(2, 3).transpose_(0, 5),
    lambda m: m.zeros(2, 3).squeeze_(0).shape,
])
def test_inplace_view_state_and_errors(fn):
    same(fn)


def test_inplace_view_under_no_grad_on_leaf():
    for lib in (ember, oracle.torch):
        x = lib.zeros(2, 3, requires_grad=True)
        with lib.no_grad():
            x.t_()
        assert tuple(x.shape) == (3, 2) and x.grad_fn is None and x.is_leaf


def test_inplace_view_gradients_flow():
    fd_check(lambda x: (x * x).t_().unsqueeze_(0) * ember.arange(3.0, dtype=ember.float64),
             arr(3, 4, dtype="float64"))


def test_copies_with_out():
    """split_copy writes into outs of the right shape only (no resizing); it and the other
    list-returning copies return nothing, as torch."""
    results = []
    for lib in (ember, oracle.torch):
        x = lib.tensor(X)
        outs = [lib.empty(2, 4), lib.empty(1, 4)]
        ret = lib.split_copy(x, 2, out=outs)
        pieces = [lib.empty(0) for _ in range(3)]
        ret2 = lib.unbind_copy(x, out=pieces)
        assert ret is None and ret2 is None
        results.append([o.numpy() for o in outs + pieces])
        with pytest.raises(RuntimeError, match="must match the size of tensor b"):
            lib.split_copy(x, 2, out=[lib.empty(0), lib.empty(0)])
    for e, t in zip(*results):
        np.testing.assert_array_equal(e, t)
