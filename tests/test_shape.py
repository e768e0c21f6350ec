"""View ops and copying shape ops against torch: values, grad_fn names, grads, memory sharing."""

import numpy as np
import pytest
import torch
from oracle import arr, check, check_error, fd_check, gradgrad_check, negstride, noncontig

import ember

# (name, fn(m, x), input) — every fn returns a view of x in torch.
VIEWS = [
    ("view", lambda m, x: x.view(-1), arr(3, 4)),
    ("view2", lambda m, x: x.view(2, -1, 3), arr(3, 4)),
    ("view0d", lambda m, x: x.view(1, 1), arr()),
    ("view_empty", lambda m, x: x.view(0, 2), arr(2, 0)),
    ("reshape_view", lambda m, x: x.reshape(4, 3), arr(3, 4)),
    ("view_as", lambda m, x: x.view_as(m.ones(12)), arr(3, 4)),
    ("reshape_as", lambda m, x: x.reshape_as(m.ones(2, 6)), arr(3, 4)),
    ("permute", lambda m, x: x.permute(2, 0, 1), arr(2, 3, 4)),
    ("permute_neg", lambda m, x: m.permute(x, (-1, 0, 1)), negstride(2, 3, 4)),
    ("transpose", lambda m, x: x.transpose(0, 2), arr(2, 3, 4)),
    ("swapaxes", lambda m, x: x.swapaxes(-1, 0), arr(2, 3)),
    ("t", lambda m, x: x.t(), arr(2, 3)),
    ("t1d", lambda m, x: x.t(), arr(3)),
    ("T", lambda m, x: x.T, arr(2, 3)),
    ("mT", lambda m, x: x.mT, arr(2, 3, 4)),
    ("mH", lambda m, x: x.mH, arr(2, 3, 4)),
    ("H", lambda m, x: x.H, arr(3, 4)),
    ("squeeze", lambda m, x: x.squeeze(), arr(1, 3, 1)),
    ("squeeze_dim", lambda m, x: x.squeeze(0), arr(1, 3, 1)),
    ("squeeze_noop", lambda m, x: x.squeeze(1), arr(1, 3, 1)),
    ("squeeze_dims", lambda m, x: x.squeeze((0, 2)), arr(1, 3, 1)),
    ("squeeze_0d", lambda m, x: x.squeeze(0), arr()),
    ("unsqueeze", lambda m, x: x.unsqueeze(-1), arr(2, 3)),
    ("unsqueeze_0d", lambda m, x: x.unsqueeze(0), arr()),
    ("flatten", lambda m, x: x.flatten(1), arr(2, 3, 4)),
    ("flatten_0d", lambda m, x: x.flatten(), arr()),
    ("unflatten", lambda m, x: x.unflatten(1, (2, -1)), arr(3, 4)),
    ("expand", lambda m, x: x.expand(2, 3, -1), arr(3, 1)),
    ("expand_as", lambda m, x: x.expand_as(m.ones(2, 3)), arr(3)),
    ("broadcast_to", lambda m, x: m.broadcast_to(x, (4, 3)), arr(1, 3)),
    ("narrow", lambda m, x: x.narrow(1, 1, 2), arr(3, 4)),
    ("narrow_neg", lambda m, x: m.narrow(x, -1, -3, 2), noncontig(3, 4)),
    ("select", lambda m, x: x.select(1, -1), arr(3, 4)),
    ("diagonal", lambda m, x: x.diagonal(), arr(3, 4)),
    ("diagonal_off", lambda m, x: x.diagonal(1), arr(3, 4)),
    ("diagonal_neg", lambda m, x: x.diagonal(-2), arr(3, 4)),
    ("diagonal_dims", lambda m, x: m.diagonal(x, 1, 2, 0), arr(3, 4, 5)),
    ("diagonal_empty", lambda m, x: x.diagonal(5), arr(3, 4)),
    ("diagonal_nc", lambda m, x: x.diagonal(), noncontig(3, 4)),
    ("movedim", lambda m, x: x.movedim(0, -1), arr(2, 3, 4)),
    ("moveaxis", lambda m, x: m.moveaxis(x, (0, 1), (2, 0)), arr(2, 3, 4)),
    ("unfold", lambda m, x: x.unfold(1, 2, 1), arr(3, 5)),
    ("unfold_step", lambda m, x: x.unfold(0, 2, 3), arr(7, 2)),
    ("unfold_0d", lambda m, x: x.unfold(0, 1, 1), arr()),
    ("getitem_int", lambda m, x: x[1], arr(3, 4)),
    ("getitem_int_1d", lambda m, x: x[-1], arr(3)),
    ("getitem_slice", lambda m, x: x[1:3], arr(4, 2)),
    ("getitem_step", lambda m, x: x[::2, 1::2], arr(4, 5)),
    ("getitem_none", lambda m, x: x[None, ..., None], arr(2, 3)),
    ("getitem_ellipsis", lambda m, x: x[...], arr(2, 3)),
    ("getitem_mixed", lambda m, x: x[:, 1, None, 1:], arr(2, 3, 4)),
]


@pytest.mark.parametrize("name,fn,a", VIEWS, ids=[v[0] for v in VIEWS])
def test_view_values_grads_and_grad_fn(name, fn, a):
    eo, to = check(fn, a)
    assert type(eo.grad_fn).__name__ == type(to.grad_fn).__name__


@pytest.mark.parametrize("name,fn,a", VIEWS, ids=[v[0] for v in VIEWS])
def test_view_shares_memory_and_version(name, fn, a):
    results = []
    for m in (ember, torch):
        x = m.from_numpy(np.array(a, copy=True))
        y = fn(m, x)
        x.add_(1)  # a write to the base shows in the view
        after_base = y.clone()
        if y.numel() and y.stride() and 0 not in y.stride() and name != "unfold":
            y.mul_(2)  # a write to the view shows in the base (overlapping unfold: racy in torch)
        results.append((x.clone(), after_base, x._version == y._version))
    (ex, ey, ev), (tx, ty, tv) = results
    np.testing.assert_allclose(ex.numpy(), tx.numpy())
    np.testing.assert_allclose(ey.numpy(), ty.numpy())
    assert ev and tv


def _sq(y):
    """A nonlinearity after a linear op, so its double backward has something to check."""
    return y * y


@pytest.mark.parametrize("name,fn,a", VIEWS[:44], ids=[v[0] for v in VIEWS[:44]])
def test_view_fd_and_gradgrad(name, fn, a):
    fd_check(lambda x: fn(ember, x), a)
    gradgrad_check(lambda x: _sq(fn(ember, x)), a)


def test_view_of_noncontiguous_raises_like_torch():
    check_error(lambda m, x: x.t().view(-1), arr(3, 4), match="view size is not compatible")
    check_error(lambda m, x: x.view(5, -1), arr(3, 4), match="is invalid for input of size 12")
    check_error(lambda m, x: x.view(-1, -1), arr(3, 4), match="only one dimension")
    check_error(lambda m, x: x.view(-1, 0), arr(0, 3), match="ambiguous")


def test_view_dtype_reinterprets_bytes():
    check(lambda m, x: x.view(m.int32), arr(2, 4), grad=False)
    check(lambda m, x: x.view(m.int16), arr(4, dtype="uint8", low=0, high=200))
    check(lambda m, x: x.view(m.uint8), arr(2, 2, dtype="int16", low=-300, high=300))
    check(lambda m, x: x.view(m.int32), arr(), grad=False)
    check_error(lambda m, x: x.view(m.int16), arr(3, dtype="uint8"), match="divisible by 2")
    check_error(lambda m, x: x.t().view(m.int16), arr(4, 2, dtype="uint8"), match="stride(-1)")
    check_error(lambda m, x: x.view(m.float64), arr(), match="cannot be 0")
    x = ember.zeros(2)
    y = x.view(ember.int32)
    y[0] = 1065353216
    assert x[0].item() == 1.0 and x._version == y._version


def test_reshape_copies_with_torch_nodes():
    def fn(m, x):
        y = x.t().reshape(-1)
        return y, type(y.grad_fn).__name__, type(y.grad_fn.next_functions[0][0]).__name__
    eo, to = check(lambda m, x: fn(m, x)[0], arr(3, 4))
    e, t = fn(ember, ember.ones(2, 3, requires_grad=True)), fn(torch, torch.ones(2, 3,
                                                                             requires_grad=True))
    assert e[1:] == t[1:] == ("UnsafeViewBackward0", "CloneBackward0")
    x = ember.ones(2, 3)
    y = x.t().reshape(-1)
    y[0] = 5.0  # a copy: the base is untouched
    assert x[0, 0].item() == 1.0


@pytest.mark.parametrize("fn,a", [
    (lambda m, x: x.reshape(-1), noncontig(3, 4)),
    (lambda m, x: x.flatten(), negstride(3, 4)),
    (lambda m, x: x.reshape(2, 6), negstride(3, 4)),
    (lambda m, x: x.contiguous(), noncontig(3, 4)),
    (lambda m, x: x.contiguous(), arr(3, 4)),
])
def test_reshape_noncontiguous(fn, a):
    check(fn, a)


def test_shape_errors():
    a = arr(2, 3)
    check_error(lambda m, x: x.unflatten(1, (2, 2)), a, match="don't multiply up")
    check_error(lambda m, x: x.squeeze(2), a, match="Dimension out of range")
    check_error(lambda m, x: x.movedim((0, 1), (1,)), a, match="movedim")
    check_error(lambda m, x: x.diagonal(0, 0, 0), a, match="cannot be identical")
    check_error(lambda m, x: x.unfold(1, 7, 1), a, match="maximum size")
    check_error(lambda m, x: x.unfold(1, 2, 0), a, match="step is 0")
    check_error(lambda m, x: x.flatten(1, 0), a, match="start_dim cannot come after")
    check_error(lambda m, x: x.expand(3, 3), a, match="must match the existing size")
    check_error(lambda m, x: x.permute(0, 0), a, match="duplicate dims")
    check_error(lambda m, x: x.permute(0), a, match="number of dimensions")
    check_error(lambda m, x: x.transpose(0, 2), a, match="Dimension out of range")
    check_error(lambda m, x: x.mT, arr(3), match="mT")
    check_error(lambda m, x: x.H, arr(3), match="tensor.H")
    check_error(lambda m, x: x.t(), arr(2, 2, 2), match="t() expects")
    check_error(lambda m, x: x.narrow(1, 7, 1), a, match="start out of range")
    check_error(lambda m, x: x.narrow(1, 2, 6), a, match="exceeds dimension size")
    check_error(lambda m, x: x.select(0, 5), a, match="out of range")
    check_error(lambda m, x, y: m.broadcast_tensors(x, y), a, arr(4), match="must match")


def test_T_on_3d_warns():
    with pytest.warns(UserWarning, match="deprecated"):
        ember.ones(2, 3, 4).T
    x = ember.ones((), requires_grad=True) * 1
    for name in ("T", "mT", "H", "mH"):
        with pytest.warns(UserWarning, match="deprecated on 0-D tensors"):
            y = getattr(x, name)
        assert y.shape == () and (y is x) == (name != "T")


def test_broadcast_tensors_and_shapes():
    check(lambda m, x, y: m.broadcast_tensors(x, y), arr(3, 1), arr(4))
    check(lambda m, x, y: m.broadcast_tensors(x, y), arr(3, 4), arr())
    assert ember.broadcast_shapes((3, 1), (4,), 1) == torch.broadcast_shapes((3, 1), (4,), 1)
    e = ember.broadcast_tensors(ember.ones(2, requires_grad=True), ember.ones(3, 2))
    assert e[0].grad_fn.name() == "ExpandBackward0"


# --- copies: repeat, tile, flip, roll, tril/triu, diag, trace -------------------------------

COPIES = [
    (lambda m, x: x.repeat(2, 3), arr(2, 3)),
    (lambda m, x: x.repeat(2, 1, 2), arr(2, 3)),
    (lambda m, x: x.repeat(3), arr()),
    (lambda m, x: x.repeat(2, 0), arr(2, 3)),
    (lambda m, x: x.tile((2,)), arr(2, 3)),
    (lambda m, x: m.tile(x, (2, 1, 1)), noncontig(2, 3)),
    (lambda m, x: x.repeat_interleave(2, dim=0), arr(2, 3)),
    (lambda m, x: x.repeat_interleave(3), arr(2, 2)),
    (lambda m, x: x.repeat_interleave(m.tensor([1, 0, 2]), dim=1), arr(2, 3)),
    (lambda m, x: x.repeat_interleave(m.tensor(2), dim=0), arr(2, 3)),
    (lambda m, x: m.repeat_interleave(x, 2, dim=-1), noncontig(2, 3)),
    (lambda m, x: x.flip(0), arr(3, 4)),
    (lambda m, x: m.flip(x, (0, 1)), negstride(3, 4)),
    (lambda m, x: x.flip([]), arr(3)),
    (lambda m, x: x.fliplr(), arr(3, 4)),
    (lambda m, x: x.flipud(), arr(3, 4)),
    (lambda m, x: x.roll(1, 0), arr(3, 4)),
    (lambda m, x: x.roll(-5), arr(3, 4)),
    (lambda m, x: m.roll(x, (1, -2), (1, 0)), noncontig(3, 4)),
    (lambda m, x: x.roll(2, 0), arr(0, 3)),
    (lambda m, x: x.rot90(), arr(3, 4)),
    (lambda m, x: m.rot90(x, -3, (2, 0)), noncontig(2, 3, 4)),
    (lambda m, x: x.rot90(2, [1, 0]), arr(3, 4)),
    (lambda m, x: x.tril(), arr(3, 4)),
    (lambda m, x: x.tril(-1), arr(2, 3, 4)),
    (lambda m, x: x.triu(1), noncontig(4, 3)),
    (lambda m, x: m.triu(x, diagonal=-1), arr(3, 3)),
    (lambda m, x: x.diag(), arr(3, 4)),
    (lambda m, x: x.diag(2), arr(3, 4)),
    (lambda m, x: x.diag(-1), arr(3, 4)),
    (lambda m, x: x.diag(), arr(3)),
    (lambda m, x: x.diag(-2), arr(3)),
    (lambda m, x: x.diag_embed(), arr(2, 3)),
    (lambda m, x: x.diag_embed(1, 0, 2), arr(2, 3)),
    (lambda m, x: x.trace(), arr(3, 4)),
    (lambda m, x: x.trace(), arr(4, 3)),
    (lambda m, x: x.trace(), arr(0, 3)),
    (lambda m, x: x.flip(0), arr(0, 3)),
    (lambda m, x: x.roll(1), arr()),
    (lambda m, x: x.diag(), arr(0, 3)),
    (lambda m, x: x.diag_embed(-1), arr(2, 0)),
]


@pytest.mark.parametrize("fn,a", COPIES)
def test_copy_ops_match_torch(fn, a):
    eo, to = check(fn, a)
    assert type(eo.grad_fn).__name__ == type(to.grad_fn).__name__


@pytest.mark.parametrize("fn,a", COPIES)
def test_copy_ops_fd_and_gradgrad(fn, a):
    fd_check(lambda x: fn(ember, x), a)
    gradgrad_check(lambda x: _sq(fn(ember, x)), a)


def test_copies_do_not_alias():
    x = ember.arange(6.0).reshape(2, 3)
    for y in (x.flip(0), x.roll(1), x.tril(), x.repeat(1, 1), x.diag(), x.contiguous().clone()):
        y.zero_()
    assert x.sum().item() == 15.0


def test_copy_int_dtypes():
    a = arr(3, 4, dtype="int64", low=-5, high=5)
    for fn in (lambda m, x: x.trace(), lambda m, x: x.flip(1), lambda m, x: x.tril(),
               lambda m, x: x.diag(), lambda m, x: x.repeat(2, 1), lambda m, x: x.roll(1, 1)):
        check(fn, a)


def test_repeat_interleave_counts_only():
    check(lambda m, c: m.repeat_interleave(c), np.array([1, 2, 0, 3]))


def test_copy_errors():
    check_error(lambda m, x: x.repeat_interleave(m.tensor([1, 2]), dim=0), arr(3),
                match="repeats must have the same size")
    check_error(lambda m, x: x.repeat_interleave(-1), arr(3), match="negative")
    check_error(lambda m, x: x.repeat(2), arr(2, 3), match="can not be smaller")
    check_error(lambda m, x: x.fliplr(), arr(3), match=">= 2-d")
    check_error(lambda m, x: x.roll((1, 2), 0), arr(3), match="shifts and dimensions")
    check_error(lambda m, x: x.tril(), arr(3), match="at least 2 dimensions")
    check_error(lambda m, x: x.diag(), arr(2, 2, 2), match="diag(): Supports 1D or 2D")
    check_error(lambda m, x: x.trace(), arr(3), match="expected a matrix")
    check_error(lambda m, x: x.flip(0, 0), arr(3), match="appears multiple times")
    check_error(lambda m, x: x.rot90(1, (0, 0)), arr(3, 3), match="rotation dims to be different")
    check_error(lambda m, x: x.rot90(1, (0,)), arr(3, 3), match="total rotation dims == 2")
    check_error(lambda m, x: x.roll(0, 0), arr(), match="no dimensions")
    check_error(lambda m, x: x.diag_embed(), arr(), match="Dimension out of range")


def test_block_diag_cartesian_prod_tri_indices():
    for fn in (lambda m, a, b, c: m.block_diag(a, b, c), lambda m, a, b, c: m.block_diag(c)):
        eo, to = check(fn, arr(2), arr(2, 3), arr())
        assert eo.grad_fn.name() == to.grad_fn.name()
    fd_check(lambda a, b: ember.block_diag(a, b), arr(2), arr(2, 3))
    check(lambda m, a, b: m.block_diag(a, b), arr(2, dtype="int64"), arr(1, 2))
    check(lambda m: m.block_diag())
    eo, to = check(lambda m, a, b: m.cartesian_prod(a, b), arr(2), arr(3))
    assert eo.grad_fn.name() == to.grad_fn.name()
    check(lambda m, a: m.cartesian_prod(a), arr(3))
    check_error(lambda m, a: m.block_diag(a), arr(1, 1, 1), match="2 or fewer dimensions")
    for args in ((3, 4, 1), (3, 3, -1), (0, 2), (4, 2, -5)):
        check(lambda m, args=args: m.triu_indices(*args))
        check(lambda m, args=args: m.tril_indices(*args, dtype=m.int32))


@pytest.mark.parametrize("args", [((3, 2), (1, 1)), ((2, 2), (3, 1), 1), ((2,), (0,)),
                                  ((2, 3), (1, 2)), ((0, 3), (1, 1))])
def test_as_strided(args):
    eo, to = check(lambda m, x: x.as_strided(*args), arr(6))
    assert eo.grad_fn.name() == to.grad_fn.name()
    fd_check(lambda x: ember.as_strided(x, *args), arr(6))
    if 0 not in args[0]:  # an empty view's gradient is zeros with no history, as in torch
        gradgrad_check(lambda x: ember.as_strided(x, *args) ** 2, arr(6))


def test_as_strided_shares_memory_and_errors():
    x = ember.zeros(6)
    y = x.as_strided((2, 2), (3, 1))
    y[1, 1] = 7.0
    assert x[4].item() == 7.0 and x._version == y._version
    check_error(lambda m, x: x.as_strided((10, 10), (1, 1)), arr(6), match="out of bounds")


def test_flatten_of_empty_tensors():
    # issue 11: ember asked reshape for -1, which is ambiguous in an empty tensor
    check(lambda m, x: m.flatten(x, 1), arr(0, 2, 3, 1))
    check(lambda m, x: x.flatten(2), arr(2, 0, 3, 1))
    check(lambda m, x: x.flatten(0, 1), arr(2, 0, 3))


@pytest.mark.parametrize("fn", [
    lambda m, x: x.movedim(0, 0), lambda m, x: x.movedim(-1, 0), lambda m, x: x.transpose(0, -1),
    lambda m, x: x.t(),
])
def test_dim_ops_on_0d_tensors(fn):
    check(fn, arr())


def test_unflatten_of_a_0d_tensor():
    check_error(lambda m, x: x.unflatten(0, (1, -1)), arr(), match="unflatten")
