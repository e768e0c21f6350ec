"""Tensor printing compared string-for-string with torch (after 'torch.' -> 'ember.')."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import ember

R = np.random.default_rng(7)


def norm(s: str) -> str:
    return s.replace("torch.", "ember.")


def both(fn):
    """repr of ``fn(lib)`` in torch and in ember."""
    return norm(repr(fn(torch))), repr(fn(ember))


def f32(*shape, scale=1.0):
    return (R.standard_normal(shape) * scale).astype(np.float32)


ARRAYS = {
    "0d": np.float32(0.4),
    "0d_int": np.int64(7),
    "0d_neg_zero": np.float32(-0.0),
    "0d_big": np.float32(1e10),
    "0d_bool": np.bool_(True),
    "0d_nan": np.float32(np.nan),
    "vec": np.array([5.0, 7.0, 9.0], np.float32),
    "ints": np.array([1, -20, 300]),
    "int32": np.array([1, 2], np.int32),
    "int8": np.array([[1, -100], [3, 4]], np.int8),
    "uint8": np.arange(30).astype(np.uint8),
    "int16": np.array([7], np.int16),
    "bools": np.array([True, False, True]),
    "f64": np.array([1.5, 2.5]),
    "f16": np.array([0.1, 0.25, 1000.0], np.float16),
    "neg_zero": np.array([-0.0, 1.0], np.float32),
    "all_zero": np.zeros(3, np.float32),
    "nan_inf": np.array([np.nan, 1.5, np.inf, -np.inf], np.float32),
    "only_nonfinite": np.array([np.nan, np.inf], np.float32),
    "int_valued_inf": np.array([[np.inf, 1.0], [2.0, -np.inf]]),
    "small": np.array([1e-5, 1.0], np.float32),
    "sci_ratio": np.array([0.001, 1.5], np.float32),
    "no_sci": np.array([0.001, 1.0], np.float32),
    "huge": np.array([1e200, -1e-200]),
    "exp_edge": np.array([1e8, 1.0]),
    "exp_edge2": np.array([1e8 + 1, 1.0]),
    "minus_wider": np.array([-1.5, 9.0], np.float32),
    "wide_range": f32(40, scale=1000.0),
    "mat": f32(3, 4),
    "mat_wide": f32(3, 30, scale=1e5),
    "cube": f32(2, 3, 4),
    "4d": f32(2, 2, 3, 4),
    "long_vec": f32(1001),
    "big_mat": f32(100, 100),
    "big_3d": f32(10, 10, 11),
    "big_int": np.arange(2000).reshape(40, 50),
    "big_f64": R.standard_normal(2000),
    "big_bool": R.random((40, 30)) < 0.5,
    "empty": np.zeros(0, np.float32),
    "empty_2d": np.zeros((0, 3), np.float32),
    "empty_int": np.zeros(0, np.int64),
    "empty_int32_3d": np.zeros((2, 0, 3), np.int32),
    "wrapped_ints": np.arange(100) * 1000,
    "column": f32(5, 1),
    "negative_mat": -np.abs(f32(3, 3)),
}


@pytest.mark.parametrize("name", list(ARRAYS))
def test_repr_matches_torch(name):
    a = np.array(ARRAYS[name])
    t, e = both(lambda m: m.from_numpy(a.copy()))
    assert e == t
    assert str(ember.from_numpy(a.copy())) == e


@pytest.mark.parametrize("name", ["vec", "mat", "cube", "f64", "long_vec", "0d", "empty_2d"])
def test_requires_grad_and_grad_fn_suffixes(name):
    a = np.array(ARRAYS[name], dtype=np.float32 if name != "f64" else np.float64)

    def leaf(m):
        return m.tensor(a, requires_grad=True)

    assert both(leaf)[1] == both(leaf)[0]
    for op in (lambda x: x * 2, lambda x: x + x, lambda x: x.sum(), lambda x: x.exp()):
        t, e = both(lambda m, op=op: op(leaf(m)))
        assert e == t


def test_examples_from_the_brief():
    assert repr(ember.tensor([1.0, 2, 3]) + ember.tensor([4.0, 5, 6], requires_grad=True)) == \
        "tensor([5., 7., 9.], grad_fn=<AddBackward0>)"
    assert repr(ember.tensor(0.4)) == "tensor(0.4000)"
    assert repr(ember.zeros(3, requires_grad=True)) == "tensor([0., 0., 0.], requires_grad=True)"
    assert repr(ember.zeros(0, 3)) == "tensor([], size=(0, 3))"


def test_suffix_wraps_past_linewidth():
    a = f32(2, 9, scale=10.0)
    t, e = both(lambda m: m.tensor(a, dtype=m.float64, requires_grad=True) * 3)
    assert e == t


def test_parameter_style_contents_and_subclass_prefix():
    class MyTensor(ember.Tensor):
        pass

    x = ember.ones(2)
    assert ember.Tensor.__repr__(x, tensor_contents="[...]") == "tensor([...])"
    sub = MyTensor([1.0, 2.0])
    assert repr(sub) == "MyTensor([1., 2.])"


def test_nonleaf_view_and_detached_print():
    t, e = both(lambda m: m.arange(6.0, requires_grad=True).reshape(2, 3)[0])
    assert e == t
    t, e = both(lambda m: (m.ones(2, requires_grad=True) * 2).detach())
    assert e == t


OPTIONS = [
    dict(precision=2), dict(precision=8), dict(threshold=5), dict(edgeitems=1, threshold=10),
    dict(edgeitems=0, threshold=10), dict(linewidth=40), dict(linewidth=200),
    dict(sci_mode=True), dict(sci_mode=False), dict(profile="short"), dict(profile="full"),
    dict(profile="default", precision=1),
]


@pytest.mark.parametrize("opts", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
@pytest.mark.parametrize("name", ["mat", "wide_range", "long_vec", "big_int", "small", "0d",
                                  "vec", "int_valued_inf", "cube", "big_3d"])
def test_printoptions_match_torch(opts, name):
    a = np.array(ARRAYS[name])
    torch.set_printoptions(**opts)
    ember.set_printoptions(**opts)
    try:
        t, e = both(lambda m: m.from_numpy(a.copy()))
    finally:
        torch.set_printoptions(profile="default")
        ember.set_printoptions(profile="default")
    assert e == t


def test_printoptions_reset_and_sci_mode_is_not_sticky():
    a = np.array([1e-5, 1.0], np.float32)
    ember.set_printoptions(sci_mode=False)
    assert repr(ember.from_numpy(a)) == "tensor([0.0000, 1.0000])"
    ember.set_printoptions(precision=3)  # sci_mode goes back to automatic, as in torch
    assert repr(ember.from_numpy(a)) == "tensor([1.000e-05, 1.000e+00])"
    ember.set_printoptions(profile="default")
    assert repr(ember.from_numpy(a)) == "tensor([1.0000e-05, 1.0000e+00])"


def test_printoptions_context_manager():
    from ember._tensor_str import get_printoptions, printoptions

    with printoptions(precision=1):
        assert repr(ember.tensor([1.25])) == "tensor([1.2])"
    assert get_printoptions()["precision"] == 4


@pytest.mark.parametrize("value", [0.4, 3.0, -2.5, 1e-7, 12345.678])
@pytest.mark.parametrize("spec", ["", ".2f", ">10", "e", ".3g"])
def test_format_of_0d_tensor(value, spec):
    assert format(ember.tensor(value), spec) == format(torch.tensor(value), spec)
    assert f"{ember.tensor(value)}" == f"{torch.tensor(value)}"
    assert "{}".format(ember.tensor(value)) == "{}".format(torch.tensor(value))  # noqa: UP032


def test_format_of_int_bool_and_grad_tensors():
    for mk in (lambda m: m.tensor(3, dtype=m.int32), lambda m: m.tensor(True),
               lambda m: m.tensor(1.5, requires_grad=True) * 2):
        assert f"{mk(ember)}" == f"{mk(torch)}"
    assert f"{ember.tensor(3):5d}" == f"{torch.tensor(3):5d}"


def test_format_of_nd_tensor():
    assert f"{ember.tensor([0.4, 1.0])}" == norm(f"{torch.tensor([0.4, 1.0])}")
    with pytest.raises(TypeError, match="unsupported format string"):
        f"{ember.tensor([0.4, 1.0]):.2f}"
    with pytest.raises(TypeError):
        f"{torch.tensor([0.4, 1.0]):.2f}"


def test_default_dtype_changes_which_dtype_is_shown():
    try:
        for lib in (torch, ember):
            lib.set_default_dtype(lib.float64)
        t, e = both(lambda m: (m.tensor([1.5]), m.tensor([1.5], dtype=m.float32), m.zeros(0),
                               m.zeros(0, dtype=m.float32)))
        assert e == t
    finally:
        for lib in (torch, ember):
            lib.set_default_dtype(lib.float32)


finite = st.floats(allow_nan=False, allow_infinity=False, width=32)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(finite, st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0])),
                min_size=1, max_size=12))
def test_hypothesis_float_vectors(values):
    a = np.array(values, np.float32)
    t, e = both(lambda m: m.from_numpy(a.copy()))
    assert e == t


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(-(2 ** 40), 2 ** 40), min_size=1, max_size=30))
def test_hypothesis_int_vectors(values):
    a = np.array(values, np.int64)
    t, e = both(lambda m: m.from_numpy(a.copy()).reshape(-1, 1) if len(values) % 2 else
                m.from_numpy(a.copy()))
    assert e == t


def test_parameter_reprs_reuse_tensor_repr():
    def reprs(m):
        class P2(m.nn.Parameter):
            pass

        return [repr(m.nn.Parameter(m.ones(2))),
                repr(m.nn.Parameter(m.ones(2, dtype=m.float64), requires_grad=False)),
                f"{m.nn.Parameter(m.tensor(1.5))}", repr(P2(m.ones(1)))]

    assert reprs(ember) == [norm(s) for s in reprs(torch)]


def test_bfloat16_printing():
    for vals in ([1.5, 2.0, 1e-5], [1.0, 3.0], [0.1, 0.2]):
        t, e = both(lambda m, vals=vals: m.tensor(vals, dtype=m.bfloat16))
        assert e == t


def _random_array(rng):
    shape = tuple(rng.integers(0, 6, size=rng.integers(0, 5)))
    a = rng.standard_normal(shape) * 10.0 ** rng.integers(-12, 12)
    kind = rng.integers(0, 5)
    if kind == 0:
        a = np.round(a)
    elif kind == 1 and np.all(np.abs(a) < 1e15):
        a = a.astype(np.int64)
    elif kind == 2:
        a = a > 0
    elif kind == 3 and a.size:
        a.flat[rng.integers(0, a.size)] = rng.choice([np.nan, np.inf, -np.inf, -0.0])
    if a.dtype.kind == "f":
        with np.errstate(over="ignore"):
            a = a.astype(rng.choice([np.float32, np.float64, np.float16]))
    if rng.random() < 0.2 and a.ndim:
        a = np.repeat(a, 300, axis=-1)
    return a


@pytest.mark.parametrize("seed", range(4))
def test_fuzz_shapes_dtypes_and_options(seed):
    rng = np.random.default_rng(seed)
    for _ in range(60):
        a = _random_array(rng)
        opts = {}
        if rng.random() < 0.3:
            opts = dict(precision=int(rng.integers(0, 8)), linewidth=int(rng.integers(20, 150)),
                        edgeitems=int(rng.integers(0, 4)), threshold=int(rng.integers(5, 2000)))
        rg = a.dtype.kind == "f" and rng.random() < 0.3
        torch.set_printoptions(**opts)
        ember.set_printoptions(**opts)
        try:
            t, e = both(lambda m, a=a, rg=rg: m.tensor(a, requires_grad=rg))
        finally:
            torch.set_printoptions(profile="default")
            ember.set_printoptions(profile="default")
        assert e == t


@pytest.mark.parametrize("make", [lambda L: L.ones(2), lambda L: L.ones(2).shape,
                                  lambda L: L.float16, lambda L: L.nn.Parameter(L.ones(1)),
                                  lambda L: L.nn.Linear(1, 1)])
def test_public_classes_print_under_the_package_name(make):
    """``type(x)`` reads <class 'torch.Tensor'>, <class 'torch.Size'>, ... with ember's name."""
    assert repr(type(make(ember))) == repr(type(make(torch))).replace("torch", "ember")
