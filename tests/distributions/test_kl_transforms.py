"""kl_divergence (every registered pair ember has), transforms and constraints vs torch."""

import math

import numpy as np
import pytest
import torch
from oracle import assert_same, same

import ember

R = np.random.default_rng(13)


def _a(*shape, low=-1.5, high=1.5):
    return R.uniform(low, high, shape).astype(np.float32)


def _p(*shape, low=0.4, high=3.0):
    return _a(*shape, low=low, high=high)


def _simplex(*shape):
    x = _p(*shape, low=0.1, high=1.0)
    return x / x.sum(-1, keepdims=True)


def _spd(n):
    a = R.standard_normal((n, n)).astype(np.float32)
    return a @ a.T + n * np.eye(n, dtype=np.float32)


# name -> (build(D, *tensors), arrays): the distributions KL pairs are drawn from
DISTS = {
    "Normal": (lambda D, m, s: D.Normal(m, s), [_a(4), _p(4)]),
    "Laplace": (lambda D, m, s: D.Laplace(m, s), [_a(4), _p(4)]),
    "Exponential": (lambda D, r: D.Exponential(r), [_p(4)]),
    "Gamma": (lambda D, c, r: D.Gamma(c, r), [_p(4), _p(4)]),
    "Beta": (lambda D, a, b: D.Beta(a, b), [_p(4), _p(4)]),
    "Uniform": (lambda D, lo, w: D.Uniform(lo, lo + w), [_a(4, low=0.05, high=0.3),
                                                        _p(4, low=0.2, high=0.6)]),
    "Bernoulli": (lambda D, p: D.Bernoulli(p), [_p(4, low=0.1, high=0.9)]),
    "Categorical": (lambda D, p: D.Categorical(p), [_simplex(4, 3)]),
    "OneHotCategorical": (lambda D, p: D.OneHotCategorical(p), [_simplex(4, 3)]),
    "Dirichlet": (lambda D, c: D.Dirichlet(c), [_p(4, 3)]),
    "MVN": (lambda D, m, c: D.MultivariateNormal(m, c), [_a(4, 3), _spd(3)]),
    "Independent": (lambda D, m, s: D.Independent(D.Normal(m, s), 1), [_a(4, 2), _p(4, 2)]),
    "LogNormal": (lambda D, m, s: D.TransformedDistribution(D.Normal(m, s),
                                                            D.transforms.ExpTransform()),
                  [_a(4), _p(4)]),
}

PAIRS = [("Normal", "Normal"), ("Laplace", "Laplace"), ("Exponential", "Exponential"),
         ("Gamma", "Gamma"), ("Beta", "Beta"), ("Uniform", "Uniform"),
         ("Bernoulli", "Bernoulli"), ("Categorical", "Categorical"),
         ("OneHotCategorical", "OneHotCategorical"), ("Dirichlet", "Dirichlet"),
         ("MVN", "MVN"), ("Independent", "Independent"), ("LogNormal", "LogNormal"),
         ("Beta", "Exponential"), ("Beta", "Gamma"), ("Beta", "Normal"), ("Beta", "Uniform"),
         ("Exponential", "Gamma"), ("Exponential", "Normal"), ("Exponential", "Uniform"),
         ("Exponential", "Beta"), ("Gamma", "Exponential"), ("Gamma", "Normal"),
         ("Gamma", "Uniform"), ("Laplace", "Normal"), ("Laplace", "Gamma"),
         ("Normal", "Laplace"), ("Normal", "Uniform"), ("Normal", "Exponential"),
         ("Uniform", "Beta"), ("Uniform", "Exponential"), ("Uniform", "Gamma"),
         ("Uniform", "Normal")]


def _make(lib, name, arrays):
    ts = [lib.tensor(a, requires_grad=True) for a in arrays]
    return DISTS[name][0](lib.distributions, *ts), ts


@pytest.mark.parametrize("p_name,q_name", PAIRS)
def test_kl_divergence_matches_torch(p_name, q_name):
    qa = [a.copy() for a in DISTS[q_name][1]]
    if q_name == p_name:  # a different member of the same family
        qa = [a * 1.3 for a in qa]
        if q_name == "MVN":
            qa = [qa[0], qa[1] + np.eye(3, dtype=np.float32)]
        if q_name in ("Categorical", "OneHotCategorical"):
            qa = [_simplex(4, 3)]
        if q_name == "Bernoulli":
            qa = [np.clip(qa[0], 0.05, 0.95)]
    pe, pet = _make(ember, p_name, DISTS[p_name][1])
    pt, ptt = _make(torch, p_name, DISTS[p_name][1])
    qe, qet = _make(ember, q_name, qa)
    qt, qtt = _make(torch, q_name, qa)
    ek, tk = ember.distributions.kl_divergence(pe, qe), torch.distributions.kl_divergence(pt, qt)
    assert_same(ek, tk, atol=1e-4, rtol=1e-4)
    if tk.requires_grad and np.isfinite(tk.detach().numpy()).all():
        u = R.standard_normal(tuple(tk.shape)).astype(np.float32)
        eg = ember.autograd.grad(ek, pet + qet, ember.tensor(u), allow_unused=True)
        tg = torch.autograd.grad(tk, ptt + qtt, torch.tensor(u), allow_unused=True)
        for a, b in zip(eg, tg):
            if b is not None:
                assert_same(a, b, atol=1e-3, rtol=1e-3)


def test_kl_registry():
    D = ember.distributions  # noqa: N806
    with pytest.raises(NotImplementedError, match="No KL"):
        D.kl_divergence(D.Laplace(0.0, 1.0), D.Bernoulli(0.5))
    with pytest.raises(NotImplementedError, match="different exponential families"):
        D.kl_divergence(D.Bernoulli(0.5), D.Normal(0.0, 1.0))

    class MyNormal(D.Normal):
        pass

    assert D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(1.0, 1.0)).item() == pytest.approx(0.5)

    @D.register_kl(MyNormal, D.Normal)
    def _mine(p, q):
        return ember.tensor(42.0)

    assert D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(1.0, 1.0)).item() == 42.0
    # Expfamily fallback: same family without its own formula uses the Bregman divergence
    same(lambda lib: lib.distributions.kl.kl_divergence(
        lib.distributions.Exponential(lib.tensor([2.0])),
        lib.distributions.Exponential(lib.tensor([0.5]))))


# --- transforms -------------------------------------------------------------------------------

TRANSFORMS = {
    "Exp": (lambda T: T.ExpTransform(), (3, 4), "real"),
    "Sigmoid": (lambda T: T.SigmoidTransform(), (3, 4), "real"),
    "Tanh": (lambda T: T.TanhTransform(), (3, 4), "real"),
    "Softplus": (lambda T: T.SoftplusTransform(), (3, 4), "real"),
    "Abs": (lambda T: T.AbsTransform(), (3, 4), "real"),
    "Power": (lambda T: T.PowerTransform(2.5), (3, 4), "positive"),
    "Affine": (lambda T: T.AffineTransform(0.5, -2.0), (3, 4), "real"),
    "Affine-event": (lambda T: T.AffineTransform(0.5, 3.0, event_dim=1), (3, 4), "real"),
    "Softmax": (lambda T: T.SoftmaxTransform(), (3, 4), "real"),
    "StickBreaking": (lambda T: T.StickBreakingTransform(), (3, 4), "real"),
    "LowerCholesky": (lambda T: T.LowerCholeskyTransform(), (2, 3, 3), "real"),
    "PositiveDefinite": (lambda T: T.PositiveDefiniteTransform(), (2, 3, 3), "real"),
    "Reshape": (lambda T: T.ReshapeTransform((4,), (2, 2)), (3, 4), "real"),
    "Independent": (lambda T: T.IndependentTransform(T.ExpTransform(), 1), (3, 4), "real"),
    "Compose": (lambda T: T.ComposeTransform([T.AffineTransform(1.0, 2.0), T.ExpTransform()]),
                (3, 4), "real"),
    "Inverse": (lambda T: T.ExpTransform().inv, (3, 4), "positive"),
}


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_transforms_match_torch(name):
    make, shape, dom = TRANSFORMS[name]
    x = _a(*shape) if dom == "real" else _p(*shape)
    te, tt = make(ember.distributions.transforms), make(torch.distributions.transforms)
    xe, xt = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ye, yt = te(xe), tt(xt)
    assert_same(ye, yt, atol=1e-5)
    assert repr(te).replace("ember.", "torch.") == repr(tt)
    assert repr(te.domain) == repr(tt.domain) and repr(te.codomain) == repr(tt.codomain)
    assert te.bijective == tt.bijective
    assert tuple(te.forward_shape(shape)) == tuple(tt.forward_shape(torch.Size(shape)))
    if tt.bijective or name == "Softmax":
        with torch.no_grad(), ember.no_grad():
            assert_same(te.inv(ye.detach()), tt.inv(yt.detach()), atol=1e-4, rtol=1e-4)
    try:
        jt = tt.log_abs_det_jacobian(xt, yt)
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            te.log_abs_det_jacobian(xe, ye)
        return
    je = te.log_abs_det_jacobian(xe, ye)
    assert_same(je, jt, atol=1e-4, rtol=1e-4)
    assert je.requires_grad == jt.requires_grad
    if not jt.requires_grad:
        return
    u = R.standard_normal(tuple(jt.shape)).astype(np.float32)
    assert_same(ember.autograd.grad(je, xe, ember.tensor(u))[0],
                torch.autograd.grad(jt, xt, torch.tensor(u))[0], atol=1e-3, rtol=1e-3)


def test_transform_caching_and_equality():
    T = ember.distributions.transforms  # noqa: N806
    t = T.ExpTransform(cache_size=1)
    x = ember.randn(3)
    y = t(x)
    assert t(x) is y and t.inv(y) is x
    assert T.ExpTransform().with_cache(1)._cache_size == 1
    assert T.ExpTransform() == T.ExpTransform() and T.ExpTransform() != T.TanhTransform()
    assert T.AffineTransform(1.0, 2.0) == T.AffineTransform(1.0, 2.0)
    assert T.ExpTransform().inv.inv == T.ExpTransform()
    assert T.ComposeTransform([T.ExpTransform()]).inv.inv.parts == [T.ExpTransform()]
    assert T.identity_transform(x) is x
    same(lambda lib: lib.distributions.transforms.Transform(cache_size=2))
    same(lambda lib: lib.distributions.transforms.ReshapeTransform((3,), (2, 2)))
    same(lambda lib: lib.distributions.transforms.ExpTransform().event_dim)
    same(lambda lib: lib.distributions.transforms.AffineTransform(1.0, -2.0).sign)
    same(lambda lib: lib.distributions.transforms.ExpTransform().inv.sign)
    same(lambda lib: lib.distributions.transforms.StickBreakingTransform().inverse_shape(
        lib.Size([2, 4])))


def test_transformed_distribution_cdf_with_decreasing_transform():
    def fn(lib):
        D = lib.distributions  # noqa: N806
        d = D.TransformedDistribution(D.Normal(lib.tensor([0.5]), lib.tensor([2.0])),
                                      D.transforms.AffineTransform(1.0, -3.0))
        v = lib.tensor([0.2, -1.0, 4.0])
        return d.cdf(v), d.icdf(lib.tensor([0.1, 0.7])), d.log_prob(v), d.support

    same(fn)


# --- constraints ------------------------------------------------------------------------------

CONSTRAINTS = ["real", "positive", "nonnegative", "unit_interval", "simplex", "boolean",
               "one_hot", "nonnegative_integer", "positive_integer", "real_vector",
               "lower_triangular", "lower_cholesky", "positive_definite",
               "positive_semidefinite", "symmetric", "square", "corr_cholesky"]


@pytest.mark.parametrize("name", CONSTRAINTS)
def test_constraints_check(name):
    values = [np.array([[0.2, 0.8], [1.0, 0.0]], np.float32),
              np.array([[2.0, 0.0], [0.5, 1.0]], np.float32),
              np.array([[1.0, 0.5], [0.5, 1.0]], np.float32),
              np.array([[-1.0, float("nan")], [3.0, 2.0]], np.float32),
              np.eye(2, dtype=np.float32)]
    for v in values:
        same(lambda lib, v=v: getattr(lib.distributions.constraints, name).check(lib.tensor(v)))
    same(lambda lib: repr(getattr(lib.distributions.constraints, name)))
    same(lambda lib: getattr(lib.distributions.constraints, name).event_dim)
    same(lambda lib: getattr(lib.distributions.constraints, name).is_discrete)


def test_parameterised_constraints():
    for make in (lambda C: C.interval(0.0, 1.0), lambda C: C.half_open_interval(-1.0, 2.0),
                 lambda C: C.greater_than(0.5), lambda C: C.greater_than_eq(0.5),
                 lambda C: C.less_than(1.0), lambda C: C.integer_interval(0, 3),
                 lambda C: C.independent(C.positive, 1), lambda C: C.multinomial(3),
                 lambda C: C.cat([C.positive, C.real], 0, [1, 2]),
                 lambda C: C.stack([C.positive, C.real], 1)):
        same(lambda lib, make=make: make(lib.distributions.constraints).check(lib.tensor(
            [[0.5, -0.2, 1.0], [2.0, 1.0, 0.0], [3.0, 0.7, 1.5]])))
        same(lambda lib, make=make: repr(make(lib.distributions.constraints)))
    same(lambda lib: lib.distributions.constraints.dependent.check(lib.ones(1)))
    same(lambda lib: lib.distributions.constraints.dependent.event_dim)
    same(lambda lib: lib.distributions.constraints.is_dependent(
        lib.distributions.Uniform(0.0, 1.0).support))


def test_utils_match_torch():
    same(lambda lib: lib.distributions.utils.probs_to_logits(lib.tensor([0.0, 0.3, 1.0]), True))
    same(lambda lib: lib.distributions.utils.logits_to_probs(lib.tensor([0.0, 0.3, 1.0])))
    same(lambda lib: lib.distributions.utils.clamp_probs(lib.tensor([0.0, 1.0])))
    same(lambda lib: lib.distributions.utils.broadcast_all(lib.ones(2, 1), 3.0, lib.zeros(3)))
    same(lambda lib: lib.distributions.utils.broadcast_all("a"))
    same(lambda lib: lib.distributions.utils.tril_matrix_to_vec(
        lib.arange(9.0).reshape(3, 3), -1))
    same(lambda lib: lib.distributions.utils.vec_to_tril_matrix(lib.arange(6.0)))
    same(lambda lib: lib.distributions.utils.vec_to_tril_matrix(lib.arange(5.0)))
    assert ember.distributions.utils.euler_constant == pytest.approx(0.5772156649)
    assert math.isclose(ember.distributions.Normal(0.0, 1.0).entropy().item(),
                        torch.distributions.Normal(0.0, 1.0).entropy().item(), rel_tol=1e-6)
