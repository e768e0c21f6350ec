"""ember.poisson / ember.binomial (torch's CPU samplers: seeded draws in every regime of
their algorithms, both float kernels), the new distributions' KL pairs and validation errors,
all against torch."""

import numpy as np
import pytest
import torch
from oracle import assert_same, same

import ember

R = np.random.default_rng(21)


def _seeded(fn, seed=4):
    """fn(lib) under the same seed in both libraries; then both generators must agree."""
    ember.manual_seed(seed)
    torch.manual_seed(seed)
    e, t = fn(ember), fn(torch)
    assert_same(e, t, atol=0, rtol=0)
    assert_same(ember.rand(3), torch.rand(3))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("rates", [[0.0, 0.3, 2.5, 9.99], [10.0, 13.7, 250.0, 1e5],
                                   "mixed"])
def test_poisson_draws_match_torch(dtype, rates):
    r = R.uniform(0, 40, (7, 9)) if rates == "mixed" else np.array(rates)
    _seeded(lambda lib: lib.poisson(lib.tensor(r, dtype=getattr(lib, dtype)).expand(
        30, *r.shape).contiguous()))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("regime", ["inversion", "btrs", "flipped", "edges", "mixed"])
def test_binomial_draws_match_torch(dtype, regime):
    n, p = {"inversion": (np.full(200, 15.0), np.full(200, 0.2)),
            "btrs": (np.full(200, 400.0), np.full(200, 0.3)),
            "flipped": (np.r_[np.full(100, 12.0), np.full(100, 900.0)], np.full(200, 0.93)),
            "edges": (np.array([0.0, 5.0, 5.0, 7.0, 1e6]), np.array([0.5, 0.0, 1.0, 0.5, 0.5])),
            "mixed": (R.integers(0, 500, 500).astype(float), R.uniform(0, 1, 500))}[regime]
    _seeded(lambda lib: lib.binomial(lib.tensor(n, dtype=getattr(lib, dtype)),
                                     lib.tensor(p, dtype=getattr(lib, dtype))))


def test_binomial_broadcasts_prob_to_count():
    _seeded(lambda lib: lib.binomial(lib.full((3, 4), 20.0), lib.tensor([0.1, 0.5, 0.7, 0.9])))


def test_generator_argument_and_gradients():
    for lib in (ember, torch):
        g = lib.Generator().manual_seed(3)
        a = lib.poisson(lib.full((5,), 4.0), generator=g)
        g.manual_seed(3)
        assert lib.equal(a, lib.poisson(lib.full((5,), 4.0), generator=g))
    x, xt = ember.tensor([3.0, 30.0], requires_grad=True), torch.tensor([3.0, 30.0],
                                                                         requires_grad=True)
    y, yt = ember.poisson(x), torch.poisson(xt)
    assert type(y.grad_fn).__name__ == type(yt.grad_fn).__name__ == "PoissonBackward0"
    y.sum().backward()
    yt.sum().backward()
    assert_same(x.grad, xt.grad)
    same(lambda lib: lib.binomial(lib.tensor([5.0], requires_grad=True),
                                  lib.tensor([0.5])).sum().backward(), match="not implemented")


def test_poisson_binomial_errors():
    same(lambda lib: lib.poisson(lib.tensor([1.0, -1.0])), match="non-negative")
    same(lambda lib: lib.poisson(lib.tensor([1, 2])))
    same(lambda lib: lib.poisson([1.0]))
    same(lambda lib: lib.binomial(lib.tensor([5.0]), lib.tensor([0.5], dtype=lib.float64)))
    same(lambda lib: lib.binomial(lib.tensor([5, 6]), lib.tensor([0.5, 0.5])))


LEAVES = []  # the parameters the KL builders made, in order


def _t(lib, a, grad=True):
    t = lib.tensor(np.asarray(a, dtype=np.float32), requires_grad=grad)
    if grad:
        LEAVES.append(t)
    return t


def _lowrank(lib, scale=1.0):
    rng = np.random.default_rng(2)
    return lib.distributions.LowRankMultivariateNormal(
        _t(lib, rng.uniform(-1, 1, (2, 3)) * scale), _t(lib, rng.uniform(-1, 1, (3, 2)) * scale),
        _t(lib, rng.uniform(0.5, 2, 3) * scale))


def _mvn(lib):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 3))
    return lib.distributions.MultivariateNormal(
        _t(lib, rng.uniform(-1, 1, 3)), covariance_matrix=_t(lib, a @ a.T + 3 * np.eye(3)))


KL = {
    "Poisson-Poisson": lambda D, lib: (D.Poisson(_t(lib, [0.5, 4.0, 20.0])),
                                       D.Poisson(_t(lib, [1.5, 3.0, 25.0]))),
    "Binomial-Binomial": lambda D, lib: (D.Binomial(_t(lib, [10, 10, 12], False),
                                                    _t(lib, [0.2, 0.7, 0.4])),
                                         D.Binomial(_t(lib, [10, 10, 10], False),
                                                    _t(lib, [0.5, 0.3, 0.4]))),
    "Bernoulli-Poisson": lambda D, lib: (D.Bernoulli(_t(lib, [0.2, 0.9])),
                                         D.Poisson(_t(lib, [0.5, 2.0]))),
    "Poisson-Bernoulli": lambda D, lib: (D.Poisson(_t(lib, [0.5, 2.0])),
                                         D.Bernoulli(_t(lib, [0.2, 0.9]))),
    "Poisson-Binomial": lambda D, lib: (D.Poisson(_t(lib, [0.5, 2.0])),
                                        D.Binomial(5, _t(lib, [0.2, 0.9]))),
    "LowRank-LowRank": lambda D, lib: (_lowrank(lib), _lowrank(lib, 1.3)),
    "MVN-LowRank": lambda D, lib: (_mvn(lib), _lowrank(lib)),
    "LowRank-MVN": lambda D, lib: (_lowrank(lib), _mvn(lib)),
}


@pytest.mark.parametrize("pair", list(KL))
def test_kl_pairs_match_torch(pair):
    LEAVES.clear()
    pe, qe = KL[pair](ember.distributions, ember)
    pt, qt = KL[pair](torch.distributions, torch)
    n = len(LEAVES) // 2
    e_leaves, t_leaves = LEAVES[:n], LEAVES[n:]
    ek, tk = ember.distributions.kl_divergence(pe, qe), torch.distributions.kl_divergence(pt, qt)
    assert_same(ek, tk, atol=1e-4, rtol=1e-4)
    if tk.requires_grad and np.isfinite(tk.detach().numpy()).all():
        u = R.standard_normal(tuple(tk.shape)).astype(np.float32)
        eg = ember.autograd.grad(ek, e_leaves, ember.tensor(u), allow_unused=True)
        tg = torch.autograd.grad(tk, t_leaves, torch.tensor(u), allow_unused=True)
        for a, b in zip(eg, tg):
            if b is not None:
                assert_same(a, b, atol=1e-3, rtol=1e-3)


def test_kl_binomial_larger_q_count_raises():
    same(lambda lib: lib.distributions.kl_divergence(
        lib.distributions.Binomial(5, lib.tensor([0.5])),
        lib.distributions.Binomial(6, lib.tensor([0.5]))))


def test_lowrank_matrices_and_errors():
    for what in ("covariance_matrix", "precision_matrix", "scale_tril", "variance"):
        assert_same(getattr(_lowrank(ember), what), getattr(_lowrank(torch), what), atol=1e-5,
                    rtol=1e-4)
    L = "distributions"  # noqa: N806
    z, w, d = np.zeros(3, np.float32), np.ones((3, 2), np.float32), np.ones(3, np.float32)
    same(lambda lib: getattr(lib, L).LowRankMultivariateNormal(_t(lib, 0.0), _t(lib, w),
                                                                _t(lib, d)))
    same(lambda lib: getattr(lib, L).LowRankMultivariateNormal(_t(lib, z), _t(lib, d),
                                                                _t(lib, d)))
    same(lambda lib: getattr(lib, L).LowRankMultivariateNormal(_t(lib, z), _t(lib, w.T),
                                                                _t(lib, d)))
    same(lambda lib: getattr(lib, L).LowRankMultivariateNormal(_t(lib, z), _t(lib, w),
                                                                _t(lib, d[:2])))
    same(lambda lib: getattr(lib, L).LowRankMultivariateNormal(
        _t(lib, np.zeros((2, 3))), _t(lib, np.ones((3, 3, 2))), _t(lib, d)))
    same(lambda lib: getattr(lib, L).LowRankMultivariateNormal(_t(lib, z), _t(lib, w),
                                                                _t(lib, -100 * d)),
         match="Expected parameter cov_diag")


def test_poisson_binomial_validation():
    D = "distributions"  # noqa: N806
    same(lambda lib: getattr(lib, D).Poisson(lib.tensor([-1.0])), match="Expected parameter")
    same(lambda lib: getattr(lib, D).Poisson(lib.tensor([2.0])).log_prob(lib.tensor([0.5])),
         match="Expected value argument")
    same(lambda lib: getattr(lib, D).Binomial(5, lib.tensor([1.5])), match="Expected parameter")
    same(lambda lib: getattr(lib, D).Binomial(2.5, lib.tensor([0.5])),
         match="Expected parameter total_count")
    same(lambda lib: getattr(lib, D).Binomial(5, lib.tensor([0.5]), lib.tensor([0.0])))
    same(lambda lib: getattr(lib, D).Binomial(5, lib.tensor([0.5])).log_prob(lib.tensor([6.0])),
         match="Expected value argument")
    same(lambda lib: getattr(lib, D).Binomial(lib.tensor([3.0, 5.0]),
                                              lib.tensor([0.5, 0.5])).entropy())
    same(lambda lib: getattr(lib, D).Binomial(lib.tensor([3.0, 5.0]),
                                              lib.tensor([0.5, 0.5])).enumerate_support())
    same(lambda lib: getattr(lib, D).Poisson(3.0).sample((4,)).shape)
    same(lambda lib: getattr(lib, D).Poisson(3.0).mode)
    same(lambda lib: getattr(lib, D).Poisson(lib.tensor([3.0, 0.5])).entropy())
    same(lambda lib: getattr(lib, D).Binomial(lib.tensor([[5.0], [10.0]]),
                                              lib.tensor([0.5, 0.8])).batch_shape)
