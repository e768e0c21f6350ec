"""Linear algebra added for API coverage: addr, adjoint, vander, matrix_exp, pinverse,
chain_matmul, cholesky_solve/cholesky_inverse, triangular_solve, nuclear/frobenius norms and
ember.linalg's matrix_exp, *_ex, cond, diagonal, vander, tensorinv, tensorsolve, vs torch."""

import warnings

import numpy as np
import oracle
import pytest
from oracle import check, fd_check, gradgrad_check, same

import ember

_RNG = np.random.default_rng(777)


def arr(*shape, **kw):
    return oracle.arr(*shape, rng=_RNG, **kw)


def _node(out):
    out = out[0] if isinstance(out, tuple | list) else out
    return type(out.grad_fn).__name__ if out.grad_fn is not None else None


def spd(n, batch=(), dtype="float64"):
    a = arr(*batch, n, n, dtype=dtype)
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n, dtype=dtype)


def quiet(fn):
    def run(*args):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args)
    return run


M, V3, V4 = arr(3, 4), arr(3), arr(4)


@pytest.mark.parametrize("fn", [
    lambda m, x, a, b: m.addr(x, a, b),
    lambda m, x, a, b: m.addr(x, a, b, beta=0.5, alpha=-2),
    lambda m, x, a, b: m.addr(x[0], a, b, beta=0),
    lambda m, x, a, b: x.addr(a, b, alpha=3),
])
def test_addr(fn):
    e, t = check(fn, M, V3, V4)
    assert _node(e) == _node(t)


@pytest.mark.parametrize("fn", [
    lambda m: m.addr(m.ones(3, 4), m.ones(3, 1), m.ones(4)),
    lambda m: m.addr(m.ones(3, 5), m.ones(3), m.ones(4)),
    lambda m: m.addr(m.ones(2, 3, 4), m.ones(3), m.ones(4)),
    lambda m: m.addr(m.ones(3, 4, dtype=m.float64), m.ones(3), m.ones(4)).dtype,
    lambda m: m.addr(m.ones(3, 4, dtype=m.int64), m.ones(3, dtype=m.int64),
                     m.ones(4, dtype=m.int64), alpha=2),
    lambda m: m.addr(m.ones(3, 4, dtype=m.int64), m.ones(3, dtype=m.int64),
                     m.ones(4, dtype=m.int64), beta=0.5),
    lambda m: m.addr(m.ones(3, 4), m.ones(3, dtype=m.int64), m.ones(4)).dtype,
    lambda m: m.addr(m.tensor([[float("nan")]]), m.ones(1), m.ones(1), beta=0),
])
def test_addr_rules(fn):
    same(fn)


@pytest.mark.parametrize("fn", [
    lambda m, x: m.adjoint(x),
    lambda m, x: x[None].expand(2, 3, 4).adjoint(),
    lambda m, x: m.linalg.diagonal(x),
    lambda m, x: m.linalg.diagonal(x[None], offset=1, dim1=1, dim2=2),
])
def test_views(fn):
    e, t = check(fn, M)
    assert _node(e) == _node(t)


def test_adjoint_error():
    same(lambda m: m.adjoint(m.ones(3)))


@pytest.mark.parametrize("fn", [
    lambda m, v: m.vander(v),
    lambda m, v: m.vander(v, 5),
    lambda m, v: m.vander(v, 2, True),
    lambda m, v: m.vander(v, 0),
    lambda m, v: m.vander(v, 1),
    lambda m, v: m.vander((v * 3).int()),
    lambda m, v: m.linalg.vander(v),
    lambda m, v: m.linalg.vander(v[None].expand(2, 3), N=5),
    lambda m, v: m.linalg.vander((v * 3).int()),
])
def test_vander(fn):
    check(fn, V3, grad=False)


def test_vander_gradients():
    # torch.vander writes cumprod's result into the slice cumprod saved, so its backward
    # fails in torch (and in ember) with the "modified by an inplace operation" error;
    # linalg.vander is differentiable.
    e, t = check(lambda m, v: m.linalg.vander(v, N=4), V3)
    assert _node(e) == _node(t)
    for lib in (ember, oracle.torch):
        v = lib.tensor(V3, requires_grad=True)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            lib.vander(v, 4).sum().backward()


@pytest.mark.parametrize("fn", [
    lambda m: m.vander(m.ones(2, 2)),
    lambda m: m.vander(m.ones(3), N=-1),
    lambda m: m.linalg.vander(m.tensor(1.0)),
    lambda m: m.linalg.vander(m.ones(3), N=1),
])
def test_vander_errors(fn):
    same(fn)


@pytest.mark.parametrize("scale", [0.5, 3.0, 40.0])
def test_matrix_exp(scale):
    a = arr(2, 4, 4, dtype="float64") * scale / 4
    e, t = check(lambda m, a: m.matrix_exp(a), a, rtol=1e-10, atol=1e-10)
    assert _node(e) == _node(t) == "LinalgMatrixExpBackward0"
    check(lambda m, a: m.linalg.matrix_exp(a.float()), a, rtol=1e-4, atol=1e-4)
    check(lambda m, a: a[0].matrix_exp(), a, rtol=1e-10, atol=1e-10)


def test_matrix_exp_double_backward_and_edges():
    gradgrad_check(ember.matrix_exp, arr(3, 3, dtype="float64"))
    same(lambda m: m.matrix_exp(m.zeros(0, 0)).shape)
    same(lambda m: m.matrix_exp(m.ones(2, 3)))
    check(lambda m, a: m.matrix_exp(a), np.diag([1.0, 2.0, -700.0]))


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_and_inverse(upper):
    low = np.linalg.cholesky(spd(3, (2,)))
    f = np.swapaxes(low, -1, -2).copy() if upper else low
    b = arr(2, 3, 2, dtype="float64")
    e, t = check(lambda m, b, f: m.cholesky_solve(b, f, upper), b, f)
    assert _node(e) == _node(t)
    e, t = check(lambda m, f: m.cholesky_inverse(f, upper), f[0])
    assert _node(e) == _node(t)
    check(lambda m, b, f: b.cholesky_solve(f[0], upper=upper), b[0], f)
    check(lambda m, f: f.cholesky_inverse(upper), f)
    # torch's (and ember's) gradient of the factor is not projected onto the triangle the
    # solve reads; through an explicit triu/tril it must match finite differences.
    tri = (lambda f: f.triu()) if upper else (lambda f: f.tril())
    fd_check(lambda b, f: ember.cholesky_solve(b, tri(f), upper), b[0], f[0])
    fd_check(lambda f: ember.cholesky_inverse(tri(f), upper), f[0])


@pytest.mark.parametrize("fn", [
    lambda m: m.cholesky_solve(m.ones(3), m.eye(3)),
    lambda m: m.cholesky_solve(m.ones(3, 1), m.ones(3, 2)),
    lambda m: m.cholesky_solve(m.ones(3, 1, dtype=m.float64), m.eye(3)),
    lambda m: m.cholesky_inverse(m.ones(3)),
    lambda m: m.cholesky_solve(m.ones(3, 1, dtype=m.float16), m.eye(3, dtype=m.float16)),
    lambda m: m.cholesky_solve(m.ones(3, 1, dtype=m.int64), m.eye(3, dtype=m.int64)),
    lambda m: m.cholesky_inverse(m.eye(3, dtype=m.int32)),
])
def test_cholesky_errors(fn):
    same(fn)


@pytest.mark.parametrize("fn, match", [
    (lambda m: m.cholesky_solve(m.ones(3, 1, dtype=m.float64), m.eye(3)),
     "found b of type Double and A of type Float"),
    (lambda m: m.cholesky_solve(m.ones(3, 1, dtype=m.float16), m.eye(3, dtype=m.float16)),
     "not implemented for 'Half'"),
    (lambda m: m.triangular_solve(m.ones(3), m.eye(3)), "Expected b to have at least 2"),
    (lambda m: m.triangular_solve(m.ones(3, 2), m.ones(3)), "Expected A to have at least 2"),
    (lambda m: m.triangular_solve(m.ones(3, 2, dtype=m.float64), m.eye(3)),
     "found b of type Double and A of type Float"),
    (lambda m: m.triangular_solve(m.ones(3, 2), m.ones(3, 4)), "batches of square matrices"),
    (lambda m: m.triangular_solve(m.ones(4, 2), m.eye(3)), "each b matrix is 4 by 2"),
    (lambda m: m.triangular_solve(m.ones(2, 3, 2), m.eye(3).expand(3, 3, 3)),
     "must match the size of tensor b"),
    (lambda m: m.triangular_solve(m.ones(3, 2, dtype=m.int64), m.eye(3, dtype=m.int64)),
     "not implemented for 'Long'"),
])
def test_solve_errors(fn, match):
    same(quiet(fn), match)


@pytest.mark.parametrize("flags", [(True, False, False), (False, False, False),
                                   (True, True, False), (False, True, True)])
def test_triangular_solve(flags):
    a = arr(3, 3, dtype="float64") + 3 * np.eye(3)
    b = arr(3, 2, dtype="float64")
    e, t = check(quiet(lambda m, b, a: m.triangular_solve(b, a, *flags)), b, a)
    assert _node(e) == _node(t) == "TriangularSolveBackward0"
    same(quiet(lambda m: type(m.triangular_solve(m.ones(2, 1), m.eye(2))).__name__))
    # batches broadcast (the copy of A too); the copy's gradient flows to A, b's is zeros
    check(quiet(lambda m, b, a: m.triangular_solve(b, a, *flags)), arr(2, 3, 2, dtype="float64"),
          a)
    check(quiet(lambda m, b, a: m.triangular_solve(b, a, *flags).cloned_coefficient), b, a)
    gradgrad_check(quiet(lambda b, a: ember.triangular_solve(b, a, *flags).solution), b, a)
    with pytest.warns(UserWarning, match="triangular_solve is deprecated"):
        ember.triangular_solve(ember.ones(2, 1), ember.eye(2))


@pytest.mark.parametrize("fn", [
    lambda m, x: m.pinverse(x),
    lambda m, x: x.pinverse(0.3),
    lambda m, x: m.chain_matmul(x, x.t(), x),
    lambda m, x: m.chain_matmul(x),
    lambda m, x: m.nuclear_norm(x),
    lambda m, x: m.nuclear_norm(x, True),
    lambda m, x: m.nuclear_norm(x[None].expand(2, 3, 4), (1, 2)),
    lambda m, x: m.frobenius_norm(x, (0, 1)),
    lambda m, x: m.frobenius_norm(x, (1,), True),
])
def test_deprecated_and_compositions(fn):
    check(quiet(fn), M)


@pytest.mark.parametrize("fn", [
    lambda m: m.chain_matmul(),
    lambda m: m.chain_matmul(m.ones(2)),
    lambda m: m.frobenius_norm(m.ones(2, 2, 2), (0, 1, 2)),
])
def test_deprecated_errors(fn):
    same(quiet(fn))


def test_deprecation_warnings():
    for fn, match in [(lambda: ember.chain_matmul(ember.eye(2)), "chain_matmul is deprecated"),
                      (lambda: ember.nuclear_norm(ember.eye(2)), "nuclear_norm is deprecated"),
                      (lambda: ember.frobenius_norm(ember.eye(2), (0,)), "frobenius_norm is")]:
        with pytest.warns(UserWarning, match=match):
            fn()


def test_ex_forms():
    a = arr(2, 3, 3, dtype="float64")
    s = spd(3)
    check(lambda m, a: m.linalg.inv_ex(a), a)
    check(lambda m, a, b: m.linalg.solve_ex(a, b), a, arr(2, 3, dtype="float64"))
    check(lambda m, s: m.linalg.cholesky_ex(s), s)
    check(lambda m, s: m.linalg.cholesky_ex(s, upper=True).L, s)
    same(lambda m: m.linalg.inv_ex(m.zeros(2, 3, 3)).info)
    same(lambda m: m.linalg.solve_ex(m.zeros(3, 3), m.ones(3)).info)
    same(lambda m: (lambda r: (r.info, r.L[0]))(m.linalg.cholesky_ex(
        m.tensor(np.stack([s, -s])))))
    same(lambda m: m.linalg.cholesky_ex(m.tensor(np.diag([1.0, 2.0, -1.0]))).info)
    same(lambda m: type(m.linalg.inv_ex(m.eye(2))).__name__)


@pytest.mark.parametrize("fn", [
    lambda m: m.linalg.inv_ex(m.zeros(3, 3), check_errors=True),
    lambda m: m.linalg.cholesky_ex(-m.eye(3), check_errors=True),
    lambda m: m.linalg.solve_ex(m.zeros(3, 3), m.ones(3), check_errors=True),
])
def test_ex_errors(fn):
    messages = []
    for lib in (ember, oracle.torch):
        with pytest.raises(lib.linalg.LinAlgError) as info:
            fn(lib)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    same(lambda m: m.linalg.inv_ex(m.ones(2, 3)))


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", 1, -1, float("inf")])
def test_cond(p):
    check(lambda m, a: m.linalg.cond(a, p), arr(2, 3, 3, dtype="float64") + 2 * np.eye(3),
          rtol=1e-8, atol=1e-8, grad=p in (None, 2, -2))  # torch's other backwards fail


def test_cond_errors():
    same(lambda m: m.linalg.cond(m.ones(3)))
    same(lambda m: m.linalg.cond(m.ones(2, 3), 1))


def test_tensorinv_tensorsolve():
    a = arr(4, 2, 2, dtype="float64") + np.eye(4).reshape(4, 2, 2)
    check(lambda m, a: m.linalg.tensorinv(a, ind=1), a)
    b = arr(6, 2, 3, dtype="float64") + np.eye(6).reshape(6, 2, 3)
    check(lambda m, b: m.linalg.tensorinv(b), b.reshape(2, 3, 6))
    check(lambda m, a, y: m.linalg.tensorsolve(a, y), b.reshape(2, 3, 6),
          arr(2, 3, dtype="float64"))
    check(lambda m, a, y: m.linalg.tensorsolve(a, y, dims=(0,)), b.reshape(6, 2, 3),
          arr(2, 3, dtype="float64"))
    same(lambda m: m.linalg.tensorinv(m.ones(2, 3), ind=1))
    same(lambda m: m.linalg.tensorinv(m.ones(4, 4), ind=0))


def _singular_lower():
    a = np.tril(arr(2, 4, 4, dtype="float64")) + 3 * np.eye(4)
    a[0, 1, 1] = 0.0  # batch 0 singular, batch 1 not
    return a


@pytest.mark.parametrize("fn", [
    lambda m, b, a: m.linalg.solve_triangular(a, b, upper=False),
    lambda m, b, a: m.linalg.solve_triangular(a.mT, b, upper=True),
    lambda m, b, a: m.linalg.solve_triangular(a.mT, b.mT, upper=True, left=False),
    lambda m, b, a: m.triangular_solve(b, a, False).solution,
    lambda m, b, a: m.triangular_solve(b, a, False, True).solution,
    lambda m, b, a: m.cholesky_solve(b, a),
    lambda m, b, a: m.cholesky_solve(b, a.mT, True),
])
def test_singular_triangles_give_inf_and_nan(fn):
    # LAPACK's general solve refuses (or pivots around) a zero on the diagonal; torch's
    # triangular solves divide by it
    check(quiet(fn), arr(4, 3, dtype="float64"), _singular_lower(), grad=False)


@pytest.mark.parametrize("batch", [False, True])
def test_cholesky_inverse_singular_error(batch):
    a = _singular_lower()[::-1].copy() if batch else _singular_lower()[0]
    msgs = []
    for lib in (ember, oracle.torch):
        with pytest.raises(lib.linalg.LinAlgError) as info:
            lib.cholesky_inverse(lib.tensor(a))
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]
