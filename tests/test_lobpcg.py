"""ember.lobpcg vs numpy.linalg.eigh and torch.lobpcg: eigenvalues within a bound derived from
the residual tolerance (iterative solvers agree to tol, not bit for bit), residuals and
B-orthonormality of the eigenvectors, the generalized problem, start blocks, preconditioning,
batches, the tolerance and iteration limits, the tracker, torch's errors, and gradients vs
torch and float64 finite differences (of gauge-invariant functions: eigenvalues, X X^T)."""

import numpy as np
import oracle
import pytest
import torch
from oracle import check_error, fd_check, gradgrad_check

import ember

_RNG = oracle.RNG  # restarted for each test (conftest), so any test order draws the same


@pytest.fixture(autouse=True)
def _seed():
    """The random start blocks come from the global generators."""
    ember.manual_seed(0)
    torch.manual_seed(0)


def spd(m, batch=(), shift=0.1):
    """A random symmetric positive-definite matrix with eigenvalues spread over [0.1, ~4]."""
    g = _RNG.standard_normal((*batch, m, m))
    return g @ np.swapaxes(g, -1, -2) / m + shift * np.eye(m)


def rms(a):
    """The solver's scale of a matrix: its root-mean-square eigenvalue magnitude."""
    return np.linalg.norm(a, axis=(-2, -1)) / np.sqrt(a.shape[-1])


def wanted(a, b, k, largest):
    """The k wanted eigenvalues of the pencil (a, b), by a dense solver."""
    if b is not None:
        linv = np.linalg.inv(np.linalg.cholesky(b))
        a = linv @ a @ np.swapaxes(linv, -1, -2)
    ev = np.linalg.eigvalsh(a)
    return ev[..., ::-1][..., :k] if largest else ev[..., :k]


def eig_bound(a, b, e, tol, dtype):
    """How far a Ritz value that passed the test ``||r|| <= tol (||A|| + |e| ||B||) ||x||`` can
    be from an eigenvalue: ``||r||_{B^-1} / ||x||_B`` (Kahan), times 4 for the residual the
    solver updates rather than recomputes, plus rounding."""
    cond_b = 1.0 if b is None else np.linalg.cond(b)[..., None]
    scale = rms(a)[..., None] + np.abs(e) * (1.0 if b is None else rms(b)[..., None])
    rounding = 50 * np.finfo(dtype).eps * np.abs(np.linalg.eigvalsh(a)).max()
    return 4 * tol * scale * cond_b + rounding


def default_tol(dtype):
    return float(np.finfo(dtype).eps) ** 0.5


def solve(lib, a, b=None, **kw):
    t = None if b is None else lib.tensor(b)
    return lib.lobpcg(lib.tensor(a), B=t, **kw)


def check_pairs(a, b, e, x, k, largest, tol, dtype):
    """Eigenvalues near a dense solver's, B-orthonormal eigenvectors with small residuals."""
    e, x = e.numpy().astype(np.float64), x.numpy().astype(np.float64)
    assert e.shape == (*a.shape[:-2], k) and x.shape == (*a.shape[:-1], k)
    bound = eig_bound(a, b, e, tol, dtype)
    np.testing.assert_array_less(np.abs(e - wanted(a, b, k, largest)), bound)
    bx = x if b is None else b @ x
    gram = np.swapaxes(x, -1, -2) @ bx
    np.testing.assert_allclose(gram, np.broadcast_to(np.eye(k), gram.shape),
                               atol=100 * np.finfo(dtype).eps * x.shape[-2])
    res = np.linalg.norm(a @ x - bx * e[..., None, :], axis=-2)
    scale = rms(a)[..., None] + np.abs(e) * (1.0 if b is None else rms(b)[..., None])
    np.testing.assert_array_less(res, 4 * tol * scale * np.linalg.norm(x, axis=-2)
                                 + 100 * np.finfo(dtype).eps * np.abs(e).max())


# Knyazev's "basic" (torch's too) can meet a singular Gram matrix in float32 when it hunts
# the smallest pairs (about one start block in 60 here, more for torch's): not tested there.
_CASES = [(method, largest, dtype) for method in ("ortho", "basic") for largest in (True, False)
          for dtype in ("float32", "float64")
          if not (method == "basic" and dtype == "float32" and not largest)]


@pytest.mark.parametrize("method,largest,dtype", _CASES)
def test_standard_problem_vs_eigh_and_torch(dtype, largest, method):
    a = spd(40).astype(dtype)
    e, x = solve(ember, a, k=3, largest=largest, method=method)
    assert e.dtype is getattr(ember, dtype) and x.dtype is getattr(ember, dtype)
    check_pairs(a, None, e, x, 3, largest, default_tol(dtype), dtype)
    # torch's "basic" can stop on a wrong pair (or fail its Cholesky): compare with "ortho"
    te, _ = solve(torch, a, k=3, largest=largest, method="ortho")
    bound = eig_bound(a, None, e.numpy(), default_tol(dtype), dtype)
    np.testing.assert_array_less(np.abs(e.numpy() - te.numpy()), 2 * bound)
    step = np.diff(e.numpy())  # torch's order: descending for the largest, else ascending
    assert (step < 0).all() if largest else (step > 0).all()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("largest", [True, False])
def test_generalized_problem(dtype, largest):
    a, b = spd(36).astype(dtype), (spd(36) + np.eye(36)).astype(dtype)
    e, x = solve(ember, a, b, k=4, largest=largest)
    check_pairs(a, b, e, x, 4, largest, default_tol(dtype), dtype)
    te, _ = solve(torch, a, b, k=4, largest=largest)
    bound = eig_bound(a, b, e.numpy(), default_tol(dtype), dtype)
    np.testing.assert_array_less(np.abs(e.numpy() - te.numpy()), 2 * bound)


@pytest.mark.parametrize("method", ["ortho", "basic"])
def test_start_block_wider_than_k(method):
    """With X the block has X's columns; k of them come back; the result depends on X only."""
    a = spd(30)
    x0 = _RNG.standard_normal((30, 5))
    e, x = ember.lobpcg(ember.tensor(a), k=2, X=ember.tensor(x0), method=method)
    check_pairs(a, None, e, x, 2, True, default_tol("float64"), "float64")
    again = ember.lobpcg(ember.tensor(a), k=2, X=ember.tensor(x0), method=method)
    np.testing.assert_array_equal(again[0].numpy(), e.numpy())
    te, tx = torch.lobpcg(torch.tensor(a), k=2, X=torch.tensor(x0), method=method)
    assert tuple(tx.shape) == tuple(x.shape)
    np.testing.assert_array_less(np.abs(e.numpy() - te.numpy()),
                                 2 * eig_bound(a, None, e.numpy(), default_tol("float64"),
                                               "float64"))
    # the same invariant subspace: projectors agree up to the residual tolerance
    pe, pt = x.numpy() @ x.numpy().T, tx.numpy() @ tx.numpy().T
    np.testing.assert_allclose(pe, pt, atol=1e-5)


def test_exact_eigenvectors_converge_at_once():
    """A start block of exact eigenvectors has zero residuals: one Rayleigh-Ritz step."""
    a = np.diag(np.arange(1.0, 31.0))
    steps = []
    e, x = ember.lobpcg(ember.tensor(a), X=ember.tensor(np.eye(30)[:, -3:]),
                        tracker=lambda s: steps.append(s.ivars["istep"]))
    assert steps == [1]
    np.testing.assert_array_equal(e.numpy(), [30.0, 29.0, 28.0])
    np.testing.assert_array_equal(np.abs(x.numpy()), np.eye(30)[:, [29, 28, 27]])


def test_partly_converged_start_block_soft_locks():
    """Converged columns drop out of the search (zero directions set aside) while the others
    go on; the indefinite spectrum puts the set-aside Ritz values' shift to the test."""
    d = np.linspace(-5.0, -1.0, 30)
    q, _ = np.linalg.qr(_RNG.standard_normal((30, 30)))
    a = q @ np.diag(d) @ q.T
    x0 = np.concatenate([q[:, -1:], _RNG.standard_normal((30, 2))], axis=1)
    for largest in (True, False):
        e, x = ember.lobpcg(ember.tensor(a), X=ember.tensor(x0), largest=largest)
        check_pairs(a, None, e, x, 3, largest, default_tol("float64"), "float64")


def steps_taken(lib, a, **kw):
    steps = []
    e, x = lib.lobpcg(lib.tensor(a), tracker=lambda s: steps.append(s.ivars["istep"]), **kw)
    return e, x, len(steps)


def test_preconditioner_speeds_up_convergence():
    """An approximate inverse as iK: the same eigenpairs in far fewer steps (torch 2.13 takes
    iK but does not use it; its results agree all the same)."""
    a = spd(60, shift=0.01)
    x0 = ember.tensor(_RNG.standard_normal((60, 3)))
    ik = ember.tensor(np.linalg.inv(a + 0.05 * np.eye(60)))
    plain = steps_taken(ember, a, X=x0, largest=False)
    pre = steps_taken(ember, a, X=x0, largest=False, iK=ik)
    assert pre[2] * 3 < plain[2]
    check_pairs(a, None, pre[0], pre[1], 3, False, default_tol("float64"), "float64")
    te, _ = torch.lobpcg(torch.tensor(a), X=torch.tensor(x0.numpy()), largest=False,
                         iK=torch.tensor(ik.numpy()))
    np.testing.assert_allclose(pre[0].numpy(), te.numpy(), rtol=1e-6)


@pytest.mark.parametrize("with_b", [False, True])
def test_batched(with_b):
    a = spd(30, batch=(2, 3))
    b = spd(30, batch=(2, 3)) + np.eye(30) if with_b else None
    e, x = solve(ember, a, b, k=2, largest=False)
    check_pairs(a, b, e, x, 2, False, default_tol("float64"), "float64")
    te, tx = solve(torch, a, b, k=2, largest=False)
    assert tuple(te.shape) == tuple(e.shape) and tuple(tx.shape) == tuple(x.shape)


def test_tolerance_controls_accuracy_and_steps():
    a = spd(50)
    x0 = ember.tensor(_RNG.standard_normal((50, 3)))
    truth = wanted(a, None, 3, True)
    runs = {}
    for tol in (1e-3, 1e-7, 1e-12):
        rerr = []
        steps = []

        def tracker(s, rerr=rerr, steps=steps):
            steps.append(s.ivars["istep"])
            rerr.append(s.tvars["rerr"].numpy().copy())
        e, x = ember.lobpcg(ember.tensor(a), X=x0, tol=tol, tracker=tracker)
        assert (rerr[-1] < tol).all() and (rerr[-2] >= tol).any()
        assert (np.abs(e.numpy() - truth) < eig_bound(a, None, e.numpy(), tol, "float64")).all()
        runs[tol] = (len(steps), np.abs(e.numpy() - truth).max())
    assert runs[1e-3][0] < runs[1e-7][0] < runs[1e-12][0]
    assert runs[1e-12][1] <= runs[1e-3][1]


def test_niter_and_force_stop():
    a = spd(40)
    x0 = ember.tensor(_RNG.standard_normal((40, 2)))
    for niter in (1, 2, 5):
        assert steps_taken(ember, a, X=x0, niter=niter)[2] == niter
    full = steps_taken(ember, a, X=x0)[2]
    assert steps_taken(ember, a, X=x0, niter=0)[2] == full  # 0 is the default, as in torch
    assert steps_taken(ember, a, X=x0, niter=-1)[2] == full

    def stop_at_3(s):
        s.bvars["force_stop"] = s.ivars["istep"] == 3
    e, _ = ember.lobpcg(ember.tensor(a), X=x0, tracker=stop_at_3)
    e5, _ = ember.lobpcg(ember.tensor(a), X=x0, niter=3)
    np.testing.assert_array_equal(e.numpy(), e5.numpy())


def test_tracker_sees_torchs_parameters_and_the_state():
    a = spd(30).astype("float32")
    seen = {}

    def grab(lib):
        def tracker(s):
            seen[lib.__name__] = ({**s.iparams}, {**s.fparams}, {**s.bparams})
            if lib is ember:
                x, e, r = s.X.numpy(), s.E.numpy(), s.R.numpy()
                np.testing.assert_allclose(r, a @ x - x * e, atol=1e-4)
                assert s.tvars["rerr"].shape == (2,) and s.ivars["converged_count"] <= 2
        return tracker
    for lib in (ember, torch):
        solve(lib, a, k=2, tracker=grab(lib))
    names = {"m", "n", "k", "niter", "ortho_i_max", "ortho_j_max", "tol", "ortho_tol",
             "ortho_tol_drop", "ortho_tol_replace", "largest", "ortho_use_drop"}
    for mine, theirs in zip(seen["ember"], seen["torch"]):
        assert {key: mine[key] for key in names & mine.keys()} == \
            {key: theirs[key] for key in names & mine.keys()}
    assert sum(len(p) for p in seen["ember"]) == len(names)


@pytest.mark.parametrize("params", [dict(ortho_bparams={"ortho_use_drop": True}),
                                    dict(ortho_iparams={"ortho_i_max": 1, "ortho_j_max": 1}),
                                    dict(ortho_fparams={"ortho_tol": 1e-14})])
def test_ortho_parameters(params):
    a = spd(40)
    e, x = ember.lobpcg(ember.tensor(a), k=3, largest=False, **params)
    check_pairs(a, None, e, x, 3, False, default_tol("float64"), "float64")


def test_repeated_eigenvalues():
    q, _ = np.linalg.qr(_RNG.standard_normal((45, 45)))
    d = np.repeat(np.arange(1.0, 16.0), 3)
    a = q @ np.diag(d) @ q.T
    for method in ("ortho", "basic"):
        e, x = ember.lobpcg(ember.tensor(a), k=4, n=6, method=method)
        check_pairs(a, None, e, x, 4, True, default_tol("float64"), "float64")


_A = spd(20)
_X = _RNG.standard_normal((20, 2))


@pytest.mark.parametrize("fn", [
    lambda m, a: m.lobpcg(a[:, :5]),  # not square
    lambda m, a: m.lobpcg(a, k=7),  # m < 3 n
    lambda m, a: m.lobpcg(a, k=2, n=7),
    lambda m, a: m.lobpcg(a, X=m.zeros(20, 7, dtype=m.float64)),
    lambda m, a: m.lobpcg(a, X=m.zeros(5, 2, dtype=m.float64)),  # X's shape
    lambda m, a: m.lobpcg(a, B=m.eye(5, dtype=m.float64)),  # B's shape
    lambda m, a: m.lobpcg(a, X=m.ones(20, 2)),  # X's dtype
    lambda m, a: m.lobpcg(a, B=m.eye(20)),  # B's dtype
    lambda m, a: m.lobpcg(a.to(m.bfloat16)),
    lambda m, a: m.lobpcg(a.half()),  # no default tol for float16
    lambda m, a: m.lobpcg(a, k=0),
    lambda m, a: m.lobpcg(a, X=m.zeros(20, 2, dtype=m.float64)),
    lambda m, a: m.lobpcg(a[0]),  # one dimension
    lambda m, a: m.lobpcg(a, k=1.5),
    lambda m, a: m.lobpcg(a.tolist()),
], ids=["square", "3n", "n", "X-cols", "X-shape", "B-shape", "X-dtype", "B-dtype", "bf16",
        "fp16", "k0", "X-zero", "1d", "k-float", "list"])
def test_errors_as_torch(fn):
    check_error(fn, _A)


@pytest.mark.parametrize("fn,phrase", [
    (lambda m, a: m.lobpcg(a, k=7), "is smaller than 3 x the number of requested eigenpairs "
                                    "(=7)"),
    (lambda m, a: m.lobpcg(a[:, :5]), "A must be square, got shape"),
    (lambda m, a: m.lobpcg(a, B=m.eye(5, dtype=m.float64)), "A and B must have same shape"),
    (lambda m, a: m.lobpcg(a, X=m.zeros(5, 2, dtype=m.float64)), "X shape mismatch"),
    (lambda m, a: m.lobpcg(a, X=m.ones(20, 2)), "expected m1 and m2 to have the same dtype"),
])
def test_error_phrases(fn, phrase):
    check_error(fn, _A, match=phrase)


def test_preconditioner_is_checked():
    """torch 2.13 ignores iK; ember uses it, so a wrong one is an error, not a NumPy one."""
    a = ember.tensor(_A)
    with pytest.raises(AssertionError, match="A and iK must have same shape"):
        ember.lobpcg(a, iK=ember.eye(5, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype"):
        ember.lobpcg(a, iK=ember.eye(20))


def test_empty_batch_and_falsy_largest_as_torch():
    for lib in (ember, torch):
        e, x = lib.lobpcg(lib.zeros(0, 20, 20, dtype=lib.float64), k=2)
        assert tuple(e.shape) == (0, 2) and tuple(x.shape) == (0, 20, 2)
    e, x = ember.lobpcg(ember.tensor(_A), k=2, largest=0)
    check_pairs(_A, None, e, x, 2, False, default_tol("float64"), "float64")


@pytest.mark.parametrize("method", ["ortho", "basic"])
def test_dependent_start_block_fails_its_cholesky_as_torch(method):
    messages = []
    for lib in (ember, torch):
        with pytest.raises(lib.linalg.LinAlgError) as info:
            lib.lobpcg(lib.tensor(_A), X=lib.ones(20, 2, dtype=lib.float64), method=method)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert "the leading minor of order 2 is not positive-definite" in messages[0]


def test_backward_with_b_raises_as_torch():
    def fn(m, a):
        e, _ = m.lobpcg(a.requires_grad_(), k=2, B=m.eye(20, dtype=m.float64) * 2)
        e.sum().backward()
    check_error(fn, _A, match="lobpcg.backward does not support backward with B != I yet.")


def _loss(e, x, gx, lib):
    """A gauge-invariant loss: random weights on the eigenvalues and on X X^T."""
    return (e * lib.tensor(gx[0])).sum() + ((x @ x.mT) * lib.tensor(gx[1])).sum()


def _eigh_pairs(a, k, largest):
    """The wanted pairs from torch.linalg.eigh: a dense reference with exact gradients."""
    w, v = torch.linalg.eigh(a)
    if largest:
        return w[..., -k:].flip(-1), v[..., -k:].flip(-1)
    return w[..., :k], v[..., :k]


def _grad(lib, a, pairs, gx):
    t = lib.tensor(a, requires_grad=True)
    e, x = pairs(t)
    _loss(e, x, gx, lib).backward()
    return t.grad.numpy(), e


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("batch", [(), (2,)])
def test_gradient_vs_eigh_and_torch(largest, batch):
    a = spd(18, batch=batch)
    x0 = _RNG.standard_normal((*batch, 18, 4))
    gx = (_RNG.standard_normal((*batch, 4)), _RNG.standard_normal((*batch, 18, 18)))
    ge, e = _grad(ember, a, lambda t: ember.lobpcg(t, X=ember.tensor(x0), tol=1e-12,
                                                   largest=largest), gx)
    assert type(e.grad_fn).__name__ == "LOBPCGAutogradFunctionBackward"
    assert type(e.grad_fn.next_functions[0][0]).__name__ == "DivBackward0"
    ref, _ = _grad(torch, a, lambda t: _eigh_pairs(t, 4, largest), gx)
    ref = (ref + np.swapaxes(ref, -1, -2)) / 2  # lobpcg's A is symmetrized, so is its grad
    # the gradient goes with 1 / gap: 1e-12 residuals give it to ~1e-9 here
    np.testing.assert_allclose(ge, ref, atol=1e-7 * np.abs(ref).max())
    np.testing.assert_allclose(ge, np.swapaxes(ge, -1, -2), atol=1e-12)
    # torch.lobpcg's own backward is less accurate (1e-5 of the largest entry seen)
    gt, _ = _grad(torch, a, lambda t: torch.lobpcg(t, X=torch.tensor(x0), tol=1e-12,
                                                   largest=largest), gx)
    np.testing.assert_allclose(ge, gt, atol=1e-3 * np.abs(ref).max())


@pytest.mark.parametrize("what", ["E", "X"])
def test_gradient_of_eigenvalues_only_and_of_k_less_than_n(what):
    a = spd(21)
    x0 = _RNG.standard_normal((21, 5))
    grads = []
    for lib, pairs in ((ember, lambda t: ember.lobpcg(t, k=3, X=ember.tensor(x0), tol=1e-12)),
                       (torch, lambda t: _eigh_pairs(t, 3, True))):
        t = lib.tensor(a, requires_grad=True)
        e, x = pairs(t)
        out = e.sum() if what == "E" else (x @ x.mT)[::2, 1::3].sum()
        out.backward()
        grads.append(t.grad.numpy())
    ref = (grads[1] + grads[1].T) / 2
    np.testing.assert_allclose(grads[0], ref, atol=1e-7 * np.abs(ref).max())


@pytest.mark.parametrize("largest", [True, False])
def test_gradient_finite_differences(largest):
    a = spd(12)
    x0 = _RNG.standard_normal((12, 3))

    def f(t):
        e, x = ember.lobpcg(t, X=ember.tensor(x0), tol=1e-13, largest=largest)
        return ember.cat([e, (x @ x.mT).flatten()])
    fd_check(f, a, eps=1e-5, atol=1e-5, rtol=1e-4)


def test_gradgrad_finite_differences():
    a = spd(9)
    x0 = _RNG.standard_normal((9, 2))

    def f(t):
        e, x = ember.lobpcg(t, X=ember.tensor(x0), tol=1e-13)
        return ember.cat([e, (x @ x.mT)[0]])
    gradgrad_check(f, a, eps=1e-5, atol=1e-4, rtol=1e-3)


def test_graph_only_when_grad_is_wanted():
    a = ember.tensor(spd(15), requires_grad=True)
    with ember.no_grad():
        e, x = ember.lobpcg(a)
    assert e.grad_fn is None and not x.requires_grad
    e, x = ember.lobpcg(a.detach())
    assert not e.requires_grad
    e, x = ember.lobpcg(a.detach(), B=ember.eye(15, dtype=ember.float64).requires_grad_())
    assert type(e.grad_fn).__name__ == "LOBPCGAutogradFunctionBackward"
    assert x.grad_fn is e.grad_fn


def test_random_start_block_uses_the_global_generator():
    a = ember.tensor(spd(30))
    ember.manual_seed(5)
    e1, _ = ember.lobpcg(a, k=2, niter=2)
    ember.manual_seed(5)
    e2, _ = ember.lobpcg(a, X=ember.randn(30, 2, dtype=ember.float64), niter=2)
    np.testing.assert_array_equal(e1.numpy(), e2.numpy())
