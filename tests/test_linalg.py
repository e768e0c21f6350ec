"""Matrix products, einsum and tensordot vs torch: graphs, values, gradients, errors."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import arr, check, check_error, fd_check, gradgrad_check, negstride, noncontig, outcome

import ember


def chain(t, depth=4):
    """grad_fn class names, depth-first, to compare graph structure with torch."""
    out = []

    def walk(fn, d):
        if fn is None or d > depth:
            return
        out.append((d, type(fn).__name__))
        for nxt, _ in fn.next_functions:
            walk(nxt, d + 1)
    walk(t.grad_fn, 0)
    return out


def same_graph(fn, *inputs, **kw):
    e, t = check(fn, *inputs, **kw)
    assert chain(e) == chain(t), (chain(e), chain(t))


MATMUL_SHAPES = [
    ((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 5)), ((3, 4), (4, 5)),
    ((2, 3, 4), (4, 5)), ((2, 3, 4), (4,)), ((4,), (2, 4, 5)), ((3, 4), (2, 4, 5)),
    ((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((1, 3, 4), (2, 4, 5)),
    ((0, 3, 4), (4, 5)), ((3, 0), (0, 5)), ((2, 0, 4), (2, 4, 5)),
]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_graph_and_grads_match_torch(sa, sb):
    same_graph(lambda m, a, b: m.matmul(a, b), arr(*sa), arr(*sb))
    same_graph(lambda m, a, b: a @ b, arr(*sa), arr(*sb), grad_inputs=(0,))


@pytest.mark.parametrize("make", [noncontig, negstride])
def test_matmul_strided_inputs(make):
    check(lambda m, a, b: a @ b, make(3, 4), make(4, 5))
    check(lambda m, a, b: a @ b, make(2, 3, 4), make(4, 5))
    check(lambda m, a, b: a @ b, make(2, 3, 4), make(2, 4, 3))


@pytest.mark.parametrize("fn,shapes", [
    (lambda m, a, b: m.mm(a, b), [(3, 4), (4, 5)]),
    (lambda m, a, b: m.bmm(a, b), [(2, 3, 4), (2, 4, 5)]),
    (lambda m, a, b: m.mv(a, b), [(3, 4), (4,)]),
    (lambda m, a, b: m.dot(a, b), [(4,), (4,)]),
    (lambda m, a, b: m.vdot(a, b), [(4,), (4,)]),
    (lambda m, a, b: m.outer(a, b), [(3,), (4,)]),
    (lambda m, a, b: m.ger(a, b), [(3,), (4,)]),
    (lambda m, a, b: m.inner(a, b), [(3, 4), (2, 4)]),
    (lambda m, c, a, b: m.addmm(c, a, b), [(3, 5), (3, 4), (4, 5)]),
    (lambda m, c, a, b: m.addmm(c, a, b, beta=0.5, alpha=2.0), [(5,), (3, 4), (4, 5)]),
    (lambda m, c, a, b: m.addmv(c, a, b), [(3,), (3, 4), (4,)]),
    (lambda m, c, a, b: m.addmv(c, a, b, beta=2.0, alpha=-1.0), [(1,), (3, 4), (4,)]),
    (lambda m, c, a, b: m.baddbmm(c, a, b, alpha=0.5), [(2, 3, 5), (2, 3, 4), (2, 4, 5)]),
    (lambda m, c, a, b: m.addbmm(c, a, b, beta=0.5), [(3, 5), (2, 3, 4), (2, 4, 5)]),
    (lambda m, a: m.trace(a), [(3, 4)]),
    (lambda m, a, b: m.tensordot(a, b, dims=1), [(2, 3), (3, 4)]),
    (lambda m, a, b: m.tensordot(a, b, dims=([1, 2], [1, 0])), [(2, 3, 4), (4, 3, 5)]),
    (lambda m, a, b: m.tensordot(a, b, dims=0), [(2,), (3,)]),
    (lambda m, a, b: m.tensordot(a, b, dims=([0], [1])), [(3, 2), (4, 3)]),
])
def test_products_match_torch(fn, shapes):
    e, t = check(fn, *[arr(*s) for s in shapes])
    assert type(e.grad_fn).__name__ == type(t.grad_fn).__name__


def test_integer_products():
    a, b = arr(3, 4, dtype="int64", high=5), arr(4, 2, dtype="int64", high=5)
    for fn in [lambda m, a, b: a @ b, lambda m, a, b: m.mm(a, b), lambda m, a, b: a[0] @ b,
               lambda m, a, b: m.trace(a), lambda m, a, b: m.einsum("ij,jk->ik", a, b)]:
        check(fn, a, b)


@pytest.mark.parametrize("fn,shapes,match", [
    (lambda m, a, b: m.mm(a, b), [(2, 3), (4, 5)],
     "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    (lambda m, a, b: a @ b, [(3,), (4, 5)], "mat1 and mat2 shapes cannot be multiplied"),
    (lambda m, a, b: a @ b, [(2, 2, 3), (4, 5)], "(4x3 and 4x5)"),
    (lambda m, a, b: a @ b, [(2, 3), (4,)], "size mismatch, got input (2), mat (2x3), vec (4)"),
    (lambda m, a, b: a @ b, [(3,), (4,)], "inconsistent tensor size"),
    (lambda m, a, b: a @ b, [(2, 2, 3), (3, 3, 5)], "must match the size of tensor b (3)"),
    (lambda m, a, b: a @ b, [(2, 2, 3), (3, 2, 4, 5)],
     "Expected size for first two dimensions of batch2 tensor to be: [6, 3] but got: [6, 4]."),
    (lambda m, a, b: a @ b, [(2,), ()], "both arguments to matmul need to be at least 1D"),
    (lambda m, a, b: m.bmm(a, b), [(2, 2, 3), (3, 3, 5)], "batch2 tensor to be: [2, 3]"),
    (lambda m, a, b: m.bmm(a, b), [(2, 3), (2, 3, 5)], "batch1 must be a 3D tensor"),
    (lambda m, a, b: m.mm(a, b), [(3,), (3, 3)], "self must be a matrix"),
    (lambda m, a, b: m.mv(a, b), [(2, 3), (4,)], "size mismatch"),
    (lambda m, a, b: m.dot(a, b), [(2,), (3,)], "inconsistent tensor size"),
    (lambda m, a, b: m.vdot(a, b), [(2, 2), (2,)], "1D tensors expected"),
    (lambda m, a, b: m.tensordot(a, b, dims=1), [(2, 3), (4, 5)],
     "contracted dimensions need to match, but first has size 3 in dim -1 and second has size "
     "4 in dim 0"),
    (lambda m, a: m.trace(a), [(2, 3, 3)], "trace: expected a matrix"),
    (lambda m, c, a, b: m.addmm(c, a, b), [(4,), (2, 3), (3, 3)],
     "The expanded size of the tensor (3) must match the existing size (4)"),
    (lambda m, c, a, b: m.addmm(c, a, b), [(2, 3, 1), (2, 3), (3, 3)], None),
    (lambda m, c, a, b: m.addmv(c, a, b), [(4,), (2, 3), (3,)],
     "size mismatch, got input (4), mat (2x3), vec (3)"),
    (lambda m, c, a, b: m.addmv(c, a, b), [(1, 2), (2, 3), (3,)],
     "vector + matrix @ vector expected, got 2, 2, 1"),
    (lambda m, c, a, b: m.baddbmm(c, a, b), [(2, 3, 4), (2, 3, 4), (2, 4, 5)],
     "must match the existing size"),
    (lambda m, c, a, b: m.addbmm(c, a, b), [(3, 4), (2, 3, 4), (2, 4, 3)],
     "The expanded size of the tensor (3) must match the existing size (4)"),
])
def test_product_errors(fn, shapes, match):
    check_error(fn, *[arr(*s) for s in shapes], match=match)


def test_dtype_mismatch_errors():
    f, d = arr(2, 3), arr(3, 2, dtype="float64")
    check_error(lambda m, a, b: a @ b, f, d,
                match="expected m1 and m2 to have the same dtype, but got: float != double")
    check_error(lambda m, a, b: m.mm(a, b), f, d.astype(np.int64), match="float != long int")
    check_error(lambda m, a, b: m.dot(a[0], b[:, 0]), f, d,
                match="expected both vectors to have same dtype, but found Float and Double")
    check_error(lambda m, a, b: m.bmm(a[None], b[None]), f, d,
                match="expected scalar type Float but found Double")
    check_error(lambda m, a, b: m.einsum("ij,jk", a, b), f, d, match="expected scalar type")


# --- einsum -----------------------------------------------------------------------------------

EINSUM = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("i,i->", [(4,), (4,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("iij->j", [(3, 3, 2)]),
    ("ij->", [(3, 4)]),
    ("ij->ji", [(3, 4)]),
    ("ij,ij->ij", [(1, 4), (3, 4)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
    ("b...,b->...", [(2, 3, 4), (2,)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("i,ij,j", [(3,), (3, 4), (4,)]),
    ("ijk,k->i", [(2, 3, 4), (4,)]),
    ("ij,kj->ikj", [(2, 3), (4, 3)]),
    ("ab,cd->abcd", [(2, 1), (1, 3)]),
    ("ij, jk -> ik", [(0, 4), (4, 5)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM)
def test_einsum_matches_torch(eq, shapes):
    check(lambda m, *ops: m.einsum(eq, *ops), *[arr(*s) for s in shapes])


def test_einsum_list_form_and_strided():
    check(lambda m, a, b: m.einsum("ij,jk->ik", [a, b]), noncontig(3, 4), negstride(4, 2))


@pytest.mark.parametrize("eq,shapes", [e for e in EINSUM if 0 not in e[1][0]][:16])
def test_einsum_fd_and_gradgrad(eq, shapes):
    ops = [arr(*s, dtype="float64") for s in shapes]
    fn = lambda *ts: ember.einsum(eq, *ts) ** 2  # noqa: E731 - keeps second derivative nonzero
    fd_check(fn, *ops)
    gradgrad_check(fn, *ops)


@pytest.mark.parametrize("eq,shapes,match", [
    ("ij,jk->ik", [(2, 3), (4, 5)], "subscript j has size 4 for operand 1 which does not "
                                    "broadcast with previously seen size 3"),
    ("ij->ijk", [(2, 3)], "output subscript k does not appear in the equation"),
    ("i,i", [(3,)], "fewer operands were provided"),
    ("i", [(3,), (3,)], "more operands were provided"),
    ("ij", [(3,)], "the number of subscripts in the equation (2) does not match the number of "
                   "dimensions (1) for operand 0"),
])
def test_einsum_errors(eq, shapes, match):
    check_error(lambda m, *ops: m.einsum(eq, *ops), *[arr(*s) for s in shapes], match=match)


def test_mm_does_not_copy_operands():
    """mm / addmm hand their operands (transposed views included) straight to BLAS."""
    a = ember.tensor(arr(64, 32), requires_grad=True)
    b = ember.tensor(arr(32, 16), requires_grad=True)
    out = ember.addmm(ember.zeros(16), a, b.t().t())
    node = out.grad_fn
    saved = node.saved_tensors
    assert saved[0]._data is a._data
    assert np.shares_memory(saved[1]._data, b._data)
    out.backward(ember.ones_like(out))
    assert a.grad.shape == a.shape and b.grad.shape == b.shape


@pytest.mark.parametrize("fn,shapes", [
    (lambda a, b: ember.mm(a, b) ** 2, [(2, 3), (3, 2)]),
    (lambda a, b: ember.bmm(a, b) ** 2, [(2, 2, 3), (2, 3, 2)]),
    (lambda a, b: ember.mv(a, b) ** 2, [(2, 3), (3,)]),
    (lambda a, b: ember.dot(a, b) * a, [(3,), (3,)]),
    (lambda a, b: ember.vdot(a, b) * b, [(3,), (3,)]),
    (lambda c, a, b: ember.addmm(c, a, b, beta=0.5, alpha=2.0) ** 2, [(2,), (2, 3), (3, 2)]),
    (lambda c, a, b: ember.addmv(c, a, b, alpha=2.0) ** 2, [(2,), (2, 3), (3,)]),
    (lambda c, a, b: ember.baddbmm(c, a, b, beta=2.0) ** 2, [(1, 2), (2, 2, 3), (2, 3, 2)]),
    (lambda c, a, b: ember.addbmm(c, a, b, alpha=0.5) ** 2, [(2, 2), (2, 2, 3), (2, 3, 2)]),
    (lambda a, b: ember.tensordot(a, b, ([0, 2], [1, 0])) ** 2, [(2, 3, 2), (2, 2, 2)]),
    (lambda a, b: (a @ b) ** 2, [(2, 1, 2, 3), (2, 3, 2)]),
    (lambda a, b: (a @ b) ** 2, [(3,), (2, 3, 2)]),
    (lambda a, b: (a @ b) ** 2, [(2, 3), (2, 3, 2)]),
])
def test_products_fd_and_gradgrad(fn, shapes):
    ops = [arr(*s, dtype="float64") for s in shapes]
    fd_check(fn, *ops)
    gradgrad_check(fn, *ops)


@pytest.mark.parametrize("fn,shapes", [
    (lambda m, a, b: m.linalg.cross(a, b), [(2, 3), (2, 3)]),
    (lambda m, a, b: m.linalg.cross(a, b), [(2, 1, 3), (1, 4, 3)]),
    (lambda m, a, b: m.cross(a, b, dim=0), [(3, 2), (3, 2)]),
    (lambda m, a, b: a.cross(b, dim=1), [(2, 3), (2, 3)]),
])
def test_cross(fn, shapes):
    e, t = check(fn, *[arr(*s) for s in shapes])
    assert type(e.grad_fn).__name__ == type(t.grad_fn).__name__
    fd_check(lambda a, b: fn(ember, a, b) ** 2, *[arr(*s, dtype="float64") for s in shapes])
    gradgrad_check(lambda a, b: fn(ember, a, b) ** 2, *[arr(*s, dtype="float64") for s in shapes])


def test_cross_errors_and_default_dim():
    check_error(lambda m, a, b: m.linalg.cross(a, b), arr(2, 4), arr(2, 4),
                match="inputs dimension -1 must have length 3. Got 4 and 4")
    check_error(lambda m, a, b: m.linalg.cross(a, b), arr(2, 3), arr(3),
                match="inputs must have the same number of dimensions")
    with pytest.warns(UserWarning, match="without specifying the dim arg is deprecated"):
        check(lambda m, a, b: m.cross(a, b), arr(3, 2), arr(3, 2))


# --- property-based: matmul over random ranks and broadcast batches --------------------------


@st.composite
def matmul_shapes(draw):
    n, k, m = (draw(st.integers(1, 3)) for _ in range(3))
    batch = draw(st.lists(st.integers(1, 3), max_size=2))
    ra, rb = draw(st.integers(1, 2 + len(batch))), draw(st.integers(1, 2 + len(batch)))

    def shape(rank, rows, cols, first):
        if rank == 1:
            return (k,)
        lead = [b if draw(st.booleans()) else 1 for b in batch][len(batch) - (rank - 2):] \
            if rank > 2 else []
        return (*lead, rows, cols) if first else (*lead, cols, rows)
    return shape(ra, n, k, True), shape(rb, m, k, False)


@settings(max_examples=30, deadline=None)
@given(matmul_shapes())
def test_matmul_broadcast_property(shapes):
    sa, sb = shapes
    check(lambda m, a, b: a @ b, arr(*sa), arr(*sb))


@pytest.mark.parametrize("sa,sb", [((0, 5), (1, 5, 1)), ((2, 3), (4, 3, 5)), ((3,), (3, 2)),
                                   ((3,), (2, 3, 4))])
@pytest.mark.parametrize("rg", [False, True])
def test_matmul_result_is_a_view_only_where_torchs_is(sa, sb, rg):
    # an in-place write through such a view rebases the base (and its other views) as torch
    def fn(m):
        return m.matmul(m.ones(sa, requires_grad=rg), m.ones(sb))._base is None
    assert fn(ember) == fn(torch)


@pytest.mark.parametrize("fn", ["inv", "inv_ex", "det", "cholesky", "eigh", "matrix_exp",
                                "ldl_factor_ex"])
@pytest.mark.parametrize("dtype", ["int64", "int32", "bool"])
def test_square_checks_name_integer_dtypes_as_torch(fn, dtype):
    """The message names the dtype as torch's C++ does ("Got Long"), word for word."""
    def call(lib):
        getattr(lib.linalg, fn)(lib.ones(2, 2, dtype=getattr(lib, dtype)))

    t, e = outcome(call, torch), outcome(call, ember)
    assert e == t and t[0] == "error"
