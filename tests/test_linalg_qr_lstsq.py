"""Householder QR pieces (geqrf, linalg.householder_product / orgqr, ormqr), linalg.lstsq and
the randomized svd_lowrank / pca_lowrank vs torch: values, return types, gradients, errors."""

import numpy as np
import oracle
import pytest
import torch
from oracle import check, check_error, fd_check, same

import ember

_RNG = np.random.default_rng(99)


def arr(*shape, dtype="float64"):
    return oracle.arr(*shape, rng=_RNG, dtype=dtype)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 6, 3), (0, 3), (3, 0)])
def test_geqrf(shape):
    e, t = check(lambda m, a: m.geqrf(a), arr(*shape), grad=False, atol=1e-10)
    assert type(e).__name__ == "geqrf"
    check(lambda m, a: a.geqrf(), arr(*shape, dtype="float32"), grad=False, atol=1e-5)


def test_geqrf_not_differentiable():
    a = arr(4, 3)
    same(lambda lib: lib.geqrf(lib.tensor(a, requires_grad=True))[0].sum().backward(),
         match="geqrf")
    same(lambda lib: lib.geqrf(lib.tensor(a)))


def _qr_inputs(shape, k):
    a = arr(*shape)
    h, tau = torch.geqrf(torch.from_numpy(a))
    return h.numpy(), tau[..., :k].numpy().copy()


@pytest.mark.parametrize("shape,k", [((5, 3), 3), ((4, 4), 2), ((2, 5, 3), 3), ((6, 3), 0),
                                     ((4, 3), 1)])
@pytest.mark.parametrize("fn", [
    lambda m, a, tau: m.linalg.householder_product(a, tau),
    lambda m, a, tau: m.orgqr(a, tau),
    lambda m, a, tau: a.orgqr(tau),
])
def test_householder_product(shape, k, fn):
    h, tau = _qr_inputs(shape, k)
    e, t = check(fn, h, tau, atol=1e-9, rtol=1e-7)
    assert type(e.grad_fn).__name__ == type(t.grad_fn).__name__


def test_householder_product_fd_and_random_tau():
    a, tau = arr(5, 3), arr(3)  # any reflectors, not only geqrf's
    check(lambda m, a, t: m.linalg.householder_product(a, t), a, tau, atol=1e-9)
    fd_check(lambda a, t: ember.linalg.householder_product(a, t), a, tau)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("shape,cshape", [((5, 3), (5, 2)), ((2, 4, 4), (2, 4, 3))])
def test_ormqr(left, transpose, shape, cshape):
    h, tau = _qr_inputs(shape, min(shape[-2:]))
    c = arr(*cshape)
    if not left:
        c = np.swapaxes(c, -1, -2).copy()
    e, t = check(lambda m, a, tau, c: m.ormqr(a, tau, c, left, transpose), h, tau, c,
                 atol=1e-9, rtol=1e-7)
    assert type(e.grad_fn).__name__ == type(t.grad_fn).__name__ == "OrmqrBackward0"
    check(lambda m, a, tau, c: a.ormqr(tau, c, left=left, transpose=transpose), h, tau, c,
          atol=1e-9, rtol=1e-7)
    fd_check(lambda a, tau, c: ember.ormqr(a, tau, c, left, transpose), h, tau, c)


@pytest.mark.parametrize("fn,phrase", [
    (lambda m: m.geqrf(m.ones(3)), "at least 2"),
    (lambda m: m.geqrf(m.ones(3, 3, dtype=m.int64)), "geqrf_cpu"),
    (lambda m: m.linalg.householder_product(m.ones(3, 4), m.ones(2)), "input.shape[-2]"),
    (lambda m: m.linalg.householder_product(m.ones(4, 3), m.ones(4)), "tau.shape[-1]"),
    (lambda m: m.linalg.householder_product(m.ones(4, 3), m.ones(2, 2)), "one dimension less"),
    (lambda m: m.linalg.householder_product(m.ones(4, 3), m.ones(2).double()), "tau dtype"),
    (lambda m: m.linalg.householder_product(m.ones(4), m.ones(2)), "at least 2"),
    (lambda m: m.linalg.householder_product(m.ones(2, 4, 3), m.ones(3, 2)), "batch"),
    (lambda m: m.ormqr(m.ones(4, 3), m.ones(2), m.ones(4, 2)), "tau.shape[-1]"),
    (lambda m: m.ormqr(m.ones(4, 3), m.ones(3), m.ones(5, 2)), "other.shape[-2]"),
    (lambda m: m.ormqr(m.ones(4, 3), m.ones(2), m.ones(2, 5), left=False), "other.shape[-1]"),
    (lambda m: m.ormqr(m.ones(4, 3), m.ones(3), m.ones(4, 2).double()), "dtype"),
    (lambda m: m.ormqr(m.ones(4, 3), m.ones(3).double(), m.ones(4, 2)), "dtype"),
    (lambda m: m.ormqr(m.ones(4, 4), m.ones(3), m.ones(4, 2)), "tau.shape[-1]"),
    (lambda m: m.ormqr(m.ones(2, 4, 3), m.ones(2, 3), m.ones(4, 2)), "same number"),
    (lambda m: m.ormqr(m.ones(2, 4, 3), m.ones(2, 3), m.ones(3, 4, 2)), "batch dimensions"),
    (lambda m: m.ormqr(m.ones(2, 4, 3), m.ones(3, 3), m.ones(2, 4, 2)), "batch dimensions"),
    (lambda m: m.ormqr(m.ones(4, 3), m.ones(2, 3), m.ones(4, 2)), "one dimension less"),
])
def test_errors(fn, phrase):
    check_error(lambda m: fn(m), match=phrase)


@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("ashape,bshape", [((5, 3), (5, 2)), ((3, 5), (3, 2)), ((4, 4), (4, 1)),
                                           ((2, 5, 3), (2, 5, 2)), ((5, 3), (5,)),
                                           ((2, 5, 3), (5, 2)), ((2, 5, 3), (2, 5))])
def test_lstsq(driver, ashape, bshape):
    if ashape == (2, 5, 3) and bshape == (5, 2):  # B of rank A.ndim - 1: a batch of vectors
        check_error(lambda m, a, b: m.linalg.lstsq(a, b, driver=driver), arr(*ashape),
                    arr(*bshape))
        return
    e, t = check(lambda m, a, b: m.linalg.lstsq(a, b, driver=driver), arr(*ashape),
                 arr(*bshape), atol=1e-9, rtol=1e-7)
    assert type(e).__name__ == "linalg_lstsq"
    assert type(e.solution.grad_fn).__name__ == type(t.solution.grad_fn).__name__


def test_lstsq_rank_deficient_and_float32():
    a = arr(6, 3)
    a[:, 2] = a[:, 1]
    for d in ("gelsy", "gelsd", "gelss"):
        check(lambda m, a, b, d=d: m.linalg.lstsq(a, b, driver=d)[::2], a, arr(6, 2),
              grad=False, atol=1e-9, rtol=1e-7)
    check(lambda m, a, b: m.linalg.lstsq(a, b, driver="gelsd"), arr(2, 6, 3, dtype="float32"),
          arr(2, 6, 2, dtype="float32"), atol=1e-4, rtol=1e-4)


def test_lstsq_finite_differences():
    fd_check(lambda a, b: ember.linalg.lstsq(a, b).solution, arr(5, 3), arr(5, 2))
    fd_check(lambda a, b: ember.linalg.lstsq(a, b, driver="gelsd").residuals, arr(5, 3),
             arr(5, 2))


@pytest.mark.parametrize("fn,phrase", [
    (lambda m: m.linalg.lstsq(m.ones(3), m.ones(3)), "at least 2"),
    (lambda m: m.linalg.lstsq(m.ones(5, 3), m.ones(4, 2)), "should match"),
    (lambda m: m.linalg.lstsq(m.ones(5, 3), m.ones(5, 2).double()), "same dtype"),
    (lambda m: m.linalg.lstsq(m.ones(5, 3), m.ones(5, 2), driver="foo"), "driver"),
    (lambda m: m.linalg.lstsq(m.ones(5, 3).long(), m.ones(5, 2).long()), "float and double"),
    (lambda m: m.linalg.lstsq(m.ones(5, 3), m.ones(2, 5, 2)), "input.dim()"),
])
def test_lstsq_errors(fn, phrase):
    check_error(lambda m: fn(m), match=phrase)


def _sign_free(usv):
    """What does not depend on the LAPACK's choice of singular vector signs (ember's SVD is
    NumPy's, torch's MKL's): S, the squared vectors and the reconstruction."""
    u, s, v = usv
    return s, u.square(), v.square(), (u * s.unsqueeze(-2)) @ v.mT


@pytest.mark.parametrize("shape,kw", [((20, 8), {}), ((8, 20), {"q": 4}),
                                      ((2, 12, 10), {"niter": 1}), ((12, 10), {"q": 3})])
def test_svd_lowrank_seeded_as_torch(shape, kw):
    a = arr(*shape)

    def fn(m, a):
        m.manual_seed(5)
        return _sign_free(m.svd_lowrank(a, **kw))

    check(fn, a, atol=1e-8, rtol=1e-6)


def test_svd_lowrank_with_mean_and_pca():
    a, mean = arr(15, 6), arr(1, 6)

    def low(m, a, mu):
        m.manual_seed(1)
        return _sign_free(m.svd_lowrank(a, q=4, M=mu))

    check(low, a, mean, atol=1e-8, rtol=1e-6)
    for kw in ({}, {"q": 3, "center": False}, {"niter": 0}):
        def pca(m, a, kw=kw):
            m.manual_seed(2)
            return _sign_free(m.pca_lowrank(a, **kw))

        check(pca, a, atol=1e-8, rtol=1e-6)
    same(lambda lib: lib.pca_lowrank(lib.ones(4, 3), q=5), match="q(=5)")
    same(lambda lib: lib.pca_lowrank(lib.ones(4, 3), niter=-1), match="niter")


def test_double_backward_householder_and_lstsq():
    from oracle import check_double_backward

    check_double_backward(lambda m, a, t: m.linalg.householder_product(a, t), arr(5, 3),
                          arr(3), atol=1e-8, rtol=1e-6)
    check_double_backward(lambda m, a, t, c: m.ormqr(a, t, c, False, True), arr(4, 3),
                          arr(3), arr(2, 4), atol=1e-8, rtol=1e-6)
    check_double_backward(lambda m, a, b: m.linalg.lstsq(a, b).solution, arr(5, 3),
                          arr(5, 2), atol=1e-8, rtol=1e-6)


@pytest.mark.parametrize("driver", ["gelsy", "gelsd", "gelss"])
def test_lstsq_rcond(driver):
    """A direction below ``rcond`` is dropped: by the SVD here and in gelsd / gelss, through
    QR with column pivoting in gelsy, which agree to the dropped singular value's relative
    size (1e-6 here), so gelsy's solution is compared to that."""
    rng = np.random.default_rng(7)
    a = rng.uniform(-2, 2, (6, 4)) * np.array([1.0, 1e-3, 1.0, 1e-6])
    rtol = 1e-4 if driver == "gelsy" else 1e-7
    check(lambda m, a, b: m.linalg.lstsq(a, b, rcond=1e-4, driver=driver)[::2], a,
          rng.uniform(-2, 2, (6, 2)), grad=False, atol=1e-8, rtol=rtol)
