"""ember.distributions vs torch.distributions: for each distribution, seeded samples (torch's
numbers), reparameterised sample gradients, log_prob (values and gradients in the parameters),
entropy, moments, cdf/icdf, enumerate_support, expand, shapes, reprs and validation errors."""

import numpy as np
import pytest
import torch
from oracle import assert_same, same

import ember

R = np.random.default_rng(7)


def _arr(*shape, low=-2.0, high=2.0, dtype=np.float32):
    return R.uniform(low, high, shape).astype(dtype)


def _pos(*shape, low=0.3, high=3.0, dtype=np.float32):
    return _arr(*shape, low=low, high=high, dtype=dtype)


def _probs(*shape):
    p = _pos(*shape, low=0.05, high=1.0)
    return p / p.sum(-1, keepdims=True)


def _spd(n, batch=()):
    a = R.standard_normal(batch + (n, n)).astype(np.float32)
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n, dtype=np.float32)


# name -> (build(D, *params), parameter arrays)
CASES = {
    "Normal": (lambda D, m, s: D.Normal(m, s), [_arr(2, 3), _pos(2, 3)]),
    "Normal-bcast": (lambda D, m, s: D.Normal(m, s), [_arr(2, 3), _pos(3)]),
    "Bernoulli-probs": (lambda D, p: D.Bernoulli(probs=p), [_pos(4, low=0.05, high=0.95)]),
    "Bernoulli-logits": (lambda D, logit: D.Bernoulli(logits=logit), [_arr(4)]),
    "Categorical-probs": (lambda D, p: D.Categorical(probs=p), [_probs(3, 5)]),
    "Categorical-logits": (lambda D, logit: D.Categorical(logits=logit), [_arr(3, 5)]),
    "OneHotCategorical": (lambda D, p: D.OneHotCategorical(probs=p), [_probs(2, 4)]),
    "Uniform": (lambda D, lo, w: D.Uniform(lo, lo + w), [_arr(5), _pos(5)]),
    "Exponential": (lambda D, r: D.Exponential(r), [_pos(6)]),
    "Laplace": (lambda D, m, s: D.Laplace(m, s), [_arr(6), _pos(6)]),
    "Gamma": (lambda D, c, r: D.Gamma(c, r), [_pos(2, 4, low=0.2, high=4.0), _pos(2, 4)]),
    "Beta": (lambda D, a, b: D.Beta(a, b), [_pos(5, low=0.3, high=4.0), _pos(5, low=0.3)]),
    "Dirichlet": (lambda D, c: D.Dirichlet(c), [_pos(3, 4, low=0.3, high=4.0)]),
    "MVN-cov": (lambda D, m, c: D.MultivariateNormal(m, covariance_matrix=c),
                [_arr(2, 3), _spd(3, (2,))]),
    "MVN-prec": (lambda D, m, c: D.MultivariateNormal(m, precision_matrix=c),
                 [_arr(3), _spd(3)]),
    "MVN-tril": (lambda D, m, c: D.MultivariateNormal(m, scale_tril=c),
                 [_arr(4, 3), np.linalg.cholesky(_spd(3))]),
    "Independent": (lambda D, m, s: D.Independent(D.Normal(m, s), 1), [_arr(2, 3), _pos(2, 3)]),
    "LogNormal-transformed": (lambda D, m, s: D.TransformedDistribution(
        D.Normal(m, s), [D.transforms.ExpTransform()]), [_arr(4), _pos(4)]),
    "Affine-Sigmoid": (lambda D, m, s: D.TransformedDistribution(
        D.Normal(m, s), [D.transforms.AffineTransform(1.0, 2.0), D.transforms.SigmoidTransform()]),
        [_arr(4), _pos(4)]),
    "Tanh-Independent": (lambda D, m, s: D.TransformedDistribution(
        D.Independent(D.Normal(m, s), 1), D.transforms.TanhTransform()), [_arr(2, 3), _pos(2, 3)]),
    "StickBreaking": (lambda D, m, s: D.TransformedDistribution(
        D.Normal(m, s), D.transforms.StickBreakingTransform()), [_arr(2, 3), _pos(2, 3)]),
    "Geometric": (lambda D, p: D.Geometric(p), [_pos(5, low=0.1, high=0.9)]),
    "Geometric-logits": (lambda D, logit: D.Geometric(logits=logit), [_arr(5)]),
    "LogNormal": (lambda D, m, s: D.LogNormal(m, s), [_arr(4), _pos(4)]),
    "HalfNormal": (lambda D, s: D.HalfNormal(s), [_pos(4)]),
    "Cauchy": (lambda D, m, s: D.Cauchy(m, s), [_arr(4), _pos(4)]),
    "Chi2": (lambda D, df: D.Chi2(df), [_pos(5, low=0.5, high=6.0)]),
    "StudentT": (lambda D, df, m, s: D.StudentT(df, m, s), [_pos(5, low=0.5, high=5.0),
                                                           _arr(5), _pos(5)]),
    "Multinomial": (lambda D, p: D.Multinomial(7, p), [_probs(3, 4)]),
    "RelaxedBernoulli": (lambda D, t, p: D.RelaxedBernoulli(t, probs=p),
                         [_pos(1, low=0.3, high=2.0), _pos(4, low=0.1, high=0.9)]),
    "RelaxedOneHot": (lambda D, t, logit: D.RelaxedOneHotCategorical(t, logits=logit),
                      [_pos(1, low=0.3, high=2.0), _arr(2, 4)]),
    "MixtureSameFamily": (lambda D, w, m, s: D.MixtureSameFamily(
        D.Categorical(w), D.Normal(m, s)), [_probs(2, 3), _arr(2, 3), _pos(2, 3)]),
    "Mixture-MVN": (lambda D, w, m: D.MixtureSameFamily(
        D.Categorical(logits=w), D.Independent(D.Normal(m, 1.0), 1)), [_arr(3), _arr(3, 2)]),
}
NAMES = list(CASES)


def _build(lib, name, params, grad=True):
    ts = [lib.tensor(a, requires_grad=grad) for a in params]
    return CASES[name][0](lib.distributions, *ts), ts


def _pair(name, grad=True):
    params = CASES[name][1]
    e, et = _build(ember, name, params, grad)
    t, tt = _build(torch, name, params, grad)
    return e, et, t, tt


def _backward_same(e_out, t_out, e_inputs, t_inputs, atol=1e-4):
    u = R.standard_normal(tuple(t_out.shape)).astype(np.float32)
    eg = ember.autograd.grad(e_out, e_inputs, ember.tensor(u), allow_unused=True)
    tg = torch.autograd.grad(t_out, t_inputs, torch.tensor(u), allow_unused=True)
    for i, (a, b) in enumerate(zip(eg, tg)):
        if b is None:
            assert a is None or not np.any(a.numpy()), f"grad {i}: torch has none"
        else:
            assert_same(a, b, atol=atol, rtol=1e-3, what=f"grad {i}")


@pytest.mark.parametrize("name", NAMES)
def test_shapes_and_repr(name):
    e, _, t, _ = _pair(name)
    assert tuple(e.batch_shape) == tuple(t.batch_shape)
    assert tuple(e.event_shape) == tuple(t.event_shape)
    assert e.has_rsample == t.has_rsample
    assert e.has_enumerate_support == t.has_enumerate_support
    assert repr(e).replace("ember.", "torch.") == repr(t)
    assert repr(e.support) == repr(t.support)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("sample_shape", [(), (3,), (2, 2)])
def test_seeded_samples_match_torch(name, sample_shape):
    e, _, t, _ = _pair(name)
    ember.manual_seed(11)
    torch.manual_seed(11)
    es, ts = e.sample(sample_shape), t.sample(sample_shape)
    assert_same(es, ts, atol=1e-6, rtol=1e-6)
    assert not es.requires_grad
    # the generator is left where torch's is
    assert_same(ember.rand(3), torch.rand(3))


@pytest.mark.parametrize("name", NAMES)
def test_rsample_gradients(name):
    e, et, t, tt = _pair(name)
    if not t.has_rsample:
        with pytest.raises(NotImplementedError):
            e.rsample()
        return
    ember.manual_seed(3)
    torch.manual_seed(3)
    es, ts = e.rsample((4,)), t.rsample((4,))
    assert_same(es, ts, atol=1e-6, rtol=1e-6)
    assert es.requires_grad
    _backward_same(es, ts, et, tt)


def _support_values(t, n=(3,)):
    torch.manual_seed(5)
    return t.sample(n).detach().numpy()


@pytest.mark.parametrize("name", NAMES)
def test_log_prob_and_gradients(name):
    e, et, t, tt = _pair(name)
    v = _support_values(t)
    ev, tv = ember.tensor(v, requires_grad=v.dtype.kind == "f" and t.has_rsample), \
        torch.tensor(v, requires_grad=v.dtype.kind == "f" and t.has_rsample)
    el, tl = e.log_prob(ev), t.log_prob(tv)
    assert_same(el, tl, atol=1e-4, rtol=1e-4)
    inputs_e, inputs_t = list(et), list(tt)
    if tv.requires_grad:
        inputs_e.append(ev)
        inputs_t.append(tv)
    _backward_same(el, tl, inputs_e, inputs_t, atol=1e-3)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("what", ["entropy", "mean", "variance", "stddev", "mode",
                                  "perplexity"])
def test_moments_and_entropy(name, what):
    def get(lib):
        d, ps = _build(lib, name, CASES[name][1])
        out = getattr(d, what)
        return (out() if callable(out) else out), ps

    try:
        tout, tps = get(torch)
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            get(ember)
        return
    eout, eps = get(ember)
    assert_same(eout, tout, atol=1e-4, rtol=1e-4)
    if tout.requires_grad:
        _backward_same(eout, tout, eps, tps, atol=1e-3)


@pytest.mark.parametrize("name", ["Normal", "Uniform", "Exponential", "Laplace", "HalfNormal",
                                  "Cauchy", "LogNormal-transformed", "Affine-Sigmoid"])
def test_cdf_icdf(name):
    e, et, t, tt = _pair(name)
    v = _support_values(t)
    assert_same(e.cdf(ember.tensor(v)), t.cdf(torch.tensor(v)), atol=1e-5)
    q = R.uniform(0.05, 0.95, v.shape).astype(np.float32)
    ei, ti = e.icdf(ember.tensor(q)), t.icdf(torch.tensor(q))
    assert_same(ei, ti, atol=1e-4, rtol=1e-4)
    _backward_same(ei, ti, et, tt, atol=1e-3)


@pytest.mark.parametrize("name", ["Bernoulli-probs", "Categorical-logits", "OneHotCategorical",
                                  "Independent"])
@pytest.mark.parametrize("expand", [True, False])
def test_enumerate_support(name, expand):
    def fn(lib):
        d, _ = _build(lib, name, CASES[name][1], grad=False)
        return d.enumerate_support(expand)

    same(fn)


@pytest.mark.parametrize("name", NAMES)
def test_expand(name):
    e, et, t, tt = _pair(name)
    shape = (2,) + tuple(t.batch_shape)
    ee, te = e.expand(shape), t.expand(shape)
    assert type(ee) is type(e)
    assert tuple(ee.batch_shape) == tuple(te.batch_shape)
    ember.manual_seed(2)
    torch.manual_seed(2)
    assert_same(ee.sample(), te.sample(), atol=1e-5)
    v = _support_values(te, ())
    assert_same(ee.log_prob(ember.tensor(v)), te.log_prob(torch.tensor(v)), atol=1e-4)


def test_distribution_defaults_and_errors():
    D = "distributions"  # noqa: N806
    same(lambda lib: getattr(lib, D).Normal(0.0, -1.0), match="Expected parameter scale")
    same(lambda lib: getattr(lib, D).Normal(0.0, 1.0).log_prob(1.0))
    same(lambda lib: getattr(lib, D).Bernoulli(probs=lib.tensor([0.2]), logits=lib.tensor([1.])))
    same(lambda lib: getattr(lib, D).Bernoulli(lib.tensor([1.5])))
    same(lambda lib: getattr(lib, D).Bernoulli(lib.tensor([0.5])).log_prob(lib.tensor([0.5])),
         match="Expected value argument")
    same(lambda lib: getattr(lib, D).Categorical(lib.tensor(0.5)))
    same(lambda lib: getattr(lib, D).Uniform(1.0, 0.0))
    same(lambda lib: getattr(lib, D).Dirichlet(lib.tensor(1.0)))
    same(lambda lib: getattr(lib, D).MultivariateNormal(lib.zeros(2)))
    same(lambda lib: getattr(lib, D).MultivariateNormal(lib.zeros(2), lib.eye(2) * -1.0))
    same(lambda lib: getattr(lib, D).Normal(lib.zeros(2), lib.ones(2)).log_prob(lib.zeros(3)),
         match="not broadcastable")
    same(lambda lib: getattr(lib, D).Independent(getattr(lib, D).Normal(0.0, 1.0), 1))
    same(lambda lib: getattr(lib, D).Normal(0.0, -1.0, validate_args=False).scale)
    same(lambda lib: getattr(lib, D).Normal(0.0, 1.0).batch_shape)
    same(lambda lib: getattr(lib, D).Normal(0.0, 1.0).sample((2,)).shape)
    same(lambda lib: getattr(lib, D).Normal(lib.tensor(0.0, dtype=lib.float64), 1.0).mean.dtype)
    same(lambda lib: getattr(lib, D).Exponential(2.0).mode)
    same(lambda lib: getattr(lib, D).Normal(0.0, 1.0).enumerate_support())
    with pytest.warns(FutureWarning):
        ember.distributions.Normal(0.0, 1.0).sample_n(2)


def test_set_default_validate_args():
    D = ember.distributions  # noqa: N806
    try:
        D.Distribution.set_default_validate_args(False)
        assert D.Normal(0.0, -1.0).scale.item() == -1.0
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args(3)


def test_float64_parameters_keep_their_dtype():
    for lib in (ember, torch):
        d = lib.distributions.Gamma(lib.tensor([2.0], dtype=lib.float64), 1.0)
        assert str(d.rsample().dtype).endswith("float64")
    e = ember.distributions.Gamma(ember.tensor([0.5, 3.0], dtype=ember.float64), 2.0)
    t = torch.distributions.Gamma(torch.tensor([0.5, 3.0], dtype=torch.float64), 2.0)
    ember.manual_seed(9)
    torch.manual_seed(9)
    assert_same(e.sample((50,)), t.sample((50,)), atol=1e-12)
