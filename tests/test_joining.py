"""cat / stack / split / chunk / unbind / meshgrid against torch."""

import numpy as np
import pytest
import torch
from oracle import arr, check, check_error, fd_check, gradgrad_check, negstride, noncontig

import ember

JOIN = [
    (lambda m, a, b: m.cat([a, b]), arr(2, 3), arr(4, 3)),
    (lambda m, a, b: m.cat((a, b), dim=-1), arr(2, 3), noncontig(2, 1)),
    (lambda m, a, b: m.cat([a, b], 1), negstride(2, 3), arr(2, 0)),
    (lambda m, a, b: m.cat([a, b]), arr(2, 3), arr(0)),  # legacy: 1-D empty is skipped
    (lambda m, a, b: m.cat([a, b]), arr(0), arr(0)),
    (lambda m, a, b: m.concat([a, b, a]), arr(3), arr(2)),
    (lambda m, a, b: m.concatenate([a, b], axis=0), arr(1, 2), arr(1, 2)),
    (lambda m, a, b: m.stack([a, b]), arr(2, 3), arr(2, 3)),
    (lambda m, a, b: m.stack([a, b], dim=-1), noncontig(2, 3), negstride(2, 3)),
    (lambda m, a, b: m.stack([a, b]), arr(), arr()),
    (lambda m, a, b: m.hstack([a, b]), arr(2, 3), arr(2, 1)),
    (lambda m, a, b: m.hstack([a, b]), arr(3), arr()),
    (lambda m, a, b: m.vstack([a, b]), arr(3), arr(3)),
    (lambda m, a, b: m.vstack([a, b]), arr(2, 3), arr(1, 3)),
    (lambda m, a, b: m.row_stack([a, b]), arr(2, 3), arr(1, 3)),
    (lambda m, a, b: m.dstack([a, b]), arr(3), arr(3)),
    (lambda m, a, b: m.dstack([a, b]), arr(2, 3), arr(2, 3, 2)),
    (lambda m, a, b: m.column_stack([a, b]), arr(3), arr(3, 2)),
    (lambda m, a, b: m.column_stack([a, b]), arr(), arr(1)),
]


@pytest.mark.parametrize("fn,a,b", JOIN)
def test_join_matches_torch(fn, a, b):
    eo, to = check(fn, a, b)
    assert type(eo.grad_fn).__name__ == type(to.grad_fn).__name__


@pytest.mark.parametrize("fn,a,b", JOIN[:3] + JOIN[7:9])
def test_join_fd_and_gradgrad(fn, a, b):
    fd_check(lambda x, y: fn(ember, x, y), a, b)
    gradgrad_check(lambda x, y: fn(ember, x, y) ** 2, a, b)


@pytest.mark.parametrize("da,db", [("int64", "float32"), ("int32", "int64"), ("bool", "int32"),
                                   ("float32", "float64")])
def test_cat_stack_promote(da, db):
    a, b = arr(2, 3, dtype=da), arr(1, 3, dtype=db)
    check(lambda m, x, y: m.cat([x, y]), a, b)
    check(lambda m, x, y: m.stack([x, y[:1].expand(2, 3)]), a, b, grad=False)
    check(lambda m, x, y: m.cat([x, y]), a, arr(0, dtype=db))


def test_cat_partial_requires_grad_and_out():
    check(lambda m, a, b: m.cat([a, b]), arr(2, 3), arr(1, 3), grad_inputs=(1,))
    for m in (ember, torch):
        out = m.zeros(3, 3)
        view = out[0]
        r = m.cat([m.ones(1, 3), m.zeros(2, 3)], out=out)
        assert r is out and out.sum().item() == 3.0 and view.sum().item() == 3.0
        small = m.zeros(2)
        with pytest.warns(UserWarning, match="resized"):
            m.stack([m.ones(2), m.ones(2)], out=small)
        assert small.shape == (2, 2)
    check_error(lambda m, a: m.cat([a.requires_grad_()], out=m.zeros(2, 3)), arr(2, 3).copy(),
                match="out=")


def test_join_errors():
    check_error(lambda m: m.cat([]), match="expected a non-empty list of Tensors")
    check_error(lambda m: m.stack([]), match="stack expects a non-empty TensorList")
    check_error(lambda m: m.hstack([]), match="hstack expects a non-empty TensorList")
    check_error(lambda m, a: m.cat([a, a]), arr(), match="zero-dimensional tensor")
    check_error(lambda m, a, b: m.cat([a, b]), arr(2, 3), arr(3),
                match="Tensors must have same number of dimensions: got 2 and 1")
    check_error(lambda m, a, b: m.cat([a, b]), arr(2, 3), arr(2, 4),
                match="Sizes of tensors must match except in dimension 0. Expected size 3 but "
                      "got size 4 for tensor number 1 in the list.")
    check_error(lambda m, a, b: m.cat([a, b], 1), arr(2, 3), arr(3, 3),
                match="Sizes of tensors must match except in dimension 1")
    check_error(lambda m, a: m.cat([a, a], 2), arr(2, 3), match="Dimension out of range")
    check_error(lambda m, a: m.cat(a), arr(2, 3), match="must be tuple of Tensors")
    check_error(lambda m, a, b: m.stack([a, b]), arr(2, 3), arr(2, 4),
                match="stack expects each tensor to be equal size, but got [2, 3] at entry 0 "
                      "and [2, 4] at entry 1")


# --- split / chunk / unbind -----------------------------------------------------------------

SPLITS = [
    (lambda m, x: x.split(2), arr(5, 3)),
    (lambda m, x: x.split(2, dim=1), noncontig(3, 4)),
    (lambda m, x: m.split(x, [1, 3], 1), arr(2, 4)),
    (lambda m, x: x.split([0, 2, 0]), arr(2)),
    (lambda m, x: x.split(3), arr(0, 2)),
    (lambda m, x: x.split_with_sizes([2, 1], -1), negstride(2, 3)),
    (lambda m, x: x.chunk(3), arr(4, 2)),
    (lambda m, x: x.chunk(2, -1), arr(2, 5)),
    (lambda m, x: m.chunk(x, 5), arr(3)),
    (lambda m, x: x.chunk(1), arr(3)),
    (lambda m, x: x.chunk(3), arr(0, 2)),
    (lambda m, x: x.unbind(), arr(3, 2)),
    (lambda m, x: m.unbind(x, 1), noncontig(2, 3)),
    (lambda m, x: x.unbind(0), arr(3)),
    (lambda m, x: x.tensor_split(3), arr(7)),
    (lambda m, x: x.tensor_split([1, 5], dim=1), arr(2, 4)),
    (lambda m, x: m.tensor_split(x, 4, 1), arr(2, 2)),
    (lambda m, x: m.hsplit(x, 2), arr(2, 4)),
    (lambda m, x: x.hsplit([1]), arr(4)),
    (lambda m, x: m.vsplit(x, [1, 2]), arr(3, 2)),
    (lambda m, x: x.dsplit(2), arr(1, 2, 4)),
]


@pytest.mark.parametrize("fn,a", SPLITS)
def test_split_family_matches_torch(fn, a):
    eo, to = check(fn, a)
    assert [type(o.grad_fn).__name__ for o in eo] == [type(o.grad_fn).__name__ for o in to]
    # one node for all outputs, as in torch
    assert len({id(o.grad_fn) for o in eo}) == len({id(o.grad_fn) for o in to})


@pytest.mark.parametrize("fn,a", SPLITS[:3] + SPLITS[6:7] + SPLITS[11:13])
def test_split_fd_and_gradgrad(fn, a):
    def f(x):
        outs = fn(ember, x)
        return ember.cat([o.reshape(-1) * (i + 1) for i, o in enumerate(outs)])
    fd_check(f, a)
    gradgrad_check(lambda x: f(x) ** 2, a)


@pytest.mark.parametrize("op", ["split", "chunk", "unbind"])
def test_unused_outputs_get_zero_grad(op):
    for m in (ember, torch):
        x = m.ones(4, 3, requires_grad=True)
        parts = {"split": x.split, "chunk": x.chunk, "unbind": x.unbind}[op](
            *(() if op == "unbind" else (2,)))
        (parts[1] * 3).sum().backward()
        if m is ember:
            eg = x.grad.numpy().copy()
        else:
            np.testing.assert_allclose(eg, x.grad.numpy())


def test_split_outputs_are_views_of_input():
    for m in (ember, torch):
        x = m.zeros(4, 2)
        a, b = x.split(2)
        b[0, 0] = 7.0
        c = x.unbind(1)[1]
        c[0] = 5.0
        assert x[2, 0].item() == 7.0 and x[0, 1].item() == 5.0
        assert a._version == x._version == b._version == c._version


def test_multi_output_views_refuse_inplace_writes_under_grad():
    def write(m, x):
        a, b = (x.requires_grad_() * 1).split(2)
        a[0] = 1.0
    check_error(write, arr(4, 3), match="returns multiple views")
    for m in (ember, torch):
        x = m.ones(4, 3, requires_grad=True) * 1
        with m.no_grad():
            a, _ = x.split(2)
            a[0] = 2.0
        d, _ = x.detach().unbind(1)[:2]
        d[0] = 3.0
        assert x[0, 0].item() == 3.0 and x[0, 1].item() == 2.0


def test_iter_uses_unbind():
    x = ember.ones(3, 2, requires_grad=True)
    rows = list(x)
    assert len(rows) == 3 and rows[0].grad_fn.name() == "UnbindBackward0"
    sum(r * (i + 1) for i, r in enumerate(rows)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[1, 1], [2, 2], [3, 3]])


def test_split_errors():
    check_error(lambda m, x: x.split([1, 3], 1), arr(4, 6), match="split_with_sizes expects")
    check_error(lambda m, x: x.split(0, 1), arr(4, 6), match="split_size can only be 0")
    check_error(lambda m, x: x.split(-1), arr(4, 6), match="non-negative")
    check_error(lambda m, x: x.split(1), arr(), match="at least a 1-dimensional")
    check_error(lambda m, x: x.chunk(0), arr(4), match="greater than 0")
    check_error(lambda m, x: x.unbind(), arr(), match="no dimensions")
    check_error(lambda m, x: x.unbind(2), arr(4, 6), match="Dimension out of range")
    check_error(lambda m, x: x.tensor_split(0), arr(4), match="larger than 0")
    check_error(lambda m, x: m.hsplit(x, 4), arr(4, 6), match="not divisible")
    check_error(lambda m, x: m.dsplit(x, 2), arr(4, 6), match="at least 3 dimension")


# --- meshgrid -------------------------------------------------------------------------------


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid(indexing):
    check(lambda m, a, b, c: m.meshgrid(a, b, c, indexing=indexing), arr(3), arr(2), arr())
    check(lambda m, a, b: m.meshgrid([a, b], indexing=indexing), arr(3), arr(4))
    check(lambda m, a: m.meshgrid(a, indexing=indexing), arr(3))


def test_meshgrid_warns_and_errors():
    with pytest.warns(UserWarning, match="indexing argument"):
        ember.meshgrid(ember.ones(2), ember.ones(3))
    check_error(lambda m, a, b: m.meshgrid(a, b, indexing="foo"), arr(2), arr(3),
                match="indexing must be one of")
    check_error(lambda m, a, b: m.meshgrid(a, b, indexing="ij"), arr(2, 2), arr(3),
                match="Expected 0D or 1D tensor")


def test_stack_checks_its_dim_before_the_shapes():
    check_error(lambda m, a, b: m.stack([a, b], 2), arr(), arr(0), match="Dimension out of range")
