"""LU with partial pivoting vs torch: linalg.lu_factor(_ex), linalg.lu, linalg.lu_solve,
torch.lu, torch.lu_solve, torch.lu_unpack and the Tensor methods: values, LAPACK's pivots,
return types, gradients (random upstream gradient, float64 finite differences), errors."""

import warnings

import numpy as np
import oracle
import pytest
import torch
from oracle import check, check_error, fd_check, same

import ember
from ember import _lapack

_RNG = np.random.default_rng(2024)


def arr(*shape, dtype="float64"):
    return oracle.arr(*shape, rng=_RNG, dtype=dtype)


def quiet(fn):
    def run(*args):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args)
    return run


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (6, 3), (2, 3, 5, 5), (1, 1), (0, 3),
                                   (2, 0, 0), (100, 100), (70, 40), (40, 70)])
def test_pivots_equal_lapack(shape):
    a = arr(*shape)
    lu, piv, info = ember.linalg.lu_factor_ex(ember.tensor(a))
    t = torch.linalg.lu_factor_ex(torch.from_numpy(a))
    assert piv.dtype is ember.int32 and info.dtype is ember.int32
    np.testing.assert_array_equal(piv.numpy(), t.pivots.numpy())
    np.testing.assert_array_equal(info.numpy(), t.info.numpy())
    np.testing.assert_allclose(lu.numpy(), t.LU.numpy(), atol=1e-9, rtol=1e-9)


def test_singular_info_and_ties():
    a = np.array([[1.0, 2, 3], [2, 4, 6], [1, 1, 1]])  # rank 2, and ties in |column|
    for m in (a, np.ones((3, 3)), np.zeros((2, 2)), np.stack([a, np.eye(3)])):
        same(lambda lib, m=m: lib.linalg.lu_factor_ex(lib.tensor(m)))


@pytest.mark.parametrize("fn", [
    lambda m, a: m.linalg.lu_factor(a),
    lambda m, a: m.linalg.lu_factor_ex(a),
    lambda m, a: m.linalg.lu(a),
    lambda m, a: m.lu_unpack(*m.linalg.lu_factor(a)),
    lambda m, a: m.lu_unpack(*m.linalg.lu_factor(a), unpack_data=False),
    lambda m, a: m.lu_unpack(*m.linalg.lu_factor(a), unpack_pivots=False),
    quiet(lambda m, a: m.lu(a, get_infos=True)),
])
def test_return_types_print_as_torch(fn):
    a = arr(3, 3, dtype="float32")
    same(lambda lib: fn(lib, lib.tensor(a)))


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3), (5, 3), (3, 5)])
@pytest.mark.parametrize("fn", [
    lambda m, a: m.linalg.lu_factor(a).LU,
    lambda m, a: m.linalg.lu_factor_ex(a),
    lambda m, a: m.linalg.lu(a),
    lambda m, a: m.linalg.lu(a)[1:],
    lambda m, a: m.linalg.lu(a).L,
    lambda m, a: m.linalg.lu(a).U,
    lambda m, a: m.lu_unpack(a, m.linalg.lu_factor(a.detach()).pivots),
    quiet(lambda m, a: m.lu(a)),
    quiet(lambda m, a: a.lu(get_infos=True)),
])
def test_lu_values_and_grads(shape, fn):
    e, t = check(fn, arr(*shape), atol=1e-9, rtol=1e-7)
    e0 = e[0] if isinstance(e, tuple) else e
    t0 = t[0] if isinstance(t, tuple) else t
    assert type(e0.grad_fn).__name__ == type(t0.grad_fn).__name__


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3), (5, 3), (3, 5)])
def test_lu_finite_differences(shape):
    a = arr(*shape)
    fd_check(lambda x: ember.linalg.lu_factor(x).LU, a)
    fd_check(lambda x: ember.linalg.lu(x).L, a)
    fd_check(lambda x: ember.linalg.lu(x).U, a)


def test_lu_float32():
    check(lambda m, a: m.linalg.lu(a), arr(2, 4, 4, dtype="float32"), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
@pytest.mark.parametrize("ashape,bshape", [((4, 4), (4, 2)), ((2, 3, 3), (2, 3, 3)),
                                           ((3, 3), (5, 3, 3)), ((2, 3, 3), (3, 3))])
def test_lu_solve(left, adjoint, ashape, bshape):
    def fn(m, a, b):
        lu, piv = m.linalg.lu_factor(a)
        return m.linalg.lu_solve(lu, piv, b if left else b.mT, left=left, adjoint=adjoint)

    e, t = check(fn, arr(*ashape), arr(*bshape), atol=1e-9, rtol=1e-7)
    assert type(e.grad_fn).__name__ == type(t.grad_fn).__name__ == "LinalgLuSolveBackward0"


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
def test_lu_solve_grads_of_the_factors(left, adjoint):
    """Gradients reach LU itself (as a leaf), not only through lu_factor."""
    a = arr(3, 3) + 3 * np.eye(3)
    lu, piv = _lapack.getrf(a)[:2]
    pt = torch.from_numpy(piv)

    def fn(m, lu_, b):
        p = ember.tensor(piv) if m is ember else pt
        return m.linalg.lu_solve(lu_, p, b, left=left, adjoint=adjoint)

    check(fn, lu, arr(3, 3), atol=1e-9, rtol=1e-7)
    fd_check(lambda x, b: ember.linalg.lu_solve(x, ember.tensor(piv), b, left=left,
                                                adjoint=adjoint), lu, arr(3, 3))


def test_legacy_lu_solve_and_methods():
    a, b = arr(3, 3), arr(3, 2)
    check(quiet(lambda m, a, b: m.lu_solve(b, *m.linalg.lu_factor(a))), a, b, atol=1e-9)
    check(quiet(lambda m, a, b: b.lu_solve(*a.lu())), a, b, atol=1e-9)
    with pytest.warns(UserWarning, match="torch.lu_solve is deprecated"):
        ember.lu_solve(ember.tensor(b), *ember.linalg.lu_factor(ember.tensor(a)))
    with pytest.warns(UserWarning, match="torch.lu is deprecated"):
        ember.lu(ember.tensor(a))
    out = quiet(lambda: ember.lu(ember.tensor(a)))()
    assert type(out) is tuple and len(out) == 2


def test_legacy_lu_does_not_raise_for_singular():
    same(quiet(lambda lib: lib.lu(lib.ones(3, 3), get_infos=True)))
    same(quiet(lambda lib: lib.lu(lib.ones(3, 3))))


def test_lu_solve_large_residual():
    a, b = arr(2, 60, 60), arr(2, 60, 4)
    lu, piv = ember.linalg.lu_factor(ember.tensor(a))
    x = ember.linalg.lu_solve(lu, piv, ember.tensor(b)).numpy()
    np.testing.assert_allclose(a @ x, b, atol=1e-8)


@pytest.mark.parametrize("fn", [
    lambda m: m.linalg.lu_factor(m.ones(3)),
    lambda m: m.linalg.lu_factor(m.ones(3, 3, dtype=m.int64)),
    lambda m: m.linalg.lu_factor(m.ones(3, 3, dtype=m.float16)),
    lambda m: m.linalg.lu_factor(m.ones(2, 3, 3)),
    lambda m: m.linalg.lu_factor(m.ones(3, 3)),
    lambda m: m.linalg.lu_factor(m.eye(3), pivot=False),
    lambda m: m.linalg.lu(m.eye(3), pivot=False),
    lambda m: m.linalg.lu_factor_ex(m.ones(2, 3, 3), check_errors=True),
])
def test_lu_factor_errors(fn):
    same(fn, match="")
    check_error(lambda m: fn(m))


_LU = np.eye(3) + np.triu(np.ones((3, 3)), 1)
_PIV = np.array([1, 2, 3], np.int32)


@pytest.mark.parametrize("fn,phrase", [
    (lambda m, lu, p: m.linalg.lu_solve(lu, p, m.ones(3, dtype=lu.dtype)), "at least 2"),
    (lambda m, lu, p: m.linalg.lu_solve(lu, p, m.ones(4, 2, dtype=lu.dtype)),
     "Incompatible shapes"),
    (lambda m, lu, p: m.linalg.lu_solve(lu, p, m.ones(2, 4, dtype=lu.dtype), left=False),
     "Incompatible shapes"),
    (lambda m, lu, p: m.linalg.lu_solve(lu, p, m.ones(3, 2, dtype=m.float32)), "same dtype"),
    (lambda m, lu, p: m.linalg.lu_solve(lu, p.long(), m.ones(3, 2, dtype=lu.dtype)),
     "torch.int32"),
    (lambda m, lu, p: m.linalg.lu_solve(lu[:2], p, m.ones(2, 2, dtype=lu.dtype)),
     "square matrices"),
    (lambda m, lu, p: m.linalg.lu_solve(lu, p[:2], m.ones(3, 2, dtype=lu.dtype)),
     "Number of pivots"),
    (lambda m, lu, p: m.lu_unpack(lu, p.long()), "torch.int32"),
])
def test_lu_solve_errors(fn, phrase):
    check_error(fn, _LU, _PIV, match=phrase)


def test_empty_and_batched_unpack():
    same(lambda lib: lib.linalg.lu_factor(lib.ones(2, 0, 3)))
    for a in (arr(2, 3, 5), arr(5, 3)):
        same(lambda lib, a=a: lib.lu_unpack(*lib.linalg.lu_factor(lib.tensor(a))))


def test_double_backward_lu_solve():
    from oracle import check_double_backward

    a = arr(3, 3) + 3 * np.eye(3)
    check_double_backward(lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b), a,
                          arr(3, 2), atol=1e-8, rtol=1e-6)


_OUT_CALLS = [
    lambda lib, A, b, o: lib.lu_solve(b, *lib.linalg.lu_factor(A), out=o),
    lambda lib, A, b, o: lib.linalg.lu_solve(*lib.linalg.lu_factor(A), b, out=o),
    lambda lib, A, b, o: lib.geqrf(A, out=(o, lib.empty(0, dtype=lib.float64))),
    lambda lib, A, b, o: lib.linalg.householder_product(A, lib.ones(2, dtype=lib.float64),
                                                        out=o),
    lambda lib, A, b, o: lib.orgqr(A, lib.ones(2, dtype=lib.float64), out=o),
    lambda lib, A, b, o: lib.ormqr(A, lib.ones(3, dtype=lib.float64), b, out=o),
    lambda lib, A, b, o: lib.linalg.lu(A, out=(o, lib.empty(0, dtype=lib.float64),
                                               lib.empty(0, dtype=lib.float64))),
    lambda lib, A, b, o: lib.linalg.lu_factor(A, out=(o, lib.empty(0, dtype=lib.int32))),
    lambda lib, A, b, o: lib.linalg.lu_factor_ex(A, out=(o, lib.empty(0, dtype=lib.int64),
                                                         lib.empty(0, dtype=lib.int32))),
    lambda lib, A, b, o: lib.lu_unpack(*lib.linalg.lu_factor(A), out=(
        o, lib.empty(0, dtype=lib.float64), lib.empty(0, dtype=lib.float64))),
    lambda lib, A, b, o: lib.linalg.ldl_solve(*lib.linalg.ldl_factor(A), b, out=o),
    lambda lib, A, b, o: lib.linalg.ldl_factor(A, out=(o, lib.empty(0, dtype=lib.int32))),
    quiet(lambda lib, A, b, o: lib.lu(A, get_infos=True, out=(
        o, lib.empty(0, dtype=lib.int32), lib.empty(0, dtype=lib.int32)))),
]


@pytest.mark.parametrize("call", _OUT_CALLS)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_out(call, dtype):
    """out= writes the results (resized) or refuses the dtype as torch does."""
    a, b = arr(3, 3), arr(3, 2)
    same(lambda lib: (call(lib, lib.tensor(a), lib.tensor(b),
                           lib.empty(0, dtype=getattr(lib, dtype))),))


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 4)])
def test_double_backward_lu(shape):
    from oracle import check_double_backward

    check_double_backward(lambda m, a: m.linalg.lu_factor(a).LU, arr(*shape), atol=1e-8,
                          rtol=1e-6)
    check_double_backward(lambda m, a: m.linalg.lu(a).U, arr(*shape), atol=1e-8, rtol=1e-6)


@pytest.mark.parametrize("make", [oracle.noncontig, oracle.negstride])
def test_strided_inputs(make):
    a, b = make(4, 4, dtype="float64"), make(4, 2, dtype="float64")
    check(lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b), a, b, atol=1e-9)
    check(lambda m, a: m.linalg.lu(a), a, atol=1e-9)
    check(lambda m, a, b: m.linalg.lstsq(a, b), a, b, atol=1e-9)
    check(lambda m, a: m.geqrf(a), a, grad=False, atol=1e-9)
    check(lambda m, a: m.linalg.ldl_factor(a + a.mT), a, grad=False, atol=1e-9)
