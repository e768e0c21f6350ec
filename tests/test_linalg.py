"""Matrix products, einsum, tensordot, norms and ember.linalg vs torch."""

import math

import numpy as np
import pytest
import torch
from oracle import arr, check, check_error, fd_check, gradgrad_check, negstride, noncontig

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


# --- norms ------------------------------------------------------------------------------------

NORMS = [
    lambda m, x: x.norm(),
    lambda m, x: x.norm(dim=-1),
    lambda m, x: x.norm(p=1),
    lambda m, x: x.norm(p="fro"),
    lambda m, x: x.norm(p=math.inf, dim=0, keepdim=True),
    lambda m, x: x.norm(p=-math.inf),
    lambda m, x: x.norm(p=0),
    lambda m, x: x.norm(p=3, dim=-1),
    lambda m, x: x.norm(p=0.5),
    lambda m, x: x.norm(p=1.5, dim=0),
    lambda m, x: m.norm(x, 2, dim=(0, 1)),
    lambda m, x: m.linalg.norm(x),
    lambda m, x: m.linalg.vector_norm(x, ord=3, dim=-1, keepdim=True),
    lambda m, x: m.linalg.vector_norm(x, dtype=m.float64),
]


@pytest.mark.parametrize("kind", ["2d", "noncontig", "negstride"])
@pytest.mark.parametrize("fn", NORMS)
def test_vector_norms(fn, kind):
    x = {"2d": arr(3, 4), "noncontig": noncontig(3, 4), "negstride": negstride(3, 4)}[kind]
    e, t = check(fn, x)
    assert type(e.grad_fn).__name__ == type(t.grad_fn).__name__


def test_norm_at_zero_and_0d():
    z = np.zeros((2, 3), dtype=np.float32)
    for fn in [lambda m, x: x.norm(), lambda m, x: x.norm(p=1), lambda m, x: x.norm(p=3),
               lambda m, x: x.norm(dim=1), lambda m, x: x.norm(p=math.inf)]:
        check(fn, z)
    check(lambda m, x: x.norm(), arr())
    check(lambda m, x: x.norm(dim=1), np.zeros((2, 0), np.float32))


MATRIX_NORMS = [
    lambda m, x: m.linalg.matrix_norm(x),
    lambda m, x: m.linalg.matrix_norm(x, "nuc"),
    lambda m, x: m.linalg.matrix_norm(x, 2),
    lambda m, x: m.linalg.matrix_norm(x, -2),
    lambda m, x: m.linalg.matrix_norm(x, 1),
    lambda m, x: m.linalg.matrix_norm(x, -1, keepdim=True),
    lambda m, x: m.linalg.matrix_norm(x, math.inf),
    lambda m, x: m.linalg.matrix_norm(x, -math.inf, dim=(0, 1)),
    lambda m, x: m.linalg.matrix_norm(x, 1, dim=(1, 0), keepdim=True),
    lambda m, x: m.linalg.norm(x, "fro", dim=(0, 1)),
    lambda m, x: m.linalg.norm(x[0], 2),
    lambda m, x: m.linalg.norm(x, ord=1, dim=-1),
    lambda m, x: x.norm(p="nuc", dim=(1, 2)),
]


@pytest.mark.parametrize("fn", MATRIX_NORMS)
def test_matrix_norms(fn):
    e, t = check(fn, arr(2, 3, 4))
    assert type(e.grad_fn).__name__ == type(t.grad_fn).__name__


@pytest.mark.parametrize("fn,match", [
    (lambda m, x: x.long().norm(), "Expected a floating point or complex tensor as input. Got "
                                   "Long"),
    (lambda m, x: m.linalg.matrix_norm(x[0, 0]), "must have at least 2 dimensions"),
    (lambda m, x: x.norm(dim=(0, 1, 0)), None),
    (lambda m, x: m.linalg.norm(x, "fro"), "If dim is not specified but ord is"),
    (lambda m, x: x.norm(dim=3), "Dimension out of range"),
    (lambda m, x: m.linalg.norm(x, ord=2), "the input must be 1D or 2D. Got 3D."),
    (lambda m, x: m.linalg.vector_norm(x, "fro"), "argument 'ord' (position 2) must be Number"),
    (lambda m, x: x.norm(p="abc"), "Order abc not supported"),
    (lambda m, x: m.linalg.vector_norm(x[:0], math.inf), "cannot compute the inf norm on an "
                                                         "empty tensor"),
])
def test_norm_errors(fn, match):
    check_error(fn, arr(2, 3, 4), match=match)


@pytest.mark.parametrize("fn", [
    lambda x: x.norm() * x.sum(),
    lambda x: x.norm(dim=1) ** 2,
    lambda x: x.norm(p=3, dim=0),
    lambda x: x.norm(p=1.5) * x,
    lambda x: ember.linalg.vector_norm(x, math.inf, dim=1) ** 2,
    lambda x: ember.linalg.matrix_norm(x, 1) ** 2,
])
def test_norm_fd_and_gradgrad(fn):
    x = arr(3, 4, dtype="float64")
    fd_check(fn, x)
    gradgrad_check(fn, x)


def test_svd_norms_fd():
    x = arr(3, 4, dtype="float64")
    fd_check(lambda t: ember.linalg.matrix_norm(t, "nuc"), x)
    fd_check(lambda t: ember.linalg.svdvals(t), x)


# --- inverse, determinant, solve --------------------------------------------------------------


def well_conditioned(*shape, dtype="float32"):
    a = arr(*shape, dtype=dtype)
    return (a + 3 * np.eye(shape[-1], dtype=dtype)).astype(dtype)


@pytest.mark.parametrize("fn,shapes", [
    (lambda m, a: m.linalg.inv(a), [(3, 3)]),
    (lambda m, a: m.inverse(a), [(2, 3, 3)]),
    (lambda m, a: a.inverse(), [(3, 3)]),
    (lambda m, a: m.linalg.det(a), [(3, 3)]),
    (lambda m, a: m.det(a), [(2, 3, 3)]),
    (lambda m, a: a.det(), [(1, 1)]),
    (lambda m, a, b: m.linalg.solve(a, b), [(3, 3), (3,)]),
    (lambda m, a, b: m.linalg.solve(a, b), [(3, 3), (3, 2)]),
    (lambda m, a, b: m.linalg.solve(a, b), [(2, 3, 3), (3, 2)]),
    (lambda m, a, b: m.linalg.solve(a, b), [(2, 3, 3), (2, 3)]),
])
def test_inv_det_solve(fn, shapes):
    ops = [well_conditioned(*shapes[0])] + [arr(*s) for s in shapes[1:]]
    e, t = check(fn, *ops, atol=1e-4)
    assert type(e.grad_fn).__name__ == type(t.grad_fn).__name__


def test_solve_right():
    check(lambda m, a, b: m.linalg.solve(a, b, left=False), well_conditioned(3, 3), arr(2, 3),
          atol=1e-4)


def test_det_of_singular_matrix_has_adjugate_gradient():
    """The gradient of det is the (transposed) adjugate, also where det is 0."""
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    fd_check(lambda t: ember.linalg.det(t), a)
    check(lambda m, x: m.linalg.det(x), a.astype(np.float32), grad=False)


@pytest.mark.parametrize("fn", [
    lambda a: ember.linalg.inv(a),
    lambda a: ember.linalg.det(a),
    lambda a: ember.linalg.solve(a, a[:, :1] * 2 + 1),
    lambda a: ember.linalg.solve(a, a[0] + 1),
    lambda a: ember.trace(a) * a,
])
def test_linalg_fd_and_gradgrad(fn):
    a = well_conditioned(3, 3, dtype="float64")
    fd_check(fn, a)
    gradgrad_check(fn, a)


@pytest.mark.parametrize("fn,shapes,match", [
    (lambda m, a: m.linalg.inv(a), [(2, 3)], "A must be batches of square matrices, but they "
                                             "are 2 by 3 matrices"),
    (lambda m, a: m.linalg.det(a), [(2, 3)], "A must be batches of square matrices"),
    (lambda m, a, b: m.linalg.solve(a, b), [(3, 3), (2, 3)], "Incompatible shapes of A and B"),
])
def test_linalg_errors(fn, shapes, match):
    check_error(fn, *[arr(*s) for s in shapes], match=match)


@pytest.mark.parametrize("fn,shape,match", [
    (lambda m, a: m.linalg.inv(a), (2, 2), "linalg.inv: The diagonal element 1 is zero, the "
                                           "inversion could not be completed because the "
                                           "input matrix is singular."),
    (lambda m, a: m.linalg.inv(a), (2, 3, 3), "linalg.inv: (Batch element 0): The diagonal "
                                              "element 1 is zero"),
    (lambda m, a: m.linalg.solve(a, a[..., 0]), (2, 2), "The solver failed because the input "
                                                        "matrix is singular."),
])
def test_singular_raises_linalg_error(fn, shape, match):
    z = np.zeros(shape, np.float32)
    with pytest.raises(torch.linalg.LinAlgError, match=match.split(":")[-1][:20].strip()):
        fn(torch, torch.tensor(z))
    with pytest.raises(ember.linalg.LinAlgError) as info:
        fn(ember, ember.tensor(z))
    assert match in str(info.value)
    assert isinstance(info.value, RuntimeError)


def test_vecdot_multi_dot():
    check(lambda m, a, b: m.linalg.vecdot(a, b), arr(3, 4), arr(4))
    check(lambda m, a, b, c: m.linalg.multi_dot([a, b, c]), arr(3), arr(3, 4), arr(4, 2))
    check(lambda m, a, b: m.linalg.matmul(a, b), arr(2, 3, 4), arr(4, 2))


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


# --- property-based: matmul over random ranks and broadcast batches --------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


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


def test_slogdet_logdet_matrix_power():
    a = well_conditioned(3, 3)
    neg = a.copy()
    neg[0] *= -1
    for fn in [lambda m, x: m.linalg.slogdet(x), lambda m, x: m.slogdet(x),
               lambda m, x: m.logdet(x), lambda m, x: m.linalg.matrix_power(x, 3),
               lambda m, x: m.matrix_power(x, -2), lambda m, x: m.linalg.matrix_power(x, 1)]:
        e, t = check(fn, a, atol=1e-4)
        eo, to = (e[1], t[1]) if isinstance(e, tuple) else (e, t)
        assert type(eo.grad_fn).__name__ == type(to.grad_fn).__name__
        assert type(e).__name__ == type(t).__name__
    check(lambda m, x: m.logdet(x), neg, grad=False)
    check(lambda m, x: m.linalg.matrix_power(x, 0), a, grad=False)
    check(lambda m, x: m.linalg.slogdet(x), np.stack([a, neg]), atol=1e-4)
    a64 = well_conditioned(3, 3, dtype="float64")
    fd_check(lambda t: ember.linalg.slogdet(t)[1], a64)
    gradgrad_check(lambda t: ember.logdet(t), a64)
    gradgrad_check(lambda t: ember.linalg.matrix_power(t, 3), a64)


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


def spd(*shape, dtype="float32"):
    a = arr(*shape, dtype="float64")
    return (a @ np.swapaxes(a, -1, -2) + 3 * np.eye(shape[-1])).astype(dtype)


@pytest.mark.parametrize("fn", [
    lambda m, a: m.linalg.cholesky(a),
    lambda m, a: m.linalg.cholesky(a, upper=True),
    lambda m, a: m.linalg.eigh(a).eigenvalues,
    lambda m, a: m.linalg.eigvalsh(a),
    lambda m, a: m.linalg.eigh(a, UPLO="U").eigenvectors ** 2,
])
@pytest.mark.parametrize("batch", [(), (2,)])
def test_cholesky_eigh(fn, batch):
    """(Eigenvector signs are arbitrary: compared through sign-free functions of them.)"""
    e, t = check(fn, spd(*batch, 3, 3), atol=1e-4)
    eo, to = (e[0], t[0]) if isinstance(e, tuple) else (e, t)
    assert type(eo.grad_fn).__name__ == type(to.grad_fn).__name__
    assert type(e).__name__ == type(t).__name__


def test_eigh_named_tuple():
    q = np.linalg.qr(np.random.default_rng(5).standard_normal((3, 3)))[0]
    a = (q @ np.diag([1.0, 3.0, 6.0]) @ q.T).astype(np.float32)  # well-separated eigenvalues
    e, t = ember.linalg.eigh(ember.tensor(a)), torch.linalg.eigh(torch.tensor(a))
    assert repr(e).split("(")[0].replace("ember", "torch") == repr(t).split("(")[0]
    np.testing.assert_allclose(e.eigenvalues.numpy(), t.eigenvalues.numpy(), rtol=1e-5)
    np.testing.assert_allclose(np.abs(e.eigenvectors.numpy()), np.abs(t.eigenvectors.numpy()),
                               atol=1e-5)


@pytest.mark.parametrize("fn", [
    lambda a: ember.linalg.cholesky(a),
    lambda a: ember.linalg.cholesky(a, upper=True),
    lambda a: ember.linalg.eigvalsh(a),
    lambda a: ember.linalg.eigh(a).eigenvectors ** 2,
])
def test_cholesky_eigh_fd_and_gradgrad(fn):
    # Symmetric perturbations only: these functions read one triangle of A.
    a = spd(3, 3, dtype="float64")

    def sym(t):
        return fn((t + t.mT) * 0.5)
    fd_check(sym, a)
    gradgrad_check(sym, a)


@pytest.mark.parametrize("fn,x,match", [
    (lambda m, a: m.linalg.cholesky(a), -np.eye(3, dtype=np.float32), "leading minor of order 1"),
    (lambda m, a: m.linalg.cholesky(a), np.array([[1.0, 2.0], [2.0, 1.0]], np.float32),
     "leading minor of order 2 is not positive-definite"),
    (lambda m, a: m.linalg.cholesky(a), np.stack([np.eye(2), -np.eye(2)]).astype(np.float32),
     "(Batch element 1): The factorization could not be completed"),
])
def test_cholesky_not_positive_definite(fn, x, match):
    with pytest.raises(torch.linalg.LinAlgError):
        fn(torch, torch.tensor(x))
    with pytest.raises(ember.linalg.LinAlgError) as info:
        fn(ember, ember.tensor(x))
    assert match in str(info.value)


def test_cholesky_eigh_shape_errors():
    check_error(lambda m, a: m.linalg.cholesky(a), arr(2, 3), match="A must be batches of square")
    check_error(lambda m, a: m.linalg.eigh(a), arr(2, 3), match="A must be batches of square")


# Singular vectors are defined up to sign: compare sign-free functions of them.
SVD_FNS = [
    lambda m, a: m.linalg.svd(a, full_matrices=False).S,
    lambda m, a: m.linalg.svdvals(a),
    lambda m, a: (lambda r: r.U @ r.Vh)(m.linalg.svd(a, full_matrices=False)),
    lambda m, a: m.linalg.svd(a, full_matrices=False).U ** 2,
    lambda m, a: m.linalg.svd(a).Vh[..., :2, :] ** 2,
    lambda m, a: (lambda r: (r.U[..., :2] ** 2, r.S, r.Vh[..., :2, :] ** 2))(m.linalg.svd(a)),
]


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 4), (2, 4, 3)])
@pytest.mark.parametrize("fn", SVD_FNS)
def test_svd(fn, shape):
    e, t = check(fn, arr(*shape), atol=1e-4)
    eo, to = (e[0], t[0]) if isinstance(e, tuple) else (e, t)
    assert type(eo.grad_fn).__name__ == type(to.grad_fn).__name__


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 4)])
def test_svd_fd_and_gradgrad(shape):
    def polar(t):
        r = ember.linalg.svd(t, full_matrices=False)
        return r.U @ r.Vh + r.S.sum()
    a = arr(*shape, dtype="float64")
    fd_check(polar, a)
    gradgrad_check(polar, a)
    gradgrad_check(lambda t: ember.linalg.matrix_norm(t, "nuc"), a)


def test_svd_named_tuple():
    a = arr(3, 2)
    e, t = ember.linalg.svd(ember.tensor(a)), torch.linalg.svd(torch.tensor(a))
    assert type(e).__name__ == type(t).__name__ == "linalg_svd"
    assert e.U.shape == t.U.shape and e.Vh.shape == t.Vh.shape


QR_FNS = [
    lambda m, a: (lambda r: r.Q @ r.R)(m.linalg.qr(a)),
    lambda m, a: m.linalg.qr(a).R ** 2,
    lambda m, a: m.linalg.qr(a).Q ** 2,
    lambda m, a: (lambda r: (r.Q ** 2, r.R ** 2))(m.linalg.qr(a, mode="complete")),
    lambda m, a: m.linalg.qr(a, mode="r").R ** 2,
]


@pytest.mark.parametrize("shape", [(3, 3), (3, 4), (2, 3, 5)])
@pytest.mark.parametrize("fn", QR_FNS)
def test_qr(fn, shape):
    """(Q and R are defined up to signs: compared through sign-free functions.)"""
    e, t = check(fn, arr(*shape), atol=1e-4, grad=fn is not QR_FNS[-1])
    eo, to = (e[0], t[0]) if isinstance(e, tuple) else (e, t)
    assert type(eo.grad_fn).__name__ == type(to.grad_fn).__name__


def test_qr_tall_and_errors():
    check(QR_FNS[0], arr(4, 3), atol=1e-4)
    check(QR_FNS[1], arr(2, 5, 3), atol=1e-4)
    for mode, match in [("complete", "not differentiable when mode='complete'"),
                        ("r", "depends on Q, which is not computed")]:
        x = ember.tensor(arr(4, 3), requires_grad=True)
        with pytest.raises(RuntimeError, match=match):
            ember.linalg.qr(x, mode=mode).R.sum().backward()
    check_error(lambda m, a: m.linalg.qr(a, mode="full"), arr(3, 3), match="unrecognized mode")


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (3, 4), (2, 3, 5)])
def test_qr_fd_and_gradgrad(shape):
    a = arr(*shape, dtype="float64")
    for fn in (lambda t: ember.linalg.qr(t).Q, lambda t: ember.linalg.qr(t).R):
        fd_check(fn, a)
        gradgrad_check(fn, a)


def test_legacy_spellings():
    a = arr(4, 3)
    e, t = check(lambda m, x: m.svd(x).S, a, atol=1e-4)
    assert type(e.grad_fn).__name__ == type(t.grad_fn).__name__
    check(lambda m, x: (lambda r: r.U @ m.diag_embed(r.S) @ r.V.mT)(x.svd()), a, atol=1e-4)
    check(lambda m, x: (lambda r: r.U.shape + r.V.shape)(m.svd(x, some=False)), a, grad=False)
    with pytest.warns(UserWarning, match="torch.qr is deprecated"):
        check(lambda m, x: (lambda r: r.Q @ r.R)(m.qr(x)), a, atol=1e-4)
    sq = well_conditioned(3, 3)
    for fn in [lambda m, x: x.inverse(), lambda m, x: x.det(), lambda m, x: x.logdet(),
               lambda m, x: x.slogdet(), lambda m, x: x.matrix_power(2)]:
        e, t = check(fn, sq, atol=1e-4)
        assert type(e).__name__ == type(t).__name__
    with pytest.warns(UserWarning, match="torch.cholesky is deprecated"):
        check(lambda m, x: m.cholesky(x), spd(3, 3), atol=1e-4)


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


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 0.5, math.inf, 0.0])
@pytest.mark.parametrize("shapes", [[(5, 3), (4, 3)], [(2, 5, 3), (1, 4, 3)], [(30, 3), (4, 3)]])
def test_cdist(p, shapes):
    e, t = check(lambda m, a, b: m.cdist(a, b, p=p), *[arr(*s) for s in shapes], atol=1e-4)
    if not (p == 2 and shapes[0][-2] > 25):  # torch composes its matrix-product form of ops
        assert type(e.grad_fn).__name__ == type(t.grad_fn).__name__


def test_cdist_zero_distance_and_fd():
    z = np.zeros((2, 3), np.float32)
    check(lambda m, a, b: m.cdist(a, b), z, z)
    for p in (2.0, 1.5, 3.0):
        fd_check(lambda a, b, p=p: ember.cdist(a, b, p=p) ** 2, arr(3, 2, dtype="float64"),
                 arr(4, 2, dtype="float64"))
        gradgrad_check(lambda a, b, p=p: ember.cdist(a, b, p=p), arr(3, 2, dtype="float64"),
                       arr(2, 2, dtype="float64"))


@pytest.mark.parametrize("fn,shapes,match", [
    (lambda m, a, b: m.cdist(a, b), [(5, 3), (4, 2)], "X1 and X2 must have the same number of "
                                                      "columns. X1: 3 X2: 2"),
    (lambda m, a, b: m.cdist(a, b), [(3,), (4, 3)], "cdist only supports at least 2D tensors"),
    (lambda m, a, b: m.cdist(a, b, p=-1), [(5, 3), (4, 3)], "non-negative p values"),
    (lambda m, a, b: m.cdist(a.long(), b.long()), [(5, 3), (4, 3)], "floating-point dtypes"),
    (lambda m, a, b: m.dist(a, b), [(5, 3), (4, 3)], "must match the size of tensor b"),
])
def test_cdist_dist_errors(fn, shapes, match):
    check_error(fn, *[arr(*s) for s in shapes], match=match)


@pytest.mark.parametrize("p", [2, 1, 3.5, math.inf, 0])
def test_dist(p):
    # torch's backward of dist with p=0 fails (undefined gradient); compare values only there.
    e, t = check(lambda m, a, b: m.dist(a, b, p), arr(3, 4), arr(4), grad=p != 0)
    assert type(e.grad_fn).__name__ == type(t.grad_fn).__name__
    check(lambda m, a, b: a.dist(b, p=p), arr(3), arr(3), grad=p != 0)
    if p:
        fd_check(lambda a, b: ember.dist(a, b, p) * a, arr(2, 3, dtype="float64"),
                 arr(3, dtype="float64"))


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular(upper, left, unit):
    a = well_conditioned(2, 3, 3)
    b = arr(2, 3, 2) if left else arr(2, 2, 3)
    fn = lambda m, a, b: m.linalg.solve_triangular(a, b, upper=upper, left=left,  # noqa: E731
                                                   unitriangular=unit)
    e, t = check(fn, a, b, atol=1e-4)
    assert type(e.grad_fn).__name__ == type(t.grad_fn).__name__
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    fd_check(lambda x, y: fn(ember, x, y), a64, b64)
    gradgrad_check(lambda x, y: fn(ember, x, y), a64, b64)


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)])
def test_pinv_and_matrix_rank(shape):
    check(lambda m, a: m.linalg.pinv(a), arr(*shape), atol=1e-4)
    check(lambda m, a: m.linalg.matrix_rank(a), arr(*shape))
    low_rank = arr(*shape[:-1], 1) @ arr(*shape[:-2], 1, shape[-1])
    check(lambda m, a: m.linalg.matrix_rank(a), low_rank)
    check(lambda m, a: m.linalg.matrix_rank(a, atol=1.0, rtol=0.0), arr(*shape))
    check(lambda m, a: m.linalg.pinv(a), low_rank, atol=1e-3, grad=False)
    fd_check(lambda t: ember.linalg.pinv(t), arr(*shape, dtype="float64"))
    gradgrad_check(lambda t: ember.linalg.pinv(t), arr(*shape, dtype="float64"))
