"""ember.linalg: inverse, determinants, solves, decompositions vs torch and finite differences."""

import numpy as np
import pytest
import torch
from oracle import arr, check, check_error, fd_check, gradgrad_check

import ember

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
