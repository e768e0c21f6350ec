"""Factories (tensor, zeros, arange, linspace, ...) compared with torch: values, dtypes, errors."""


import numpy as np
import pytest
import torch
from oracle import same

import ember

TENSOR_DATA = [
    [1, 2, 3], [1, 2.5], [True, False], [True, 1], [], [[]], [[1, 2], [3, 4.5]], (1, 2),
    3, 2.5, True, -0.0, [[1], [2]], [[[1.5]]], range(4), [1, 2 ** 62],
    np.float64(1.5), np.float32(1.5), np.int32(3), np.array([1.5]), np.array(3, np.int32),
    np.array([1, 2], np.int8), np.array([True]), np.arange(6).reshape(2, 3),
]


@pytest.mark.parametrize("data", TENSOR_DATA, ids=lambda d: repr(d)[:30])
def test_tensor_infers_dtype_like_torch(data):
    same(lambda m: m.tensor(data))


def test_tensor_with_numpy_scalars_and_tensors_in_lists():
    same(lambda m: m.tensor([np.float64(1.5)]))
    same(lambda m: m.tensor([np.float32(1), 2.0]))
    same(lambda m: m.tensor([np.int32(1), 2]))
    same(lambda m: m.tensor([np.int32(1), np.int8(2)]))
    same(lambda m: m.tensor([np.float16(1), 2]))
    same(lambda m: m.tensor([m.tensor(1, dtype=m.int32), 2]))
    same(lambda m: m.tensor([m.tensor(1.5, dtype=m.float64), 2]))
    same(lambda m: m.tensor([m.tensor([1.5]), m.tensor([2.5])]))
    same(lambda m: m.tensor([np.array([1.5, 2]), np.array([1.0, 2])]))
    same(lambda m: m.tensor([m.tensor([1.0, 2.0]), m.tensor([3.0, 4.0])]))


@pytest.mark.parametrize("data", [[[1, 2], [3]], [[1, 2], [3, 4, 5]], [[1, 2], 3], [1, [2, 3]],
                                  "a", [1, "a"], None, [1, None], [1, 2 ** 63],
                                  (x for x in range(3)), np.array(["a"])])
def test_tensor_errors(data):
    same(lambda m: m.tensor(data))


def test_tensor_with_dtype_casts_like_torch():
    same(lambda m: m.tensor([1.5, -2.7], dtype=m.int32))
    same(lambda m: m.tensor(1.5, dtype=m.int32))
    same(lambda m: m.tensor(3, dtype=m.float64))
    same(lambda m: m.tensor([[1, 2], [3, 4]], dtype=m.float16))
    same(lambda m: m.tensor([1.5, 0.0], dtype=m.bool))
    same(lambda m: m.tensor(np.array([1.5]), dtype=m.int64))
    same(lambda m: m.tensor([-1], dtype=m.uint8))
    same(lambda m: m.tensor([1, 2], dtype=float))
    same(lambda m: m.tensor([1, 2], dtype=int))


def test_tensor_of_tensor_copies_detaches_and_warns():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match="To copy construct from a tensor"):
        y = ember.tensor(x)
    assert not y.requires_grad and y.is_leaf
    y[0] = 5.0
    assert x[0].item() == 1.0


def test_requires_grad_keyword():
    same(lambda m: m.tensor([1.0, 2.0], requires_grad=True))
    same(lambda m: m.tensor([1, 2], requires_grad=True), match="floating point")
    same(lambda m: m.zeros(2, dtype=m.int64, requires_grad=True), match="floating point")
    same(lambda m: m.arange(10, requires_grad=True))
    same(lambda m: m.ones(2, 2, requires_grad=True))
    same(lambda m: m.full((2,), 2.0, requires_grad=True))
    same(lambda m: m.linspace(0, 1, 3, requires_grad=True))
    same(lambda m: m.eye(2, requires_grad=True))


def test_from_numpy_and_as_tensor_share_memory():
    a = np.zeros(3, np.float32)
    t = ember.from_numpy(a)
    a[0] = 5
    assert t[0].item() == 5
    t[1] = 7
    assert a[1] == 7
    b = np.ones(2)
    assert ember.as_tensor(b).numpy() is b or np.shares_memory(ember.as_tensor(b).numpy(), b)
    assert not np.shares_memory(ember.as_tensor(b, dtype=ember.float32).numpy(), b)
    x = ember.ones(2)
    assert ember.as_tensor(x) is x
    same(lambda m: m.as_tensor([1, 2]))
    same(lambda m: m.as_tensor(np.array([1, 2]), dtype=m.float32))
    same(lambda m: m.from_numpy([1, 2]))
    same(lambda m: m.from_numpy(np.array(["a"])))


SIZES = [(2, 3), ((2, 3),), ([2, 3],), (torch.Size([2, 3]),), (0,), ((),), (np.int64(2),)]


@pytest.mark.parametrize("fn", ["zeros", "ones", "empty"])
@pytest.mark.parametrize("size", SIZES, ids=repr)
def test_size_forms(fn, size):
    def make(m):
        args = [m.Size(s) if isinstance(s, torch.Size) else s for s in size]
        t = getattr(m, fn)(*args)
        return t.shape, t.dtype

    same(make)


@pytest.mark.parametrize("args", [(2.0,), (-1,), (), ("a",), (2, 3.0), ((2, 3.0),)],
                         ids=repr)
@pytest.mark.parametrize("fn", ["zeros", "ones", "empty", "rand", "randn"])
def test_size_errors(fn, args):
    same(lambda m: getattr(m, fn)(*args))


def test_zeros_ones_full_values_and_dtypes():
    same(lambda m: m.zeros(2, 3, dtype=m.int32))
    same(lambda m: m.ones(size=(2, 2)))
    same(lambda m: m.zeros(2, dtype=m.bool))
    same(lambda m: m.full((2,), 3))
    same(lambda m: m.full((2,), True))
    same(lambda m: m.full((2,), 3.0))
    same(lambda m: m.full([2, 1], 3.0, dtype=m.int64))
    same(lambda m: m.full((2,), -1, dtype=m.uint8))
    same(lambda m: m.full(2, 3.0))
    same(lambda m: m.full((2,), m.tensor(1.5)))


def test_like_factories():
    same(lambda m: m.zeros_like(m.ones(2, 3, dtype=m.int32)))
    same(lambda m: m.ones_like(m.ones(2), dtype=m.float64))
    same(lambda m: m.zeros_like(m.ones(2), dtype=m.int32))
    same(lambda m: m.full_like(m.ones(2, dtype=m.int32), 2.7))
    same(lambda m: m.full_like(m.ones(2), 2, requires_grad=True))
    same(lambda m: m.empty_like(m.ones(2, 2)).shape)
    same(lambda m: m.zeros_like([1, 2]))
    same(lambda m: m.ones_like(m.ones(2, requires_grad=True)))


ARANGES = [(5,), (1, 4), (0, 10, 3), (1, 2.5, 0.5), (0, 1, 0.1), (-1.0, 1.0, 0.3),
           (0.0, 0.3, 0.1), (10, 0, -2), (0, 10, 2.5), (0.5, 3), (0, -1, -0.25)]


@pytest.mark.parametrize("args", ARANGES, ids=repr)
def test_arange_matches_torch(args):
    same(lambda m: m.arange(*args))
    same(lambda m: m.arange(*args, dtype=m.float64))
    same(lambda m: m.arange(*args, dtype=m.int64))


def test_arange_other_forms_and_errors():
    same(lambda m: m.arange(m.tensor(3)))
    same(lambda m: m.arange(end=3))
    same(lambda m: m.arange(start=1, end=4))
    same(lambda m: m.arange(np.int64(3)))
    same(lambda m: m.arange(3.0).dtype)
    same(lambda m: m.arange(0, 10, -1), match="inconsistent with step sign")
    same(lambda m: m.arange(10, 0, 1), match="inconsistent with step sign")
    same(lambda m: m.arange(0, 10, 0), match="step must be nonzero")
    same(lambda m: m.arange(float("inf")), match="unsupported range")
    assert ember.arange(0, 1, 0.1).shape == torch.arange(0, 1, 0.1).shape
    # torch's vectorised kernel rounds some float32 elements differently (by one ulp).
    np.testing.assert_allclose(ember.arange(0.0, 100.0, 0.7).numpy(),
                               torch.arange(0.0, 100.0, 0.7).numpy(), rtol=2e-7)


@pytest.mark.parametrize("args", [(0, 1, 5), (0, 10, 1), (0, 10, 0), (-3.5, 7.25, 11),
                                  (1, 0, 4), (0, 1, 100)], ids=repr)
def test_linspace_logspace(args):
    same(lambda m: m.linspace(*args))
    same(lambda m: m.linspace(*args, dtype=m.float64))
    same(lambda m: m.linspace(*args, dtype=m.int64))
    same(lambda m: m.logspace(*args))
    same(lambda m: m.logspace(*args, base=2))
    np.testing.assert_array_equal(ember.linspace(*args).numpy(), torch.linspace(*args).numpy())


def test_linspace_errors():
    same(lambda m: m.linspace(0, 10, -1), match="number of steps must be non-negative")
    same(lambda m: m.linspace(0, 1, 2.5))
    same(lambda m: m.linspace(m.tensor(0.0), 1, 3))


def test_eye():
    same(lambda m: m.eye(3))
    same(lambda m: m.eye(2, 3))
    same(lambda m: m.eye(2, dtype=m.int32))
    same(lambda m: m.eye(0))
    same(lambda m: m.eye(-1), match="n must be greater or equal to 0")
    same(lambda m: m.eye(2, -1), match="m must be greater or equal to 0")


def test_new_factories():
    same(lambda m: m.ones(2, dtype=m.int32).new_zeros(3))
    same(lambda m: m.ones(2, dtype=m.int32).new_ones((2, 2)))
    same(lambda m: m.ones(2, dtype=m.int32).new_full((2,), 7))
    same(lambda m: m.ones(2, dtype=m.int32).new_tensor([1.5]))
    same(lambda m: m.ones(2, dtype=m.int32).new_tensor([1.5], dtype=m.float32))
    same(lambda m: m.ones(2).new_empty(2).shape)
    same(lambda m: m.ones(2).new_zeros(2, requires_grad=True))
    same(lambda m: m.ones(2, dtype=m.float64).new_ones([1, 2]))


# --- random factories: shapes, dtypes, errors match torch; streams are ember's own ----------


def meta(t):
    """What a random result shows besides its numbers."""
    return tuple(t.shape), str(t.dtype).replace("torch.", "ember."), t.requires_grad, \
        type(t.grad_fn).__name__ if t.grad_fn is not None else None


def same_meta(fn):
    assert meta(fn(ember)) == meta(fn(torch))


RANDOM_CALLS = [
    lambda m: m.rand(2, 3), lambda m: m.rand((2, 3)), lambda m: m.rand(size=(4,)),
    lambda m: m.randn(2, dtype=m.float64), lambda m: m.randn(3, requires_grad=True),
    lambda m: m.rand(0), lambda m: m.randint(10, (3,)), lambda m: m.randint(3, 10, (2, 2)),
    lambda m: m.randint(3, 10, size=(3,)), lambda m: m.randint(10, (2,), dtype=m.float32),
    lambda m: m.randint(0, 5, (2,), dtype=m.int32), lambda m: m.randperm(5),
    lambda m: m.randperm(0), lambda m: m.randperm(4, dtype=m.float32),
    lambda m: m.rand_like(m.ones(2, dtype=m.float64)), lambda m: m.randn_like(m.ones(2, 3)),
    lambda m: m.randint_like(m.ones(2), 5), lambda m: m.randint_like(m.ones(2), 3, 5),
    lambda m: m.normal(m.zeros(3), m.ones(3)), lambda m: m.normal(0.0, m.ones(3)),
    lambda m: m.normal(m.zeros(3), 1.0), lambda m: m.normal(0.0, 1.0, size=(2, 3)),
    lambda m: m.normal(0.0, 1.0, (2, 3)), lambda m: m.normal(0, 1, (2,)),
    lambda m: m.normal(m.zeros(2, 3), m.ones(3)),
    lambda m: m.normal(m.zeros(3, dtype=m.float64), 1.0),
    lambda m: m.normal(m.zeros(3), m.ones(3, dtype=m.float64)),
    lambda m: m.normal(0.0, m.ones(3, dtype=m.float64)),
    lambda m: m.normal(m.zeros(3, requires_grad=True), 1.0),
    lambda m: m.normal(0.0, m.ones(3, requires_grad=True)),
    lambda m: m.normal(m.zeros(3, requires_grad=True), m.ones(3, requires_grad=True)),
    lambda m: m.normal(2.0, 3.0, (2,), dtype=m.float64, requires_grad=True),
    lambda m: m.bernoulli(m.full((3,), 0.5)), lambda m: m.bernoulli(m.full((3,), 0.5), 1.0),
    lambda m: m.bernoulli(m.full((3,), 0.5, requires_grad=True)),
    lambda m: m.full((2, 2), 0.3, dtype=m.float64).bernoulli(),
    lambda m: m.rand(2, 3, generator=m.Generator().manual_seed(0)),
    lambda m: m.ones(3).uniform_(-1, 1), lambda m: m.ones(3).normal_(0, 2),
    lambda m: m.ones(3).bernoulli_(0.5), lambda m: m.ones(3, dtype=m.int64).random_(0, 10),
    lambda m: m.randint(high=10, size=(3,)), lambda m: m.randint(low=2, high=10, size=(3,)),
    lambda m: m.randint(2, high=10, size=(3,)), lambda m: m.randint_like(m.ones(2), high=3),
    lambda m: m.randperm(n=3), lambda m: m.normal(mean=0.0, std=1.0, size=(2,)),
]


@pytest.mark.parametrize("k", range(len(RANDOM_CALLS)))
def test_random_factories_shapes_dtypes_grads(k):
    same_meta(RANDOM_CALLS[k])


RANDOM_ERRORS = [
    (lambda m: m.rand(2, dtype=m.int64), "not implemented for 'Long'"),
    (lambda m: m.randn(2, dtype=m.int64), "not implemented for 'Long'"),
    (lambda m: m.rand_like(m.ones(2, dtype=m.int64)), "not implemented for 'Long'"),
    (lambda m: m.randint(10, 3, (3,)), "random_ expects 'from' to be less than 'to'"),
    (lambda m: m.randint(10), None), (lambda m: m.randint(10, 3), "must be tuple of ints"),
    (lambda m: m.randperm(-1), "negative dimension"),
    (lambda m: m.normal(0.0, 1.0), None),
    (lambda m: m.normal(m.zeros(3), m.ones(2)), "must match the size"),
    (lambda m: m.normal(m.zeros(3), -1.0), "normal expects std >= 0.0"),
    (lambda m: m.normal(m.zeros(3), -m.ones(3)), "normal expects all elements of std >= 0.0"),
    (lambda m: m.normal(m.zeros(3, dtype=m.int64), 1.0), "not implemented for 'Long'"),
    (lambda m: m.bernoulli(m.full((3,), 1.5)), "Expected p_in >= 0 && p_in <= 1"),
    (lambda m: m.bernoulli(m.ones(3, dtype=m.int64)), "not implemented for 'Long'"),
    (lambda m: m.bernoulli(m.full((3,), 0.5), p=2.0), "bernoulli_ expects p to be in [0, 1]"),
    (lambda m: m.ones(2, requires_grad=True).uniform_(), "a leaf Variable that requires grad"),
    (lambda m: m.rand(2, generator=1), None),
]


@pytest.mark.parametrize("k", range(len(RANDOM_ERRORS)))
def test_random_errors(k):
    fn, match = RANDOM_ERRORS[k]
    same(fn, match)


def test_random_values_are_in_range_and_distributed():
    ember.manual_seed(0)
    u = ember.rand(20000).numpy()
    assert 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.01
    n = ember.randn(20000).numpy()
    assert abs(n.mean()) < 0.03 and abs(n.std() - 1) < 0.03
    r = ember.randint(3, 7, (5000,)).numpy()
    assert set(np.unique(r)) == {3, 4, 5, 6}
    assert sorted(ember.randperm(50).tolist()) == list(range(50))
    m = ember.normal(ember.full((10000,), 5.0), 2.0).numpy()
    assert abs(m.mean() - 5) < 0.1 and abs(m.std() - 2) < 0.1
    b = ember.bernoulli(ember.full((10000,), 0.25)).numpy()
    assert set(np.unique(b)) <= {0.0, 1.0} and abs(b.mean() - 0.25) < 0.02
    x = ember.empty(10000).uniform_(-2, 3).numpy()
    assert -2 <= x.min() and x.max() < 3


def test_sampled_parameters_get_zero_gradients_like_torch():
    for lib in (torch, ember):
        mean = lib.zeros(3, requires_grad=True)
        std = lib.ones(3, requires_grad=True)
        lib.normal(mean, std).sum().backward()
        assert mean.grad.tolist() == [0.0] * 3 and std.grad.tolist() == [0.0] * 3


SEEDED = [
    (lambda m: m.rand(5), True), (lambda m: m.rand(100, dtype=m.float64), True),
    (lambda m: m.randn(5), True), (lambda m: m.randn(40, dtype=m.float64), True),
    (lambda m: m.randn(3, 7), False), (lambda m: m.randn(1000), False),
    (lambda m: m.cat([m.randn(3), m.randn(3), m.randn(20, dtype=m.float64), m.randn(1)]), False),
    (lambda m: m.randint(0, 10, (20,)), True), (lambda m: m.randint(-5, 2 ** 40, (20,)), True),
    (lambda m: m.randint(3, (2, 3), dtype=m.int32), True),
    (lambda m: m.randperm(10), True), (lambda m: m.randperm(70000), True),
    (lambda m: m.normal(2.0, 3.0, (5,)), True), (lambda m: m.normal(2.0, 3.0, (50,)), False),
    (lambda m: m.normal(m.arange(5.0), 2.0), False),
    (lambda m: m.normal(1.0, m.arange(20.0)), False),
    (lambda m: m.normal(m.arange(5.0, dtype=m.float64), m.ones(5, dtype=m.float64)), True),
    (lambda m: m.rand(3, generator=m.Generator().manual_seed(5)), True),
    (lambda m: m.stack([m.rand(3), m.randn(2, 2).flatten()[:3], m.rand(3)]), True),
    (lambda m: m.randn_like(m.ones(2, 20, dtype=m.float64)), True),
    (lambda m: m.rand_like(m.ones(3)), True),
    (lambda m: m.bernoulli(m.full((40,), 0.3)), True),
    (lambda m: m.bernoulli(m.rand(5, 6, dtype=m.float64)), True),
]


@pytest.mark.parametrize("k", range(len(SEEDED)))
@pytest.mark.parametrize("seed", [0, 123, 2 ** 40 + 7])
def test_seeded_streams_are_torchs(k, seed):
    fn, exact = SEEDED[k]
    out = []
    for lib in (torch, ember):
        lib.manual_seed(seed)
        out.append(fn(lib).numpy())
    if exact:  # float64 and integer streams match bit for bit
        np.testing.assert_array_equal(out[1], out[0])
    else:  # float32 Box-Muller: torch's AVX2 kernel can differ in the last bits
        np.testing.assert_allclose(out[1], out[0], rtol=2e-6, atol=2e-6)


def test_seeded_prints_are_torchs():
    def show(m):
        m.manual_seed(0)
        return repr((m.randn(3), m.rand(2, 2), m.randint(0, 100, (4,)), m.randperm(6)))

    assert show(ember) == show(torch).replace("torch.", "ember.")


def test_default_generator_starts_unseeded_and_fresh_generators_do_not():
    assert ember.Generator().initial_seed() == torch.Generator().initial_seed()
    g1, g2 = ember.Generator(), torch.Generator()
    assert ember.rand(4, generator=g1).tolist() == torch.rand(4, generator=g2).tolist()


def test_manual_seed_repeats_and_generators_are_independent():
    ember.manual_seed(3)
    a = ember.randn(5)
    ember.manual_seed(3)
    assert ember.randn(5).tolist() == a.tolist()
    g1, g2 = ember.Generator().manual_seed(1), ember.Generator().manual_seed(1)
    assert ember.rand(4, generator=g1).tolist() == ember.rand(4, generator=g2).tolist()
    ember.manual_seed(3)
    ember.rand(3, generator=g1)  # drawing from g1 leaves the default stream alone
    assert ember.randn(5).tolist() == a.tolist()


def test_seed_api_matches_torch():
    for lib in (torch, ember):
        g = lib.Generator()
        assert g.initial_seed() == 67280421310721
        assert g.manual_seed(3) is g and g.initial_seed() == 3
        assert str(g.device) == "cpu"
        assert lib.manual_seed(5) is lib.default_generator
        assert lib.initial_seed() == 5
        assert lib.manual_seed(-1).initial_seed() == 2 ** 64 - 1
        assert isinstance(lib.seed(), int)
        st = lib.get_rng_state()
        assert str(st.dtype).endswith("uint8") and st.dim() == 1
    same(lambda m: m.manual_seed(2 ** 64), "Overflow")
    same(lambda m: m.manual_seed("a"))
    same(lambda m: m.Generator().set_state(m.zeros(3)), "ByteTensor")
    same(lambda m: m.Generator().set_state([1, 2]), "ByteTensor")
    same(lambda m: m.Generator().set_state(m.zeros(5056, dtype=m.uint8)))


def test_get_set_state_roundtrip():
    g = ember.Generator().manual_seed(7)
    state = g.get_state()
    a = ember.randn(4, generator=g)
    g.set_state(state)
    assert ember.randn(4, generator=g).tolist() == a.tolist()
    assert g.initial_seed() == 7
    s = ember.get_rng_state()
    b = ember.rand(3)
    ember.set_rng_state(s)
    assert ember.rand(3).tolist() == b.tolist()


def test_seeded_initialisers_fill_torchs_numbers():
    def build(m):
        m.manual_seed(1)
        lin = m.nn.Linear(5, 3)
        w = m.empty(4, 6)
        m.nn.init.normal_(w, 0.5, 2.0)
        return lin.weight.detach().numpy(), lin.bias.detach().numpy(), w.numpy()

    for e, t in zip(build(ember), build(torch)):
        np.testing.assert_allclose(e, t, rtol=2e-6, atol=1e-7)
    assert np.array_equal(build(ember)[0], build(torch)[0])


def test_seeded_tensor_fills_are_torchs():
    x = np.array([[-1.0, 0.0, 2.0, -3.0], [0.5, -0.25, -2.0, 1.0]], dtype=np.float32)

    def fill(m):
        m.manual_seed(2)
        F = m.nn.functional
        out = [m.empty(3).uniform_(-1, 2), m.empty(20).normal_(1, 2),
               m.empty(2, dtype=m.float16).uniform_()]
        for dt in (m.float32, m.float64):
            out += [m.empty(40, dtype=dt).exponential_(2.0), m.empty(40, dtype=dt).geometric_(0.3),
                    m.empty(40, dtype=dt).cauchy_(1.0, 2.0),
                    m.empty(41, dtype=dt).log_normal_(0.5, 0.7),
                    m.empty(9, dtype=dt).bernoulli_(0.3)]
        t = m.tensor(x, requires_grad=True)
        y = F.rrelu(t, training=True)  # one draw per element <= 0 (zeros included)
        y.sum().backward()
        out += [m.empty(7, dtype=m.int64).geometric_(0.2), y.detach(), t.grad,
                F.gumbel_softmax(m.tensor(x), tau=0.5), F.gumbel_softmax(m.tensor(x), hard=True),
                m.rand(3)]  # and the stream is still in step
        return out

    for e, t in zip(fill(ember), fill(torch)):
        assert e.dtype.itemsize == t.dtype.itemsize
        np.testing.assert_allclose(e.numpy().astype(float), t.numpy().astype(float), rtol=2e-6,
                                   atol=1e-7)


def test_random_module_and_fork_rng():
    for lib in (torch, ember):
        lib.random.manual_seed(4)
        with lib.random.fork_rng():
            inside = lib.rand(3).tolist()
        assert lib.rand(3).tolist() == inside
        assert lib.random.initial_seed() == 4
    ember.random.manual_seed(4)
    torch.random.manual_seed(4)
    assert ember.rand(2).tolist() == torch.rand(2).tolist()


RANDOM_FILLS = [
    lambda m: m.empty((), dtype=m.int64).random_(), lambda m: m.empty(5, dtype=m.int32).random_(),
    lambda m: m.empty(5).random_(), lambda m: m.empty(5, dtype=m.float64).random_(),
    lambda m: m.empty(5, dtype=m.int64).random_(3, 2 ** 40),
    lambda m: m.empty(6, dtype=m.uint8).random_(), lambda m: m.empty(4).random_(10),
]


@pytest.mark.parametrize("k", range(len(RANDOM_FILLS)))
def test_seeded_random_fill_is_torchs(k):
    out = []
    for lib in (torch, ember):
        lib.manual_seed(9)
        out.append(RANDOM_FILLS[k](lib).tolist())
    assert out[0] == out[1]


def test_a_python_float_keeps_its_float64_value():
    # the scalar path went through float32 first: tensor(0.5386, dtype=float64) lost digits
    same(lambda m: m.tensor(-0.5386, dtype=m.float64).item())
    same(lambda m: m.tensor(0.1, dtype=m.float64, requires_grad=True).item())
    same(lambda m: (m.tensor(1e40), m.tensor(1e40, dtype=m.float16)))
