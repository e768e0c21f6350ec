"""nn.utils.parametrize and parametrizations (weight_norm, spectral_norm, orthogonal) vs torch:
seeded values, forward outputs, gradients of the originals, state_dict keys, class swapping,
right_inverse, caching, removal and the errors."""

import copy
import pickle

import numpy as np
import pytest
import torch
from oracle import arr, assert_same, check, positive, same

import ember

R = np.random.default_rng(17)


def _pair(build, seed=0):
    """``build(lib)`` in ember and in torch after the same seed."""
    ember.manual_seed(seed)
    e = build(ember)
    torch.manual_seed(seed)
    t = build(torch)
    return e, t


def _same_state(e, t, atol=1e-5):
    es, ts = e.state_dict(), t.state_dict()
    assert list(es) == list(ts)
    for k in ts:
        assert_same(es[k], ts[k], atol=atol, what=k)


def _grads_match(e, t, x, atol=1e-4):
    """Forward on the same input, backward with the same random upstream gradient; the
    outputs and every parameter's gradient (the originals) agree."""
    ex, tx = ember.tensor(x), torch.tensor(x)
    eo, to = e(ex), t(tx)
    assert_same(eo, to, atol=atol)
    u = R.standard_normal(tuple(to.shape)).astype(np.float32)
    eo.backward(ember.tensor(u))
    to.backward(torch.tensor(u))
    en, tn = dict(e.named_parameters()), dict(t.named_parameters())
    assert list(en) == list(tn)
    for k in tn:
        assert_same(en[k].grad, tn[k].grad, atol=atol, rtol=1e-3, what=f"grad of {k}")


# --- weight_norm ------------------------------------------------------------------------------

WN_CASES = [
    (lambda lib: lib.nn.Linear(5, 4), 0, (3, 5)),
    (lambda lib: lib.nn.Linear(5, 4), 1, (3, 5)),
    (lambda lib: lib.nn.Linear(5, 4), None, (3, 5)),
    (lambda lib: lib.nn.Conv2d(2, 3, 3), 0, (2, 2, 5, 5)),
    (lambda lib: lib.nn.Conv2d(2, 3, 3), 1, (2, 2, 5, 5)),
    (lambda lib: lib.nn.Conv2d(2, 3, 3), 2, (2, 2, 5, 5)),
    (lambda lib: lib.nn.ConvTranspose1d(3, 2, 3), -1, (2, 3, 6)),
]


@pytest.mark.parametrize("make,dim,xshape", WN_CASES)
def test_weight_norm_matches_torch(make, dim, xshape):
    e, t = _pair(lambda lib: lib.nn.utils.parametrizations.weight_norm(make(lib), dim=dim))
    _same_state(e, t)
    assert type(e).__name__ == type(t).__name__
    assert type(e.weight.grad_fn).__name__ == type(t.weight.grad_fn).__name__
    assert_same(e.weight, t.weight)
    _grads_match(e, t, R.standard_normal(xshape).astype(np.float32))


@pytest.mark.parametrize("vshape,gshape,dim", [
    ((4, 3), (4, 1), 0), ((4, 3), (1, 3), 1), ((2, 3, 4), (1, 3, 1), 1), ((5,), (5,), 0),
    ((4, 3), (), -1),
])
def test_weight_norm_op(vshape, gshape, dim):
    """torch._weight_norm and norm_except_dim: values, gradients, saved tensors."""
    check(lambda lib, v, g: lib._weight_norm(v, g, dim), arr(*vshape), positive(*gshape))
    check(lambda lib, v: lib.norm_except_dim(v, 2, dim), arr(*vshape))
    check(lambda lib, v: lib.norm_except_dim(v, 3, dim), arr(*vshape))


def test_weight_norm_repr_and_keys():
    same(lambda lib: lib.nn.utils.parametrizations.weight_norm(lib.nn.Linear(3, 4)))
    same(lambda lib: lib.nn.utils.parametrizations.weight_norm(lib.nn.Linear(3, 4)).parametrizations
         .weight.original0.shape)


def test_weight_norm_double_backward():
    def fn(lib):
        lib.manual_seed(0)
        m = lib.nn.utils.parametrizations.weight_norm(lib.nn.Linear(3, 2).double())
        x = lib.tensor(R.standard_normal((4, 3)))
        y = m(x).pow(2).sum()
        g, v = m.parametrizations.weight.original0, m.parametrizations.weight.original1
        gg = lib.autograd.grad(y, (g, v), create_graph=True)
        return lib.autograd.grad(gg[0].sum() + (gg[1] ** 2).sum(), (g, v))

    state = R.bit_generator.state
    e = fn(ember)
    R.bit_generator.state = state
    t = fn(torch)
    for a, b in zip(e, t):
        assert_same(a, b, atol=1e-8)


def test_weight_norm_loads_legacy_checkpoint():
    """A state dict of the older nn.utils.weight_norm (weight_g, weight_v) loads into the
    parametrized module."""
    torch.manual_seed(3)
    with pytest.warns(FutureWarning):
        old = torch.nn.utils.weight_norm(torch.nn.Linear(3, 4))
    sd = {k: ember.tensor(v.detach().numpy()) for k, v in old.state_dict().items()}
    e = ember.nn.utils.parametrizations.weight_norm(ember.nn.Linear(3, 4))
    e.load_state_dict(sd)
    np.testing.assert_allclose(e.weight.detach().numpy(), old.weight.detach().numpy(), rtol=1e-5)


# --- spectral_norm ----------------------------------------------------------------------------

SN_CASES = [
    (lambda lib: lib.nn.Linear(5, 4), {}, (3, 5)),
    (lambda lib: lib.nn.Linear(5, 4), {"n_power_iterations": 3}, (3, 5)),
    (lambda lib: lib.nn.Conv2d(2, 3, 3), {}, (2, 2, 5, 5)),
    (lambda lib: lib.nn.Conv2d(2, 3, 3), {"dim": 1}, (2, 2, 5, 5)),
    (lambda lib: lib.nn.ConvTranspose2d(3, 2, 3), {}, (2, 3, 4, 4)),
]


@pytest.mark.parametrize("make,kw,xshape", SN_CASES)
def test_spectral_norm_matches_torch(make, kw, xshape):
    e, t = _pair(lambda lib: lib.nn.utils.parametrizations.spectral_norm(make(lib), **kw))
    _same_state(e, t)  # u, v after torch's 15 initial power iterations, from its seeded draws
    x = R.standard_normal(xshape).astype(np.float32)
    for _ in range(2):  # each training-mode access runs power iterations in place
        _grads_match(e, t, x)
        _same_state(e, t)
    e.eval()
    t.eval()
    assert_same(e.weight, t.weight)
    _same_state(e, t)
    assert type(e.weight.grad_fn).__name__ == type(t.weight.grad_fn).__name__


def test_spectral_norm_of_a_vector_and_errors():
    e, t = _pair(lambda lib: lib.nn.utils.parametrizations.spectral_norm(
        lib.nn.Linear(3, 4), name="bias"))
    assert_same(e.bias, t.bias)
    same(lambda lib: lib.nn.utils.parametrizations.spectral_norm(lib.nn.Linear(3, 4), dim=2))
    same(lambda lib: lib.nn.utils.parametrizations.spectral_norm(
        lib.nn.Linear(3, 4), n_power_iterations=0))
    same(lambda lib: lib.nn.utils.parametrizations.spectral_norm(lib.nn.ReLU()))


# --- orthogonal -------------------------------------------------------------------------------

ORTH_CASES = [
    ((4, 4), None, True), ((5, 3), None, True), ((3, 5), None, True),
    ((4, 4), "cayley", True), ((5, 3), "cayley", True), ((5, 3), "matrix_exp", True),
    ((3, 5), "householder", True), ((4, 4), "householder", False), ((5, 3), "householder", False),
    ((3, 5), "householder", False),
]


@pytest.mark.parametrize("shape,omap,triv", ORTH_CASES)
def test_orthogonal_matches_torch(shape, omap, triv):
    def build(lib):
        m = lib.nn.Linear(shape[1], shape[0]).double()
        return lib.nn.utils.parametrizations.orthogonal(m, orthogonal_map=omap,
                                                       use_trivialization=triv)

    e, t = _pair(build)
    _same_state(e, t, atol=1e-10)
    w = e.weight.detach().numpy()
    gram = w.T @ w if shape[0] >= shape[1] else w @ w.T
    np.testing.assert_allclose(gram, np.eye(min(shape)), atol=1e-10)
    assert_same(e.weight, t.weight, atol=1e-10)
    # gradients with respect to a generic point, not only the identity at registration
    noise = R.standard_normal(shape) * 0.3
    with ember.no_grad(), torch.no_grad():
        e.parametrizations.weight.original.add_(ember.tensor(noise))
        t.parametrizations.weight.original.add_(torch.tensor(noise))
    x = R.standard_normal((2, shape[1]))
    ex, tx = ember.tensor(x), torch.tensor(x)
    eo, to = e(ex), t(tx)
    assert_same(eo, to, atol=1e-9)
    u = R.standard_normal(tuple(to.shape))
    eo.backward(ember.tensor(u))
    to.backward(torch.tensor(u))
    assert_same(e.parametrizations.weight.original.grad, t.parametrizations.weight.original.grad,
                atol=1e-9)


def test_orthogonal_assignment_and_errors():
    e, t = _pair(lambda lib: lib.nn.utils.parametrizations.orthogonal(lib.nn.Linear(4, 4)))
    q = np.linalg.qr(R.standard_normal((4, 4)))[0].astype(np.float32)
    e.weight = ember.tensor(q)
    t.weight = torch.tensor(q)
    assert_same(e.weight, t.weight)
    np.testing.assert_allclose(e.weight.detach().numpy(), q, atol=1e-5)
    same(lambda lib: lib.nn.utils.parametrizations.orthogonal(lib.nn.Linear(3, 3),
                                                             orthogonal_map="qr"))
    same(lambda lib: lib.nn.utils.parametrizations.orthogonal(lib.nn.Linear(3, 3), "bias"))
    same(lambda lib: lib.nn.utils.parametrizations.orthogonal(lib.nn.Linear(3, 3), "foo"))

    def assign_without_trivialization(lib):
        m = lib.nn.utils.parametrizations.orthogonal(lib.nn.Linear(3, 3),
                                                    use_trivialization=False)
        m.weight = lib.eye(3)

    same(assign_without_trivialization)


def test_matrix_exp_gradgrad():
    from ember.nn.utils._orthogonal import _MatrixExp

    a = R.standard_normal((2, 3, 3))
    ea = ember.tensor(a, requires_grad=True)
    ta = torch.tensor(a, requires_grad=True)
    assert_same(_MatrixExp.apply(ea), torch.linalg.matrix_exp(ta), atol=1e-12)
    assert type(_MatrixExp.apply(ea).grad_fn).__name__ == \
        type(torch.linalg.matrix_exp(ta).grad_fn).__name__
    u = R.standard_normal((2, 3, 3))
    eg = ember.autograd.grad(_MatrixExp.apply(ea), ea, ember.tensor(u), create_graph=True)[0]
    tg = torch.autograd.grad(torch.linalg.matrix_exp(ta), ta, torch.tensor(u),
                             create_graph=True)[0]
    assert_same(eg, tg, atol=1e-10)
    assert_same(ember.autograd.grad(eg.sin().sum(), ea)[0],
                torch.autograd.grad(tg.sin().sum(), ta)[0], atol=1e-9)
    big = R.standard_normal((3, 3)) * 20  # scaled and squared
    assert_same(_MatrixExp.apply(ember.tensor(big)), torch.linalg.matrix_exp(torch.tensor(big)),
                atol=1e-6, rtol=1e-9)


# --- register_parametrization -----------------------------------------------------------------


class _Symmetric:
    @staticmethod
    def make(lib):
        class Symmetric(lib.nn.Module):
            def forward(self, X):  # noqa: N803
                return X.triu() + X.triu(1).mT

        return Symmetric()


class _Skew:
    @staticmethod
    def make(lib):
        class Skew(lib.nn.Module):
            def forward(self, X):  # noqa: N803
                A = X.triu(1)  # noqa: N806
                return A - A.mT

            def right_inverse(self, A):  # noqa: N803
                return A.triu(1)

        return Skew()


class _Split:
    @staticmethod
    def make(lib):
        class Split(lib.nn.Module):
            def forward(self, a, b):
                return a + b

            def right_inverse(self, w):
                return w * 0.25, w * 0.75

        return Split()


def _registered(lib, param=_Symmetric, name="weight", unsafe=False):
    m = lib.nn.Linear(3, 3)
    lib.nn.utils.parametrize.register_parametrization(m, name, param.make(lib), unsafe=unsafe)
    return m


def test_register_parametrization_like_torch():
    e, t = _pair(_registered)
    _same_state(e, t)
    assert_same(e.weight, t.weight)
    _grads_match(e, t, R.standard_normal((2, 3)).astype(np.float32))
    for lib, m in ((ember, e), (torch, t)):
        P = lib.nn.utils.parametrize  # noqa: N806
        assert P.is_parametrized(m) and P.is_parametrized(m, "weight")
        assert not P.is_parametrized(m, "bias")
        assert P.type_before_parametrizations(m) is lib.nn.Linear
        assert isinstance(m, lib.nn.Linear)
    same(lambda lib: _registered(lib))
    same(lambda lib: sorted(n for n, _ in _registered(lib).named_parameters()))


def test_chained_and_buffer_parametrizations():
    def build(lib):
        m = _registered(lib, _Skew)
        lib.nn.utils.parametrize.register_parametrization(m, "weight", _Symmetric.make(lib))
        m.register_buffer("scale", lib.ones(3) * 2)
        lib.nn.utils.parametrize.register_parametrization(m, "scale", _Split.make(lib))
        return m

    e, t = _pair(build)
    _same_state(e, t)
    assert_same(e.weight, t.weight)
    assert_same(e.scale, t.scale)
    same(lambda lib: build(lib))


def test_assignment_goes_through_right_inverse():
    e, t = _pair(lambda lib: _registered(lib, _Skew))
    x = R.standard_normal((3, 3)).astype(np.float32)
    p_e = e.parametrizations.weight.original
    e.weight = ember.tensor(x)
    t.weight = torch.tensor(x)
    assert e.parametrizations.weight.original is p_e  # the same Parameter (optimizers hold it)
    assert_same(e.parametrizations.weight.original, t.parametrizations.weight.original)
    assert_same(e.weight, t.weight)
    same(lambda lib: setattr(_registered(lib), "weight", lib.zeros(3, 3)))  # no right_inverse


def test_multi_tensor_originals():
    e, t = _pair(lambda lib: _registered(lib, _Split))
    _same_state(e, t)
    assert_same(e.weight, t.weight)
    _grads_match(e, t, R.standard_normal((2, 3)).astype(np.float32))
    w = R.standard_normal((3, 3)).astype(np.float32)
    e.weight = ember.tensor(w)
    t.weight = torch.tensor(w)
    _same_state(e, t)


def test_cached():
    m = _registered(ember, _Symmetric)
    calls = []
    m.parametrizations.weight[0].register_forward_hook(lambda *a: calls.append(1))
    with ember.nn.utils.parametrize.cached():
        w1, w2 = m.weight, m.weight
        with ember.nn.utils.parametrize.cached():
            w3 = m.weight
    assert w1 is w2 is w3 and len(calls) == 1
    assert m.weight is not m.weight and len(calls) == 3


@pytest.mark.parametrize("leave", [True, False])
@pytest.mark.parametrize("param", [_Symmetric, _Skew])
def test_remove_parametrizations(leave, param):
    def build(lib):
        m = _registered(lib, param)
        p = m.parametrizations.weight.original
        lib.nn.utils.parametrize.remove_parametrizations(m, "weight", leave_parametrized=leave)
        assert m.weight is p  # the original Parameter object stays
        return m

    e, t = _pair(build)
    assert type(e) is ember.nn.Linear and type(t) is torch.nn.Linear
    _same_state(e, t)
    same(build)


def test_remove_multi_tensor_parametrization():
    def build(lib, leave=True):
        m = _registered(lib, _Split)
        return lib.nn.utils.parametrize.remove_parametrizations(m, "weight", leave)

    e, t = _pair(build)
    _same_state(e, t)
    assert isinstance(e.weight, ember.nn.Parameter)
    same(lambda lib: build(lib, False))


def test_parametrize_errors():
    class Bad:
        @staticmethod
        def make(lib):
            class Grow(lib.nn.Module):
                def forward(self, x):
                    return lib.cat([x, x])

            return Grow()

    class Cast:
        @staticmethod
        def make(lib):
            class ToDouble(lib.nn.Module):
                def forward(self, x):
                    return x.double()

            return ToDouble()

    same(lambda lib: _registered(lib, Bad), match="may not change the shape")
    same(lambda lib: _registered(lib, Cast), match="may not change the dtype")
    same(lambda lib: _registered(lib, Bad, unsafe=True).weight.shape)
    same(lambda lib: _registered(lib, name="foo"), match="does not have a parameter")
    same(lambda lib: lib.nn.utils.parametrize.remove_parametrizations(lib.nn.Linear(2, 2),
                                                                     "weight"))
    same(lambda lib: lib.nn.utils.parametrize.ParametrizationList([], lib.ones(2)))

    def append_bad(lib):
        m = _registered(lib)
        lib.nn.utils.parametrize.register_parametrization(m, "weight", Bad.make(lib))

    same(append_bad, match="may not change the shape")


def test_pickle_deepcopy_and_transfer():
    m = _registered(ember, _Skew)
    with pytest.raises(RuntimeError, match="only supported through state_dict"):
        pickle.dumps(m)
    c = copy.deepcopy(m)
    assert type(c).__name__ == "ParametrizedLinear"
    assert c.parametrizations.weight.original is not m.parametrizations.weight.original
    np.testing.assert_array_equal(c.weight.detach().numpy(), m.weight.detach().numpy())
    e, t = _pair(lambda lib: lib.nn.utils.parametrize.transfer_parametrizations_and_params(
        _registered(lib, _Skew), lib.nn.Linear(3, 3)))
    _same_state(e, t)
    assert_same(e.weight, t.weight)


def test_training_a_parametrized_model():
    """SGD on a weight-normed, spectral-normed model: the same losses and states as torch."""
    def build(lib):
        P = lib.nn.utils.parametrizations  # noqa: N806
        net = lib.nn.Sequential(P.weight_norm(lib.nn.Linear(4, 8)), lib.nn.Tanh(),
                                P.spectral_norm(lib.nn.Linear(8, 2)))
        return net, lib.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)

    (en, eopt), (tn, topt) = _pair(build)
    x = R.standard_normal((6, 4)).astype(np.float32)
    y = R.standard_normal((6, 2)).astype(np.float32)
    for _ in range(5):
        for lib, net, opt in ((ember, en, eopt), (torch, tn, topt)):
            opt.zero_grad()
            loss = ((net(lib.tensor(x)) - lib.tensor(y)) ** 2).mean()
            loss.backward()
            opt.step()
    _same_state(en, tn, atol=1e-5)
