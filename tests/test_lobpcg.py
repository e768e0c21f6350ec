"""torch.lobpcg vs torch: seeded the same, the eigenpairs agree (eigenvectors up to sign) for
both methods, largest and smallest, a generalized problem, batches, a given start block;
gradients for a random upstream gradient (complete and partial eigenspace); errors."""

import numpy as np
import oracle
import pytest
import torch

import ember

_RNG = np.random.default_rng(5)


def spd(m, batch=()):
    a = oracle.arr(*batch, m, m, rng=_RNG, dtype="float64")
    return a @ np.swapaxes(a, -1, -2) + np.eye(m)


def _run(lib, a, seed=0, **kw):
    lib.manual_seed(seed)
    return lib.lobpcg(lib.tensor(a) if isinstance(a, np.ndarray) else a, **kw)


def _same_pairs(e, t, atol=1e-9):
    (E, X), (tE, tX) = e, t
    assert tuple(E.shape) == tuple(tE.shape) and tuple(X.shape) == tuple(tX.shape)
    assert str(E.dtype).split(".")[-1] == str(tE.dtype).split(".")[-1]
    np.testing.assert_allclose(E.detach().numpy(), tE.detach().numpy(), atol=atol, rtol=1e-7)
    x, tx = X.detach().numpy(), tX.detach().numpy()
    sign = np.sign((x * tx).sum(-2, keepdims=True))
    np.testing.assert_allclose(x * sign, tx, atol=atol * 100, rtol=1e-5)
    return sign


@pytest.mark.parametrize("kw", [{}, {"k": 3}, {"k": 2, "largest": False},
                                {"k": 2, "method": "basic"}, {"k": 3, "niter": 4},
                                {"k": 2, "n": 3}, {"k": 2, "tol": 1e-4},
                                {"k": 2, "ortho_bparams": {"ortho_use_drop": True}}])
def test_lobpcg_matches_torch(kw):
    a = spd(18)
    _same_pairs(_run(ember, a, **kw), _run(torch, a, **kw))


def test_generalized_batched_and_start_block():
    a, b = spd(15), spd(15)
    _same_pairs(_run(ember, a, k=2, B=ember.tensor(b)), _run(torch, a, k=2, B=torch.tensor(b)))
    ab = spd(12, (2,))
    _same_pairs(_run(ember, ab, k=2), _run(torch, ab, k=2))
    x0 = oracle.arr(15, 3, rng=_RNG, dtype="float64")
    _same_pairs(_run(ember, a, X=ember.tensor(x0)), _run(torch, a, X=torch.tensor(x0)))
    e = _run(ember, a.astype(np.float32), k=2)
    t = _run(torch, a.astype(np.float32), k=2)
    _same_pairs(e, t, atol=1e-3)


def test_tracker_sees_every_step_and_can_stop():
    a = spd(18)
    seen = {}
    for lib in (ember, torch):
        steps = []

        def tracker(worker, steps=steps):
            steps.append((worker.ivars["istep"], worker.ivars["converged_count"]))
            if worker.ivars["istep"] == 3:
                worker.bvars["force_stop"] = True

        E = _run(lib, a, k=2, tracker=tracker)[0]
        seen[lib.__name__] = steps, E.numpy()
    assert seen["ember"][0] == seen["torch"][0]
    np.testing.assert_allclose(seen["ember"][1], seen["torch"][1], atol=1e-9)


@pytest.mark.parametrize("k", [2, 4])
@pytest.mark.parametrize("largest", [True, False])
def test_lobpcg_gradients(k, largest):
    a = spd(12)
    ea = ember.tensor(a, requires_grad=True)
    ta = torch.tensor(a, requires_grad=True)
    e, t = _run(ember, ea, k=k, largest=largest), _run(torch, ta, k=k, largest=largest)
    assert type(e[0].grad_fn).__name__ == type(t[0].grad_fn).__name__
    sign = _same_pairs(e, t)
    ge, gx = _RNG.standard_normal(tuple(t[0].shape)), _RNG.standard_normal(tuple(t[1].shape))
    ((e[0] * ember.tensor(ge)).sum() + (e[1] * ember.tensor(gx * sign)).sum()).backward()
    ((t[0] * torch.tensor(ge)).sum() + (t[1] * torch.tensor(gx)).sum()).backward()
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), atol=1e-7, rtol=1e-6)


def test_eigenvalue_gradient_equals_eigh():
    """An independent check: the gradient of the top eigenvalues equals eigh's."""
    a = spd(12)
    x = ember.tensor(a, requires_grad=True)
    E, _ = _run(ember, x, k=3)
    g = _RNG.standard_normal(3)
    (E * ember.tensor(g)).sum().backward()
    y = ember.tensor(a, requires_grad=True)
    (ember.linalg.eigvalsh(y).flip(-1)[:3] * ember.tensor(g)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy(), atol=1e-7)


@pytest.mark.parametrize("fn", [
    lambda m: m.lobpcg(m.eye(5, dtype=m.float64), k=2),
    lambda m: m.lobpcg(m.ones(4, 5, dtype=m.float64)),
    lambda m: m.lobpcg(m.eye(9, dtype=m.float64), B=m.eye(8, dtype=m.float64)),
    lambda m: m.lobpcg(m.eye(9, dtype=m.float64), X=m.ones(8, 2, dtype=m.float64)),
    lambda m: m.lobpcg(m.eye(9, dtype=m.float64, requires_grad=True),
                       B=m.eye(9, dtype=m.float64) * 2)[0].sum().backward(),
])
def test_errors(fn):
    oracle.same(fn)
