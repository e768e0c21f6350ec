"""multinomial and WeightedRandomSampler vs torch: seeded indices, shapes, errors."""

import numpy as np
import pytest
import torch
from oracle import check_error

import ember
import ember.utils.data as eud

W = np.random.default_rng(3).random((3, 50)).astype(np.float32)
W[1, ::3] = 0  # zero-weight categories must never be drawn


def _draws(m):
    m.manual_seed(0)
    x = m.tensor(W)
    g = m.Generator().manual_seed(5)
    return [m.multinomial(x[0], 1), m.multinomial(x, 1), m.multinomial(x, 10),
            m.multinomial(x, 200, True), x[1].multinomial(7, replacement=True),
            m.multinomial(x.double(), 30, True), m.multinomial(m.tensor([0.0, 0.0, 1.0]), 1),
            m.multinomial(x, 4, generator=g), m.multinomial(m.ones(0, 3), 2),
            list(m.utils.data.WeightedRandomSampler([0.1, 0.0, 2.0, 1.0], 12)),
            list(m.utils.data.WeightedRandomSampler([0.1, 3.0, 2.0, 1.0], 3, replacement=False)),
            m.rand(2)]


def test_seeded_multinomial_is_torchs():
    # both of torch's paths: Exp(1) keys for no replacement (argmax / topk of p / q), and
    # normalised cumulative sums searched with one uniform double per draw for replacement
    for e, t in zip(_draws(ember), _draws(torch)):
        if isinstance(t, list):
            assert e == t
            continue
        assert tuple(e.shape) == tuple(t.shape) and str(e.dtype)[6:] == str(t.dtype)[6:]
        np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_multinomial_statistics():
    ember.manual_seed(1)
    p = np.array([0.1, 0.2, 0.7])
    counts = np.bincount(ember.multinomial(ember.tensor(p), 20000, True).numpy(), minlength=3)
    np.testing.assert_allclose(counts / 20000, p, atol=0.015)
    rows = ember.multinomial(ember.tensor(W), 50).numpy()
    assert all(sorted(r) == list(range(50)) for r in rows)  # a permutation per row
    assert not np.isin(ember.multinomial(ember.tensor(W[1]), 500, True).numpy(),
                       np.arange(0, 50, 3)).any()


@pytest.mark.parametrize("fn,match", [
    (lambda m: m.multinomial(m.tensor([1, 2]), 1), "only supports floating-point dtypes"),
    (lambda m: m.multinomial(m.ones(3), 0), "cannot sample n_sample <= 0 samples"),
    (lambda m: m.multinomial(m.ones(3), 4), "without replacement"),
    (lambda m: m.multinomial(m.ones(2, 2, 2), 1), "prob_dist must be 1 or 2 dim"),
    (lambda m: m.multinomial(m.tensor([-1.0, 2.0]), 1), "contains either `inf`, `nan`"),
    (lambda m: m.multinomial(m.tensor([1.0, float("nan")]), 1), "contains either `inf`, `nan`"),
    (lambda m: m.multinomial(m.zeros(2, 3), 1), "sum of probabilities <= 0"),
    (lambda m: m.multinomial(m.tensor([-1.0, 2.0]), 3, True), "probability entry < 0"),
    (lambda m: m.multinomial(m.tensor([1.0, float("inf")]), 2, True), "infinity or NaN"),
    (lambda m: m.multinomial(m.zeros(3), 3, True), "sum of probabilities <= 0"),
])
def test_multinomial_errors_match_torch(fn, match):
    check_error(fn, match=match)


def test_weighted_sampler_takes_tensor_weights():
    s = eud.WeightedRandomSampler(ember.tensor([1.0, 2.0]), 5)
    assert len(s) == 5 and all(i in (0, 1) for i in s)
