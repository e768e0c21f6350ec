"""nn.utils vs torch: clip_grad_norm_ (all norm types), clip_grad_value_, vector conversion."""

import numpy as np
import pytest
import torch

import ember

R = np.random.default_rng(4)


def _params(lib, grads):
    ps = []
    for g in grads:
        p = lib.nn.Parameter(lib.zeros(*g.shape))
        p.grad = lib.tensor(g.copy())
        ps.append(p)
    return ps


GRADS = [R.standard_normal((3, 4)).astype(np.float32) * 3,
         R.standard_normal(5).astype(np.float32)]


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, float("inf"), "inf", 0.5])
@pytest.mark.parametrize("max_norm", [0.5, 1e4])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    ep, tp = _params(ember, GRADS), _params(torch, GRADS)
    en = ember.nn.utils.clip_grad_norm_(ep, max_norm, norm_type=norm_type)
    tn = torch.nn.utils.clip_grad_norm_(tp, max_norm, norm_type=norm_type)
    assert isinstance(en, ember.Tensor) and en.dtype == ember.float32 and en.ndim == 0
    np.testing.assert_allclose(en.item(), tn.item(), rtol=1e-5)
    for e, t in zip(ep, tp):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_clip_grad_norm_edge_cases():
    p = ember.nn.Parameter(ember.ones(3))
    assert ember.nn.utils.clip_grad_norm_(p, 1.0).item() == 0.0  # no grads
    p.grad = ember.tensor([float("nan"), 1.0, 2.0])
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients"):
        ember.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    q = ember.nn.Parameter(ember.ones(2))
    q.grad = ember.tensor([3.0, 4.0])
    n = ember.nn.utils.clip_grad_norm_(iter([q]), 1.0, foreach=True)
    assert n.item() == pytest.approx(5.0)
    np.testing.assert_allclose(q.grad.numpy(), [0.6, 0.8], rtol=1e-5)
    with pytest.warns(FutureWarning):
        ember.nn.utils.clip_grad_norm(q, 1.0)


def test_clip_grad_value():
    ep, tp = _params(ember, GRADS), _params(torch, GRADS)
    ember.nn.utils.clip_grad_value_(ep, 0.7)
    torch.nn.utils.clip_grad_value_(tp, 0.7)
    for e, t in zip(ep, tp):
        np.testing.assert_array_equal(e.grad.numpy(), t.grad.numpy())


def test_clip_in_a_training_step():
    lin = ember.nn.Linear(4, 3)
    (lin(ember.randn(8, 4)) * 100).sum().backward()
    total = ember.nn.utils.clip_grad_norm_(lin.parameters(), max_norm=1.0)
    assert total.item() > 1.0
    after = np.sqrt(sum((p.grad.numpy().astype(np.float64) ** 2).sum()
                        for p in lin.parameters()))
    assert after == pytest.approx(1.0, rel=1e-4)


def test_parameters_to_vector_and_back():
    def run(lib):
        m = lib.nn.Linear(3, 2)
        with lib.no_grad():
            m.weight.copy_(lib.tensor(np.arange(6, dtype=np.float32).reshape(2, 3)))
            m.bias.copy_(lib.tensor([7.0, 8.0]))
        v = lib.nn.utils.parameters_to_vector(m.parameters())
        name = v.grad_fn.name()
        lib.nn.utils.vector_to_parameters(v * 2, m.parameters())
        return v.detach().numpy().tolist(), name, m.weight.detach().numpy().tolist(), \
            type(m.weight).__name__
    assert run(ember) == run(torch)
    with pytest.raises(TypeError, match="expected torch.Tensor"):
        ember.nn.utils.vector_to_parameters([1.0], [])
