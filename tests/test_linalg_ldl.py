"""linalg.ldl_factor(_ex) and linalg.ldl_solve vs torch: LAPACK's Bunch-Kaufman pivots
(1x1 and 2x2 blocks), the compact LD, info, solutions, batching and errors."""

import numpy as np
import oracle
import pytest
import torch
from oracle import check, check_error, same

import ember

_RNG = np.random.default_rng(31)


def arr(*shape, dtype="float64"):
    return oracle.arr(*shape, rng=_RNG, dtype=dtype)


def _symmetric_cases():
    """Matrices that take every branch of the pivot choice: small diagonals force 2x2
    blocks, integer entries give ties and exact zeros."""
    cases = [np.array([[0.0, 1, 2], [1, 0, 3], [2, 3, 0]]), np.zeros((3, 3)),
             np.array([[1.0, 5, 2], [7, 0, 3], [9, 3, 0]]), np.eye(4)]
    for n in (1, 2, 5, 8, 70):
        a = arr(n, n)
        cases.append(a)
        cases.append(a - np.diag(np.diag(a)) * 0.99)
        cases.append(np.round(a * 2))
    return cases


@pytest.mark.parametrize("a", _symmetric_cases())
def test_ldl_factor_ex_equals_lapack(a):
    e = ember.linalg.ldl_factor_ex(ember.tensor(a))
    t = torch.linalg.ldl_factor_ex(torch.from_numpy(a))
    np.testing.assert_array_equal(e.pivots.numpy(), t.pivots.numpy())
    np.testing.assert_array_equal(e.info.numpy(), t.info.numpy())
    np.testing.assert_allclose(e.LD.numpy(), t.LD.numpy(), atol=1e-10, rtol=1e-9)
    assert e.pivots.dtype is ember.int32 and e.info.dtype is ember.int32


@pytest.mark.parametrize("hermitian", [False, True])
def test_ldl_batched_and_printed(hermitian):
    a = arr(3, 4, 4, dtype="float32")
    same(lambda lib: lib.linalg.ldl_factor(lib.tensor(a), hermitian=hermitian))
    same(lambda lib: lib.linalg.ldl_factor_ex(lib.tensor(a[0]), hermitian=hermitian))
    same(lambda lib: lib.linalg.ldl_factor_ex(lib.zeros(2, 3, 3)))


@pytest.mark.parametrize("ashape,bshape", [((5, 5), (5, 2)), ((2, 4, 4), (2, 4, 3)),
                                           ((4, 4), (3, 4, 1)), ((2, 4, 4), (4, 2))])
def test_ldl_solve(ashape, bshape):
    a = arr(*ashape)
    a[..., range(ashape[-1]), range(ashape[-1])] *= 0.01  # 2x2 blocks

    def fn(m, a, b):
        ld, piv = m.linalg.ldl_factor(a)
        return m.linalg.ldl_solve(ld, piv, b)

    check(fn, a, arr(*bshape), grad=False, atol=1e-8, rtol=1e-7)
    check(lambda m, a, b: m.linalg.ldl_solve(*m.linalg.ldl_factor(a), b, hermitian=True), a,
          arr(*bshape), grad=False, atol=1e-8, rtol=1e-7)


def test_ldl_solve_int64_pivots_and_float32():
    a, b = arr(4, 4, dtype="float32"), arr(4, 2, dtype="float32")
    check(lambda m, a, b: m.linalg.ldl_solve(m.linalg.ldl_factor(a)[0],
                                             m.linalg.ldl_factor(a)[1].long(), b),
          a, b, grad=False, atol=1e-4, rtol=1e-4)


def test_not_differentiable():
    a = arr(3, 3)
    same(lambda lib: lib.linalg.ldl_factor(lib.tensor(a, requires_grad=True))[0].sum()
         .backward(), match="not implemented")
    same(lambda lib: lib.linalg.ldl_solve(*lib.linalg.ldl_factor(lib.tensor(a)),
                                          lib.ones(3, 2, dtype=lib.float64,
                                                   requires_grad=True)).sum().backward(),
         match="not implemented")


_LD = np.array([[0.0, 0, 0], [2, 0, 0], [1.5, 0.5, -3]])
_PIV = np.array([-3, -3, 3], np.int32)


@pytest.mark.parametrize("fn,phrase", [
    (lambda m: m.linalg.ldl_factor(m.ones(3)), "at least 2"),
    (lambda m: m.linalg.ldl_factor(m.ones(3, 4)), "square"),
    (lambda m: m.linalg.ldl_factor(m.ones(3, 3, dtype=m.int64)), "floating point"),
    (lambda m: m.linalg.ldl_factor(m.ones(3, 3, dtype=m.float16)), "ldl_factor_kernel_cpu"),
    (lambda m: m.linalg.ldl_factor(m.zeros(3, 3)), "ldl_factor"),
    (lambda m: m.linalg.ldl_factor_ex(m.zeros(2, 3, 3), check_errors=True), "ldl_factor_ex"),
])
def test_factor_errors(fn, phrase):
    check_error(lambda m: fn(m), match=phrase)


@pytest.mark.parametrize("fn,phrase", [
    (lambda m, ld, p: m.linalg.ldl_solve(ld, p, m.ones(3, dtype=ld.dtype)), "out of range"),
    (lambda m, ld, p: m.linalg.ldl_solve(ld, p, m.ones(4, 2, dtype=ld.dtype)),
     "Incompatible matrix sizes"),
    (lambda m, ld, p: m.linalg.ldl_solve(ld, p, m.ones(3, 2)), "same dtype"),
    (lambda m, ld, p: m.linalg.ldl_solve(ld, p[:2], m.ones(3, 2, dtype=ld.dtype)),
     "pivots.shape"),
    (lambda m, ld, p: m.linalg.ldl_solve(ld[:2], p, m.ones(3, 2, dtype=ld.dtype)), "square"),
])
def test_solve_errors(fn, phrase):
    check_error(fn, _LD, _PIV, match=phrase)
