"""torch._standard_gamma / _sample_dirichlet and their reparameterisation gradients: ember
reproduces torch's CPU rejection sampler on the seeded generator (float32 bit for bit, float64
to rounding), leaves the generator where torch leaves it, and computes torch's gradients."""

import numpy as np
import pytest
import torch
from oracle import assert_same

import ember

R = np.random.default_rng(31)

ALPHAS = {
    "small": np.array([0.3, 1.0, 2.5, 0.05, 7.0, 0.0, 1e-3, 50.0]),
    "spread": R.uniform(0.01, 6.0, 5000),  # thousands of rejections and boosts
    "half": np.full(3000, 0.5),
    "large": R.uniform(20.0, 200.0, 1000),
    "2d": R.uniform(0.1, 3.0, (40, 7)),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", list(ALPHAS))
@pytest.mark.parametrize("before", [0, 1, 3])  # odd counts leave a cached normal behind
def test_standard_gamma_draws_match_torch(dtype, case, before):
    a = ALPHAS[case].astype(dtype)
    torch.manual_seed(5)
    torch.randn(before)
    t = torch._standard_gamma(torch.tensor(a))
    t_next = torch.randn(5)
    ember.manual_seed(5)
    ember.randn(before)
    e = ember._standard_gamma(ember.tensor(a))
    e_next = ember.randn(5)
    assert e.dtype == getattr(ember, dtype)
    if dtype == "float32":
        np.testing.assert_array_equal(e.numpy(), t.numpy())
    else:  # libm and NumPy may round log/cos differently in the last bit
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-13)
    np.testing.assert_array_equal(e_next.numpy(), t_next.numpy())


def test_nan_and_generator_argument():
    a = np.array([float("nan"), 2.0], dtype=np.float32)
    g_e = ember.Generator().manual_seed(3)
    g_t = torch.Generator().manual_seed(3)
    e = ember._standard_gamma(ember.tensor(a), generator=g_e)
    t = torch._standard_gamma(torch.tensor(a), generator=g_t)
    np.testing.assert_array_equal(e.numpy(), t.numpy())  # NaN -> the smallest normal, as torch
    np.testing.assert_array_equal(ember.rand(2, generator=g_e).numpy(),
                                  torch.rand(2, generator=g_t).numpy())


def test_standard_gamma_errors():
    with pytest.raises(NotImplementedError, match="gamma_cpu"):
        ember._standard_gamma(ember.tensor([1, 2]))
    with pytest.raises(TypeError):
        ember._standard_gamma([1.0])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_standard_gamma_gradient(dtype):
    a = R.uniform(0.02, 30.0, 2000).astype(dtype)  # every branch of the gradient formula
    ember.manual_seed(1)
    torch.manual_seed(1)
    ea, ta = ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    ex, tx = ember._standard_gamma(ea), torch._standard_gamma(ta)
    assert type(ex.grad_fn).__name__ == type(tx.grad_fn).__name__ == "StandardGammaBackward0"
    u = R.standard_normal(a.shape).astype(dtype)
    ex.backward(ember.tensor(u))
    tx.backward(torch.tensor(u))
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-12 if
                               dtype == "float64" else 1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sample_dirichlet_and_its_gradient(dtype):
    alpha = R.uniform(0.05, 12.0, (1500, 3)).astype(dtype)
    torch.manual_seed(2)
    t = torch._sample_dirichlet(torch.tensor(alpha))
    ember.manual_seed(2)
    e = ember._sample_dirichlet(ember.tensor(alpha))
    if dtype == "float32":
        np.testing.assert_array_equal(e.numpy(), t.numpy())
    else:
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-13)
    total = alpha.sum(-1, keepdims=True).repeat(3, -1)
    tg = torch._dirichlet_grad(t, torch.tensor(alpha), torch.tensor(total))
    eg = ember._dirichlet_grad(ember.tensor(t.numpy()), ember.tensor(alpha), ember.tensor(total))
    # torch's float32 series branches accumulate float32 rounding differently
    np.testing.assert_allclose(eg.numpy(), tg.numpy(),
                               rtol=1e-11 if dtype == "float64" else 1e-4, atol=1e-7)


def test_dirichlet_grad_shape_error():
    with pytest.raises(RuntimeError, match="same shape"):
        ember._dirichlet_grad(ember.ones(2), ember.ones(3), ember.ones(3))


def test_gamma_grad_helpers_match_torch():
    a = R.uniform(0.01, 40.0, 3000)
    x = R.uniform(0.001, 60.0, 3000)
    assert_same(ember._standard_gamma_grad(ember.tensor(a), ember.tensor(x)),
                torch._standard_gamma_grad(torch.tensor(a), torch.tensor(x)), atol=1e-10,
                rtol=1e-10)
