"""Views and in-place writes as torch has them: a view's history follows writes to its memory
(ember/ops/view_history.py), and torch's memory-overlap rules refuse ambiguous writes
(ember/ops/memory_overlap.py). Each case runs in ember and torch and is compared."""

import numpy as np
import pytest
import torch
from oracle import arr, check, check_double_backward, check_error, same

import ember


def test_view_taken_before_a_self_aliasing_inplace_op():
    # issue 11: v2 = v.t() taken before v.add_(v); torch gives [2, 4, 0]
    def fn(m, a):
        v = m.where(a > 0, a, 0.0)
        v2 = v.t()
        v3 = v.add_(v)
        return m.where(v3.abs() < 0.8, v3, v2 * 2)
    check(fn, np.array([0.3, 1.2, -0.7], np.float32))


def test_sibling_views_see_writes_through_each_other():
    def fn(m, a, w):
        b = a * 1
        row, col, flat = b[0], b[:, 1], b.view(-1)
        row.mul_(w[0])
        col.add_(w[1])
        return row * 1, col * 2, flat * 3, b
    check(fn, arr(3, 4), arr(2, 1))


def test_view_of_a_base_that_starts_to_require_grad():
    def fn(m, x):
        b = m.zeros(3)
        v = b[1:]
        b.mul_(x)  # b (and so v) now requires grad
        assert v.requires_grad and v.grad_fn.name() == "AsStridedBackward0"
        return v * 2
    check(fn, arr(3))


def test_views_taken_before_the_base_gains_history_through_another_view():
    # v = b[0] while b needs no grad; b[1] = w * 2 gives b history (CopySlices): torch
    # regenerates v's grad_fn (AsStridedBackward0), and so do views of views
    def fn(m, w):
        b, c = m.zeros(2, 3), m.zeros(3)
        v, u, y = b[0], b[1], c[1:]
        u2 = y[0:1]
        b[1] = w * 2
        y.add_(w[:2])
        names = [type(t.grad_fn).__name__ for t in (v, u, b, u2, y, c)]
        assert names == ["AsStridedBackward0", "AsStridedBackward0", "CopySlices",
                         "AsStridedBackward0", "AsStridedBackward0", "CopySlices"], names
        b.mul_(w)
        return v * 1, u * 3, u2 * 1
    check(fn, arr(3))


def test_inplace_on_views_of_non_contiguous_bases():
    # the base is a result laid out like its transposed input (no longer refused by ember)
    def fn(m, a, w):
        b = a.t() * 2
        b[1:].zero_()
        b[0].mul_(w)
        return b
    check(fn, arr(3, 4), arr(3))


def test_written_view_of_a_stale_view_counts_as_a_leaf_until_used():
    # torch: a view made before its base started to require grad is a leaf for in-place
    # checks until something regenerates its grad_fn
    def fn(m, x):
        b = m.ones(2)
        t = b.view(2)
        b[0] = x.requires_grad_()
        t.clamp_(min=0.0)
    check_error(fn, arr(), match="a leaf Variable that requires grad")

    def used_first(m, x):
        b = m.ones(2)
        t = b.view(2)
        b[0] = x
        r = t + 1
        t.clamp_(min=0.0)
        return r, t
    check(used_first, arr())


def test_outputs_of_split_refuse_writes_that_reach_them():
    def direct(m, x):
        x.requires_grad_()
        a, c = (x * 1).split(2)
        c[1:] += x[0]
    check_error(direct, arr(3), match="This view is the output of a function that returns "
                                      "multiple views")

    def through_base(m, x):
        b = x.requires_grad_() * 1
        a, c = b.split(2)
        b.mul_(2)
        return c * 1
    check_error(through_base, arr(3), match="modified inplace")

    def of_a_view_of_no_grad_base(m, x):
        t = m.zeros(2).chunk(2)[-1]
        t[1:] += x.requires_grad_()
    check_error(of_a_view_of_no_grad_base, arr(), match="A view was created in no_grad mode")


def test_empty_views_written_in_place():
    def fn(m, x):
        t = m.cat([m.ones(1), x])
        e = t[1:1]
        t[1:] = 2.0
        e.relu_()
        return t
    check_double_backward(fn, arr(1))

    def regenerated(m, x):  # torch's as_strided_backward: zeros without history
        t = x * 1
        v = t[:0]
        v.mul_(2)
        return v * v
    check_double_backward(regenerated, arr(2))


def test_saved_result_of_inplace_op_on_a_view_is_invalidated():
    def fn(m, x):
        t = m.atan2(x.requires_grad_(), x)
        t[None].exp_()
        t.sub_(t)
        return t
    check_error(lambda m, x: fn(m, x).sum().backward(), arr(), match="modified by an inplace")


def test_index_put_into_expanded_view_fails_in_backward():
    def fn(m, x):
        e = (x.requires_grad_() * 1).expand(2)
        e[m.tensor([0, 1])] = 1.0
        e.sum().backward()
    check_error(fn, arr(), match="more than one element of the written-to tensor")


@pytest.mark.parametrize("write", [
    lambda y: y[1:].copy_(y[:3]),  # issue 11
    lambda y: y[:3].add_(y[1:]),
    lambda y: y.view(2, 2).add_(y.view(2, 2).t()),
    lambda y: y.__setitem__(slice(1, None), y[:3]),
    lambda y: y[0].view(1, 1).add_(y[0]),  # 0-d and [1, 1]: different strides
    lambda y: y.__setitem__([0, 1], y[:2]),  # index_put_: no overlap at all
    lambda y: y.view(1, 1, 4)[:, 0].copy_(y),  # copy_ compares the value as given: [4] vs [1, 4]
])
def test_partial_overlap_is_refused(write):
    check_error(lambda m, x: write(x.clone()), arr(4), match="some elements of the input tensor")


@pytest.mark.parametrize("write", [
    lambda y: y.add_(y), lambda y: y.mul_(y[...]), lambda y: y.copy_(y),
    lambda y: y[:2].copy_(y[2:]),
    lambda y: y.__setitem__(y > 0, y[0]),  # a 0-d value with a mask: masked_fill_
    # setitem expands the value to the target first: [4] as [1, 4] is the same memory, in order
    lambda y: y.view(1, 1, 4).__setitem__((slice(None), 0), y),
])
def test_full_or_no_overlap_is_allowed(write):
    check(lambda m, x: (write(x), x)[1], arr(4), grad=False)


@pytest.mark.parametrize("write,ok", [
    (lambda e: e.add_(1), False), (lambda e: e.exp_(), False), (lambda e: e.copy_(e[0]), False),
    (lambda e: e.fill_(1.0), True), (lambda e: e.zero_(), True),
    (lambda e: e.fill_(ember.tensor(1.0) if isinstance(e, ember.Tensor) else
                       torch.tensor(1.0)), False),
    (lambda e: e.masked_fill_(e > 0, 1.0), True), (lambda e: e.__setitem__(0, 1.0), True),
    (lambda e: e.__setitem__((slice(None), 0), 1.0), False),
    (lambda e: e.__setitem__(Ellipsis, 1.0), False),
])
def test_writes_into_expanded_tensors(write, ok):
    def fn(m, x):
        e = x.clone().expand(2, 3)
        write(e)
        return e
    if ok:
        check(fn, arr(3), grad=False)
    else:
        check_error(fn, arr(3), match="more than one element of the written-to tensor")


def test_index_put_of_a_tensor_into_itself():
    same(lambda m: _put_self(m, (0,)), match="single memory location")  # before the bounds
    same(lambda m: _put_self(m, ()))  # 0-d: torch's IndexError, before any overlap check
    same(lambda m: _put_self(m, (1, 0)))  # leading 1s: put as a view, which is empty
    same(lambda m: _put_self(m, (1,)), match="single memory location")


def _put_self(m, shape):
    x = m.zeros(shape)
    x[[0]] = x
    return x


def test_a_write_into_part_of_a_stale_view_leaves_the_view_stale():
    # torch regenerates the history of the part written (x[:, 1]), not of x: x is still a
    # leaf for the next in-place check
    def fn(m, w):
        x = m.zeros(2).unflatten(0, (1, -1))
        x[:, 1] = w.requires_grad_()
        x.clamp_(min=-2.0)
    check_error(fn, arr(), match="a leaf Variable that requires grad")


def test_retain_grad_follows_a_tensor_written_in_place():
    def nonview(m):
        y = m.tensor([1.0, 2.0], requires_grad=True) * 1
        y.retain_grad()
        y.mul_(3)
        (y * m.tensor([1.0, 5.0])).sum().backward()
        return y.grad

    def view(m):
        b = m.tensor([1.0, 2.0], requires_grad=True) * 1
        v = b[:1]
        v.retain_grad()
        b.mul_(3)
        (v * 7).sum().backward()
        return v.grad
    same(nonview)
    same(view)


def test_inplace_op_with_a_shape_that_does_not_broadcast():
    """Found by the fuzzer: the fast in-place path leaked NumPy's ValueError; torch checks a
    partial self-overlap before the shapes."""
    check_error(lambda m, x: x.clone().add_(m.zeros(4, 3)), arr(3, 4), match="must match")
    check_error(lambda m, x: (lambda t: t.add_(t.t()))(x.clone()), arr(3, 4),
                match="some elements of the input tensor")


def test_mask_write_into_a_view_of_a_leaf_checks_autograd_first():
    """Found by the fuzzer: index_put_ checks the mask's shape after autograd's in-place rule."""
    def fn(m, x):
        t = x.reshape(-1).view(2, 4, 2)
        t[t[:, 0] > 0] = -2.0
    check_error(lambda m, x: fn(m, x.requires_grad_()), arr(4, 4),
                match="a view of a leaf Variable")
    check_error(fn, arr(4, 4), match="shape of the mask")
