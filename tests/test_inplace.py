"""In-place ops against torch: values, version counters, graph rebasing and autograd errors."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import arr, check, check_error

import ember

UNARY_INPLACE = {
    "exp_": arr, "exp2_": arr, "expm1_": arr, "log_": "pos", "log2_": "pos", "log10_": "pos",
    "log1p_": "pos", "sqrt_": "pos", "rsqrt_": "pos", "sin_": arr, "cos_": arr, "tan_": "unit",
    "asin_": "unit", "acos_": "unit", "atan_": arr, "sinh_": arr, "cosh_": arr, "tanh_": arr,
    "asinh_": arr, "atanh_": "unit", "sigmoid_": arr, "relu_": arr, "reciprocal_": "pos",
    "square_": arr, "abs_": arr, "neg_": arr, "negative_": arr, "sign_": arr, "sgn_": arr,
    "floor_": arr, "ceil_": arr, "round_": arr, "trunc_": arr, "fix_": arr, "frac_": arr,
    "erf_": arr, "erfc_": arr, "erfinv_": "unit", "deg2rad_": arr, "rad2deg_": arr,
    "nan_to_num_": arr,
}


def _make(kind, *shape):
    if kind == "pos":
        return arr(*shape, low=0.3, high=2.0)
    if kind == "unit":
        return arr(*shape, low=-0.9, high=0.9)
    return arr(*shape)


@pytest.mark.parametrize("name", sorted(UNARY_INPLACE))
def test_unary_inplace_on_non_leaf_matches_torch(name):
    x = _make(UNARY_INPLACE[name], 3, 4)

    def fn(m, t):
        h = t * 1
        out = getattr(h, name)()
        assert out is h
        return h, type(h.grad_fn).__name__, h._version
    # torch's sgn gradient is a ZeroTensor (no numpy()); asinh_ & co. have no derivative.
    grad = name not in ("sgn_", "asinh_", "atanh_")
    check(fn, x, grad=grad)


@pytest.mark.parametrize("name", ["asinh_", "atanh_", "acosh_"])
def test_inverse_hyperbolic_inplace_backward_is_not_implemented(name):
    def run(m):
        x = m.tensor([0.2, 0.3], requires_grad=True)
        h = x * 1 + (1.5 if name == "acosh_" else 0.0)
        getattr(h, name)()
        with pytest.raises(NotImplementedError, match="inplace version of") as info:
            h.sum().backward()
        return h.grad_fn.name(), str(info.value)
    assert run(ember) == run(torch)


BINARY_INPLACE = [
    lambda h, y: h.add_(y), lambda h, y: h.add_(y, alpha=2), lambda h, y: h.sub_(y),
    lambda h, y: h.sub_(y, alpha=0.5), lambda h, y: h.mul_(y), lambda h, y: h.div_(y),
    lambda h, y: h.pow_(y), lambda h, y: h.pow_(2), lambda h, y: h.add_(2.5),
    lambda h, y: h.mul_(3), lambda h, y: h.div_(4), lambda h, y: h.clamp_(0.5, 1.5),
    lambda h, y: h.clamp_(min=y), lambda h, y: h.clamp_min_(1.0), lambda h, y: h.clamp_max_(y),
    lambda h, y: h.clip_(0.6, 1.0), lambda h, y: h.lerp_(y, 0.3), lambda h, y: h.atan2_(y),
    lambda h, y: h.hypot_(y), lambda h, y: h.remainder_(y), lambda h, y: h.fmod_(y),
    lambda h, y: h.addcmul_(y, y, value=0.5), lambda h, y: h.addcdiv_(y, y + 1),
    lambda h, y: h.xlogy_(y), lambda h, y: h.copysign_(y),
    lambda h, y: h.div_(y, rounding_mode=None), lambda h, y: h.div_(y, rounding_mode="floor"),
]


@pytest.mark.parametrize("i", range(len(BINARY_INPLACE)))
def test_binary_inplace_matches_torch(i):
    op = BINARY_INPLACE[i]

    def fn(m, x, y):
        h = x * 1
        r = op(h, y)
        assert r is h
        return h, type(h.grad_fn).__name__, h._version
    check(fn, arr(3, 4, low=0.5, high=2), arr(4, low=0.5, high=2))


def test_float_power_inplace_needs_double():
    check(lambda m, x: (x * 1).float_power_(2), arr(3, dtype="float64"))
    check_error(lambda m, x: (x * 1).float_power_(2), arr(3), match="float_power_")


AUGMENTED = [
    lambda a, b: a.__iadd__(b), lambda a, b: a.__isub__(b), lambda a, b: a.__imul__(b),
    lambda a, b: a.__itruediv__(b), lambda a, b: a.__ifloordiv__(b), lambda a, b: a.__imod__(b),
    lambda a, b: a.__ipow__(b), lambda a, b: a.__iand__(b), lambda a, b: a.__ior__(b),
    lambda a, b: a.__ixor__(b), lambda a, b: a.__ilshift__(b), lambda a, b: a.__irshift__(b),
]


@pytest.mark.parametrize("i", range(len(AUGMENTED)))
@pytest.mark.parametrize("dtypes", [("float32", "float32"), ("int64", "int64"),
                                    ("int64", "float32"), ("float32", "int64"),
                                    ("bool", "bool"), ("int32", "scalar"), ("float64", "scalar")])
def test_augmented_assignment(i, dtypes):
    op = AUGMENTED[i]
    da, db = dtypes
    a = arr(3, 4, dtype=da, low=1, high=5)
    b = 2 if db == "scalar" else arr(4, dtype=db, low=1, high=3)

    def fn(m, x, *y):
        x = x.clone()
        other = y[0] if y else b
        v0 = x._version
        r = op(x, other)
        assert r is x
        return x, x._version - v0
    args = (a,) if db == "scalar" else (a, b)
    try:
        fn(torch, *[torch.from_numpy(np.array(t)) for t in args])
    except Exception:  # noqa: BLE001 - then ember must raise the same way
        check_error(fn, *args)
        return
    check(fn, *args, grad=False)


def test_version_counter_shared_with_views_and_bumped_once():
    x = ember.zeros(3, 4)
    v = x[0]
    assert x._version == v._version == 0
    v.add_(1)
    assert x._version == v._version == 1
    x.mul_(2).exp_()
    assert v._version == 3
    np.testing.assert_allclose(x.numpy()[0], np.exp(2.0), rtol=1e-6)


def test_leaf_requiring_grad_cannot_be_modified():
    for op in (lambda t: t.add_(1), lambda t: t.mul_(2), lambda t: t.exp_(),
               lambda t: t.zero_(), lambda t: t.fill_(1), lambda t: t.uniform_(),
               lambda t: t.copy_(ember.ones(3)), lambda t: t.__iadd__(1)):
        x = ember.ones(3, requires_grad=True)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used"):
            op(x)
    check_error(lambda m, x: x.requires_grad_().add_(1), arr(3), match="leaf Variable")


def test_view_of_leaf_cannot_be_modified():
    x = ember.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="view of a leaf Variable"):
        x[0:2].mul_(2)


def test_detached_alias_of_leaf_can_be_modified():
    def fn(m, y):
        w = m.ones(3, requires_grad=True)
        w.detach().zero_()
        z = w.detach()
        z.add_(y)
        return w.detach().clone(), z, type(z.grad_fn).__name__, w._version
    check(fn, arr(3))


def test_inplace_under_no_grad_on_leaf_works():
    for m in (ember, torch):
        w = m.ones(3, requires_grad=True)
        with m.no_grad():
            w.add_(1)
            w.mul_(2)
            w -= 1
        assert w.requires_grad and w.grad_fn is None and w.is_leaf
        assert w._version == 3
        assert w.detach().numpy().tolist() == [3.0, 3.0, 3.0]


def test_modified_saved_tensor_raises_at_backward():
    x = ember.randn(3, requires_grad=True)
    y = x.exp()  # saves its output
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()

    x = ember.randn(3, requires_grad=True)
    h = x * 1
    z = h * x  # saves h
    h.mul_(2)
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0"):
        z.sum().backward()

    x = ember.randn(3, requires_grad=True)
    h = x * 1
    e = h.exp_()  # saved output lives in h: a later write must be caught
    h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        e.sum().backward()


def test_graph_is_rebased_onto_the_inplace_node():
    def graph(m):
        x = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        h = x * 1
        names = [h.grad_fn.name()]
        h.mul_(2)
        names.append(h.grad_fn.name())
        names.append(type(h.grad_fn.next_functions[0][0]).__name__)
        h += 1
        names.append(h.grad_fn.name())
        h.sigmoid_()
        names.append(h.grad_fn.name())
        h.sum().backward()
        return names, x.grad.numpy().round(5).tolist(), h._version
    assert graph(ember) == graph(torch)


def test_inplace_where_only_other_requires_grad():
    def fn(m, y):
        a = m.zeros(4)
        a.add_(y * 2)
        a.mul_(y)
        return a, a.requires_grad, type(a.grad_fn).__name__
    check(fn, arr(4))


def test_result_type_cast_errors():
    f, i, b = arr(3), arr(3, dtype="int64", low=1, high=4), arr(3, dtype="bool")
    for fn, args in [
        (lambda m, x: x.add_(1.5), (i,)), (lambda m, x, y: x.mul_(y), (i, f)),
        (lambda m, x: x.div_(2), (i,)), (lambda m, x: x.sqrt_(), (i,)),
        (lambda m, x: x.exp_(), (i,)), (lambda m, x: x.sigmoid_(), (i,)),
        (lambda m, x: x.add_(1), (b,)), (lambda m, x: x.__iadd__(1.5), (i,)),
        (lambda m, x: x.reciprocal_(), (i,)),
    ]:
        check_error(fn, *args, match="can't be cast to the desired output type")
    e = check_error(lambda m, x: x.add_(1.5), i)
    assert str(e) == "result type Float can't be cast to the desired output type Long"
    check(lambda m, x: x.div_(2, rounding_mode="floor"), i, grad=False)
    check_error(lambda m, x: x.add_(m.ones(2, 3)), f, match="doesn't match the broadcast shape")


def test_int_inplace_ops_keep_dtype():
    i = arr(3, 4, dtype="int64", low=-5, high=5)
    for fn in (lambda m, x: x.neg_(), lambda m, x: x.abs_(), lambda m, x: x.floor_(),
               lambda m, x: x.relu_(), lambda m, x: x.sign_(), lambda m, x: x.square_(),
               lambda m, x: x.clamp_(-1, 2), lambda m, x: x.add_(True),
               lambda m, x: x.bitwise_and_(3), lambda m, x: x.logical_not_()):
        check(lambda m, x, fn=fn: fn(m, x.clone()), i, grad=False)


def test_fill_zero_copy():
    x = arr(3, 4)
    check(lambda m, t: t.clone().fill_(2.5), x)
    check(lambda m, t: t.clone().zero_(), x)
    check(lambda m, t: t.clone().fill_(m.tensor(1.5)), x)
    check(lambda m, t: m.zeros(3, 4, dtype=m.int64).fill_(2.7), x, grad=False)
    check_error(lambda m, t: t.clone().fill_(m.ones(2)), x, match="fill_ only supports 0-dim")
    check(lambda m, t, s: m.zeros(3, 4).copy_(s), x, arr(4))
    check(lambda m, t, s: m.zeros(3, 4, dtype=m.int32).copy_(s * 3), x, arr(3, 1), grad=False)
    check(lambda m, t: (t * 1).copy_(m.ones(4)), x)
    check(lambda m, t, s: (t * 1).copy_(s), x, arr(3, 4))
    check_error(lambda m, t: m.zeros(3).copy_(m.ones(2)), x, match="must match the size")
    check_error(lambda m, t: m.zeros(3, 4).copy_(m.ones(2, 4)), x, match="must match the size")

    def fill_with_grad(m, v):
        a = m.zeros(3)
        a.fill_(v)
        return a * 2, type(a.grad_fn).__name__ is not None
    check(fill_with_grad, np.array(1.5, dtype=np.float32))


def test_inplace_on_noncontiguous_views():
    def fn(m, x):
        a = x.detach().clone()
        at = a.t()
        at.mul_(2).add_(1)
        a[::2].neg_()
        return a, a._version
    check(fn, arr(4, 3), grad=False)


# --- random fills -----------------------------------------------------------------------------


def test_random_fills_shapes_dtypes_and_ranges():
    ember.manual_seed(0)
    x = ember.empty(20000)
    assert x.uniform_(-2, 3) is x and -2 <= x.min() and x.max() < 3 and x._version == 1
    assert abs(float(x.mean()) - 0.5) < 0.05
    x.normal_(1.0, 2.0)
    assert abs(float(x.mean()) - 1.0) < 0.1 and abs(float(x.std()) - 2.0) < 0.1
    x.exponential_(4.0)
    assert x.min() >= 0 and abs(float(x.mean()) - 0.25) < 0.02
    x.bernoulli_(0.3)
    assert set(np.unique(x.numpy()).tolist()) <= {0.0, 1.0} and abs(float(x.mean()) - 0.3) < 0.02
    x.bernoulli_(ember.full((20000,), 0.9))
    assert abs(float(x.mean()) - 0.9) < 0.02
    x.geometric_(0.5)
    assert x.min() >= 1 and abs(float(x.mean()) - 2.0) < 0.1
    i = ember.zeros(1000, dtype=ember.int64)
    i.random_(3, 7)
    assert i.dtype is ember.int64 and set(np.unique(i.numpy()).tolist()) == {3, 4, 5, 6}
    i.random_(5)
    assert set(np.unique(i.numpy()).tolist()) == {0, 1, 2, 3, 4}
    u = ember.zeros(1000, dtype=ember.uint8).random_()
    assert u.dtype is ember.uint8 and u.max() > 200
    f = ember.zeros(1000).random_()
    assert f.max() <= 2 ** 24 and f.max() > 2 ** 20
    b = ember.zeros(100, dtype=ember.bool).random_()
    assert set(np.unique(b.numpy()).tolist()) == {False, True}
    h = ember.zeros(10, dtype=ember.float16).normal_()
    assert h.dtype is ember.float16
    nc = ember.zeros(4, 6).t()
    nc.uniform_()
    assert (nc.numpy() > 0).all()


def test_random_fills_generator_reproducible():
    g = ember.Generator().manual_seed(7)
    a = ember.empty(5).normal_(generator=g)
    g.manual_seed(7)
    b = ember.empty(5).normal_(generator=g)
    assert np.array_equal(a.numpy(), b.numpy())
    ember.manual_seed(3)
    c = ember.empty(5).uniform_()
    ember.manual_seed(3)
    assert np.array_equal(c.numpy(), ember.empty(5).uniform_().numpy())


def test_random_fill_errors_match_torch():
    f, i = arr(4), arr(4, dtype="int64")
    cases = [
        (lambda m, x: x.uniform_(), (i,), "not implemented for 'Long'"),
        (lambda m, x: x.normal_(), (i,), "not implemented for 'Long'"),
        (lambda m, x: x.exponential_(), (i,), "dtype must be a floating point"),
        (lambda m, x: x.uniform_(1, 0), (f,), "uniform_ expects to return a [from, to) range"),
        (lambda m, x: x.normal_(0, -1), (f,), "normal expects std >= 0.0"),
        (lambda m, x: x.bernoulli_(1.5), (f,), "bernoulli_ expects p to be in [0, 1]"),
        (lambda m, x: x.random_(5, 5), (i,), "random_ expects 'from' to be less than 'to'"),
    ]
    for fn, args, match in cases:
        check_error(fn, *args, match=match)


def test_overwrites_in_the_graph_get_torch_names_and_no_gradient():
    fills = [lambda h, y: h.zero_(), lambda h, y: h.fill_(2.0), lambda h, y: h.fill_(y.sum()),
             lambda h, y: h.copy_(y), lambda h, y: h.copy_(y[:1].double()),
             lambda h, y: h.uniform_(), lambda h, y: h.normal_(), lambda h, y: h.exponential_(),
             lambda h, y: h.geometric_(0.5), lambda h, y: h.random_(5),
             lambda h, y: h.random_(1, 5), lambda h, y: h.random_(),
             lambda h, y: h.bernoulli_(0.5), lambda h, y: h.bernoulli_(y.detach().sigmoid()),
             lambda h, y: h.cauchy_(), lambda h, y: h.log_normal_()]
    deterministic = {0, 1, 2, 3, 4}
    for k, op in enumerate(fills):
        def fn(m, x, y, op=op, k=k):
            h = x * 1
            op(h, y)
            out = h * y
            edges = [type(n).__name__ if n else None for n, _ in h.grad_fn.next_functions]
            return (out if k in deterministic else out.sum() * 0), h.grad_fn.name(), edges
        check(fn, arr(3), arr(3))


def test_copy_into_plain_tensor_tracks_source():
    def fn(m, y):
        a = m.zeros(2, 3)
        a.copy_(y)
        return a * 2, a.grad_fn.name(), a.requires_grad
    check(fn, arr(3))


_STEPS = [
    lambda m, h, w: h.mul_(w), lambda m, h, w: h.add_(w, alpha=0.5), lambda m, h, w: h.sigmoid_(),
    lambda m, h, w: h.mul_(1.5), lambda m, h, w: h.tanh_(), lambda m, h, w: h.sub_(0.25),
    lambda m, h, w: h.clamp_(-0.8, 0.9), lambda m, h, w: h.exp_(), lambda m, h, w: h.pow_(2),
    lambda m, h, w: h.div_(w.abs() + 1), lambda m, h, w: h.lerp_(w, 0.3),
    lambda m, h, w: h.addcmul_(w, w, value=0.1), lambda m, h, w: h.neg_(),
]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, len(_STEPS) - 1), min_size=1, max_size=6),
       st.integers(0, 1000))
def test_random_inplace_chains_match_torch(steps, seed):
    rng = np.random.default_rng(seed)
    x0 = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
    w0 = rng.uniform(-1, 1, (3,)).astype(np.float32)

    def fn(m, x, w):
        h = x * 1
        for s in steps:
            _STEPS[s](m, h, w)
        return h * w, h._version, type(h.grad_fn).__name__

    def backward(m, x, w):
        fn(m, x.requires_grad_(), w.requires_grad_())[0].sum().backward()
    try:  # a step may overwrite a value an earlier step saved: then both must refuse
        backward(torch, torch.from_numpy(x0.copy()), torch.from_numpy(w0.copy()))
    except RuntimeError:
        check_error(backward, x0, w0, match="modified by an inplace operation")
        return
    check(fn, x0, w0, seed=seed)


def test_inplace_with_a_tensor_keyword_argument_is_recorded():
    def fn(m, lo):
        x = m.tensor([-2.0, 1.0, 3.0])
        x.clamp_(min=lo)
        return x
    check(fn, arr())
    check(lambda m, lo, hi: (lo * 0 + m.tensor([-2.0, 1.0, 3.0])).clamp_(min=lo, max=hi),
          arr(), arr(3))
