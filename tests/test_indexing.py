"""getitem / setitem and the index-driven ops against torch (values, grads, errors)."""

import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import arr, check, check_error, fd_check, gradgrad_check, negstride, noncontig, same

import ember

# key(m) -> index key, built per library (tensors in keys must be each library's own).
KEYS = [
    lambda m: 1,
    lambda m: -1,
    lambda m: slice(1, 3),
    lambda m: slice(None, None, 2),
    lambda m: slice(-3, None, 3),
    lambda m: slice(10, 20),
    lambda m: (1, slice(None), 2),
    lambda m: (Ellipsis, 1),
    lambda m: (None, 1),
    lambda m: (slice(None), None, Ellipsis, None),
    lambda m: [0, 2],
    lambda m: [[0, 1], [2, 3]],
    lambda m: [0, 0, 1],  # repeated indices: gradients add up
    lambda m: [],
    lambda m: m.tensor([0, -1]),
    lambda m: m.tensor(2),  # a 0-d integer tensor acts like an int
    lambda m: (m.tensor([0, 1]), m.tensor([2, 3])),
    lambda m: (m.tensor([[0], [1]]), slice(None), m.tensor([1, 2, 3])),  # broadcast, split
    lambda m: (slice(None), m.tensor([1, 0])),
    lambda m: (1, slice(None), [0, 1]),  # int first, then index: torch's placement
    lambda m: (slice(None), 0, [1, 2]),
    lambda m: (slice(1, 3), [0, 1], [2, 3]),
    lambda m: m.tensor([True, False, True, True]),
    lambda m: (Ellipsis, m.tensor([True, False, True, False, True, False])),
    lambda m: (slice(None), m.tensor([[True, False, True, False, True, False]] * 5)),
    lambda m: True,
    lambda m: False,
    lambda m: m.tensor(True),
    lambda m: (None, [1, 2], None),
]


@pytest.mark.parametrize("k", range(len(KEYS)))
def test_getitem_matches_torch(k):
    key = KEYS[k]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        eo, to = check(lambda m, x: x[key(m)], arr(4, 5, 6))
    assert len([x for x in w if "non-tuple" in str(x.message)]) in (0, 2)  # both or neither
    assert type(eo.grad_fn).__name__ == type(to.grad_fn).__name__


@pytest.mark.parametrize("k", [0, 3, 6, 11, 17, 19, 22])
@pytest.mark.parametrize("make", [noncontig, negstride])
def test_getitem_strided_inputs(k, make):
    check(lambda m, x: x[KEYS[k](m)], make(4, 5, 6))


def test_getitem_mask_over_whole_tensor_and_0d():
    check(lambda m, x: x[x > 0], arr(3, 4))
    check(lambda m, x: x[x > 5], arr(3, 4))
    for key in (lambda m: None, lambda m: Ellipsis, lambda m: True, lambda m: m.tensor(False)):
        check(lambda m, x, key=key: x[key(m)], arr())
    check(lambda m, x: x[:, 1], arr(0, 3))
    check(lambda m, x: x[[]], arr(0, 3))
    check(lambda m, x: x[1:, [0, 2]][x[1:, 0] > 0], arr(4, 3))


@pytest.mark.parametrize("k", [1, 6, 11, 12, 17, 19, 22])
def test_getitem_fd_and_gradgrad(k):
    fd_check(lambda x: x[KEYS[k](ember)], arr(4, 5, 6))
    gradgrad_check(lambda x: x[KEYS[k](ember)] ** 2, arr(4, 5, 6))


def test_getitem_int_tensor_dtypes():
    check(lambda m, x, i: x[i], arr(4, 3), np.array([3, 1], dtype="int32"))
    check_error(lambda m, x, i: x[i], arr(4, 3), np.array([3, 1], dtype="int16"),
                match="tensors used as indices")
    with pytest.warns(UserWarning, match="uint8"):
        check(lambda m, x, i: x[i], arr(4, 3), np.array([1, 0, 1, 1], dtype="uint8"))


def test_getitem_errors():
    a = arr(4, 6)
    check_error(lambda m, x: x[::-1], a, match="step must be greater than zero")
    check_error(lambda m, x: x[5], a, match="index 5 is out of bounds for dimension 0 with size 4")
    check_error(lambda m, x: x[:, -7], a, match="index -7 is out of bounds for dimension 1")
    check_error(lambda m, x: x[[7]], a, match="index 7 is out of bounds for dimension 0")
    check_error(lambda m, x: x[x[0] > 0], a, match="The shape of the mask [6] at index 0 does "
                "not match the shape of the indexed tensor [4, 6] at index 0")
    check_error(lambda m, x: x[0, 0, 0], a, match="too many indices for tensor of dimension 2")
    check_error(lambda m, x: x[0][0][0], a, match="invalid index of a 0-dim tensor")
    check_error(lambda m, x: x[1.5], a, match="only integers, slices")
    check_error(lambda m, x: x[m.tensor([1.0])], a, match="tensors used as indices must be")
    check_error(lambda m, x: x[[0, 1], [0, 1, 2]], a, match="shape mismatch")


def test_getitem_fast_paths_are_views():
    x = ember.arange(12.0).reshape(3, 4)
    r, s = x[1], x[1:]
    r[0] = 100.0
    s[1, 1] = 200.0
    assert x[1, 0].item() == 100.0 and x[2, 1].item() == 200.0
    assert r._version == x._version == s._version == 2
    assert x[0].grad_fn is None


# --- setitem --------------------------------------------------------------------------------

# (key(m), value array or scalar)
SETS = [
    (lambda m: 1, arr(5, 6)),
    (lambda m: 1, arr(6)),  # broadcast
    (lambda m: 1, arr(1, 5, 6)),  # leading 1s stripped, as torch
    (lambda m: (slice(None), 1), arr(4, 6)),
    (lambda m: (Ellipsis, 0), arr(5)),
    (lambda m: slice(1, 3), arr()),
    (lambda m: (slice(None, None, 2), slice(1, None, 2)), arr(2, 2, 6)),
    (lambda m: 0, 2.5),
    (lambda m: [0, 2], arr(2, 5, 6)),
    (lambda m: m.tensor([3, 1]), arr(6)),
    (lambda m: (m.tensor([0, 2]), slice(None), m.tensor([1, 3])), arr(2, 5)),
    (lambda m: (1, slice(None), [0, 1]), arr(5, 2)),
    (lambda m: m.tensor([True, False, True, False]), arr(5, 6)),
    (lambda m: (None, 2), arr(1, 5, 6)),
    (lambda m: (Ellipsis, [0, 5]), -1.0),
]


def _setter(key):
    def fn(m, x, v):
        y = x * 1  # a non-leaf, so the write is recorded
        y[key(m)] = v
        return y
    return fn


@pytest.mark.parametrize("i", range(len(SETS)))
def test_setitem_matches_torch(i):
    key, v = SETS[i]
    eo, to = check(_setter(key), arr(4, 5, 6), v)
    assert type(eo.grad_fn).__name__ == type(to.grad_fn).__name__


@pytest.mark.parametrize("i", [0, 1, 3, 8, 10, 12])
def test_setitem_fd_and_gradgrad(i):
    key, v = SETS[i]
    fd_check(lambda x, w: _setter(key)(ember, x, w), arr(4, 5, 6), v)
    gradgrad_check(lambda x, w: _setter(key)(ember, x, w) ** 2, arr(4, 5, 6), v)


def test_setitem_mask_of_self_relu_grad_pattern():
    def fn(m, x, g):
        gi = g.clone()
        gi[x < 0] = 0
        return gi
    check(fn, arr(3, 4), arr(3, 4), grad_inputs=(1,))

    def fn2(m, x):
        y = x.clone()
        y[y > 0] = m.tensor(1.0)
        return y
    check(fn2, arr(3, 4))


def test_setitem_plain_tensors_and_casts():
    def fn(m, x):
        x = x.clone()
        x[0] = 2.7  # float into int: truncated
        x[:, 1] = m.tensor([5, 6, 7], dtype=m.int32)
        x[x > 3] = m.tensor(-1.0, dtype=m.float64)
        x[[2, 2], [0, 0]] = 9
        return x
    check(fn, arr(3, 3, dtype="int64", low=0, high=5))

    def fn_view(m, x):
        x = x.clone()
        row = x[1]
        row[1:] = 0.5  # a write into a view lands in the base
        x[..., 0] = m.tensor([1.0, 2.0, 3.0])
        return x
    check(fn_view, arr(3, 3), grad=False)

    def fn_into_grad_free(m, v):
        out = m.zeros(2, 3)
        out[:, 1] = v
        out[0] = v[0]
        return out
    check(fn_into_grad_free, arr(2))


def test_setitem_bumps_version_and_checks_saved():
    x = ember.ones(3, requires_grad=True)
    y = x * 1
    z = y * y
    v = y._version
    y[0] = 5.0
    assert y._version == v + 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_setitem_errors():
    a = arr(4, 6)
    check_error(lambda m, x: x.__setitem__(slice(None, None, -1), 0.0), a,
                match="step must be greater than zero")
    check_error(lambda m, x: x.__setitem__(9, 0.0), a, match="out of bounds")
    check_error(lambda m, x: x.__setitem__([0, 1], m.ones(3)), a, match="shape mismatch")
    check_error(lambda m, x: x.__setitem__(0, m.ones(3)), a, match="must match the existing size")
    check_error(lambda m, x: x.expand(2, 4, 6).__setitem__((slice(None), 0), 1.0), a,
                match="single memory")

    def leaf(m, x):
        x.requires_grad_(True)
        x[0] = 1.0
    check_error(leaf, a, match="a leaf Variable that requires grad")


def test_setitem_through_views_rebases_base_like_torch():
    def fn(m, a, w):
        b = a * 1
        v = b[0]
        v[1] = 5.0
        v2 = b[:, 1]
        v2[[0, 2]] = w[:2] * 3
        out = m.zeros(3, 4)
        r = out[1]
        r[:2] = w[:2]
        names = (v.grad_fn.name().split("::")[-1], b.grad_fn.name().split("::")[-1],
                 r.grad_fn.name(), out.requires_grad, b._version == v2._version == 2)
        return b * b + out * v2[:, None], names
    check(lambda m, a, w: fn(m, a, w)[0], arr(3, 4), arr(3))
    en = fn(ember, ember.ones(3, 4, requires_grad=True), ember.ones(3, requires_grad=True))[1]
    tn = fn(torch, torch.ones(3, 4, requires_grad=True), torch.ones(3, requires_grad=True))[1]
    assert en == tn


def _inplace_views(m, a, w):
    b = a * 1
    b[0].mul_(2)
    b[:, 1].add_(w)
    b.diagonal().exp_()
    out = m.zeros(3, 4)
    out[1].add_(w[0])
    out.t()[2].sub_(w)
    return b * b + out


def test_inplace_ops_on_views_rebase_like_torch():
    check(_inplace_views, arr(3, 4, low=-1, high=1), arr(3))
    grads, an, wn = [], arr(3, 4, low=-1, high=1), arr(3)
    for m in (ember, torch):  # a .sum() root: its gradient is an all-0-stride broadcast
        a = m.tensor(an, requires_grad=True)
        w = m.tensor(wn, requires_grad=True)
        _inplace_views(m, a, w).sum().backward()
        grads.append((a.grad.numpy(), w.grad.numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-5)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-5)


def test_setitem_through_view_fd_and_gradgrad():
    def fn(a, w):
        b = a * 1
        b[1][::2] = w * w
        c = b.t()
        c[0, 1:] = w[0]
        return b * c.t()
    fd_check(fn, arr(3, 4), arr(2))
    gradgrad_check(fn, arr(3, 4), arr(2))


# --- random keys (hypothesis) ---------------------------------------------------------------


@st.composite
def _keys(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    items, dim, ellipsis = [], 0, False
    while dim < len(shape) and draw(st.booleans()):
        size = shape[dim]
        kind = draw(st.sampled_from(["int", "slice", "none", "list", "mask", "ellipsis"]))
        if kind == "int":
            items.append(("int", draw(st.integers(-size, size - 1))))
        elif kind == "slice":
            items.append(("slice", slice(draw(st.integers(-5, 5) | st.none()),
                                         draw(st.integers(-5, 5) | st.none()),
                                         draw(st.integers(1, 3) | st.none()))))
        elif kind == "none":
            items.append(("none", None))
            continue
        elif kind == "list":
            items.append(("list", draw(st.lists(st.integers(-size, size - 1), max_size=3))))
        elif kind == "mask":
            items.append(("mask", draw(st.lists(st.booleans(), min_size=size, max_size=size))))
        elif not ellipsis:
            ellipsis = True
            items.append(("ellipsis", Ellipsis))
            dim = len(shape) - sum(1 for k, _ in items if k not in ("none", "ellipsis")) + 1
            continue
        dim += 1

    def make(m):
        out = []
        for kind, v in items:
            if kind in ("list", "mask"):
                out.append(m.tensor(v, dtype=m.int64 if kind == "list" else m.bool))
            else:
                out.append(v)
        return tuple(out)
    return shape, make


@settings(max_examples=40, deadline=None)
@given(_keys())
def test_random_keys_get_and_set_match_torch(case):
    shape, make = case
    a = arr(*shape)
    try:
        torch.zeros(shape)[make(torch)]
    except IndexError:  # e.g. index lists that do not broadcast together
        check_error(lambda m, x: x[make(m)], a)
        return
    check(lambda m, x: x[make(m)], a)

    def setter(m, x):
        y = x * 1
        y[make(m)] = 0.5
        return y
    check(setter, a)


@pytest.mark.parametrize("key", [slice(None), slice(0, 2), slice(0, 5), slice(None, 2),
                                 Ellipsis, (Ellipsis, slice(None, 2))])
def test_setitem_of_the_whole_tensor_is_copy_or_fill(key):
    # torch skips a slice keeping a whole dim: x[:2] = v on 2 rows is x.fill_(v), whose
    # gradient for the old values (zeros_like) has no history
    def fn(m, x, v):
        t = x * 1
        t[key] = v
        return t.grad_fn.name().split("::")[-1], m.autograd.grad(
            (t * t).sum(), x, create_graph=True)[0].requires_grad
    for v in (lambda m: 2.0, lambda m: m.ones(2)):
        same(lambda m, v=v: fn(m, m.tensor([1.0, 2.0], requires_grad=True), v(m)))
    check(lambda m, x: _set(m, x, key), arr(2))


def test_setitem_partial_slices_are_still_copy_slices():
    same(lambda m: _set(m, m.tensor([1.0, 2.0], requires_grad=True), slice(-2, None))
         .grad_fn.name().split("::")[-1])


def _set(m, x, key):
    t = x * 1
    t[key] = 3.0
    return t


@pytest.mark.parametrize("shape", [(1, 0, 1), (2, 0), (0,), (1, 2)])
def test_index_bounds_of_empty_tensors(shape):
    # torch checks an index against its dim only where elements are visited: none in an
    # empty tensor whose dim has elements; a dim of size 0 refuses any index
    def get(m, x):
        return x[m.tensor([0, 5])], x[[0, 5]]

    def put(m, x):
        x[m.tensor([0, 5])] = 1.0
        return x
    for fn in (get, put):
        if 0 in shape[:1] or 0 not in shape:
            check_error(fn, arr(*shape), match="out of bounds")
        else:
            check(fn, arr(*shape), grad=False)
