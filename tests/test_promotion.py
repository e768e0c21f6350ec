"""Type promotion against torch: result_type, promote_types, and the dtypes ops really return."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import ember

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64",
          "bfloat16"]
SCALARS = [True, False, 0, 3, -2, 2.5, -0.0]


def _pair(dt: str, shape: tuple, value=1):
    e = ember.full(shape, value, dtype=getattr(ember, dt))
    t = torch.full(shape, value, dtype=getattr(torch, dt))
    return e, t


def _name(d) -> str:
    return str(d).split(".")[-1]


@pytest.mark.parametrize("a", DTYPES)
@pytest.mark.parametrize("b", DTYPES)
def test_promote_types_all_pairs(a, b):
    assert _name(ember.promote_types(getattr(ember, a), getattr(ember, b))) == \
        _name(torch.promote_types(getattr(torch, a), getattr(torch, b)))


@pytest.mark.parametrize("a", DTYPES)
@pytest.mark.parametrize("b", DTYPES)
@pytest.mark.parametrize("shapes", [((2,), (2,)), ((), (2,)), ((2,), ()), ((), ())])
def test_result_type_tensor_pairs_by_dimension(a, b, shapes):
    ea, ta = _pair(a, shapes[0])
    eb, tb = _pair(b, shapes[1])
    assert _name(ember.result_type(ea, eb)) == _name(torch.result_type(ta, tb))


@pytest.mark.parametrize("a", DTYPES)
@pytest.mark.parametrize("s", SCALARS)
@pytest.mark.parametrize("shape", [(2,), ()])
def test_result_type_with_python_scalars(a, s, shape):
    ea, ta = _pair(a, shape)
    assert _name(ember.result_type(ea, s)) == _name(torch.result_type(ta, s))
    assert _name(ember.result_type(s, ea)) == _name(torch.result_type(s, ta))


def _op_dtype(lib, op, x, y):
    try:
        return _name(op(lib, x, y).dtype)
    except Exception as exc:  # noqa: BLE001 - both libraries must then raise the same type
        return type(exc).__name__


OPS = {
    "add": lambda m, x, y: x + y, "radd": lambda m, x, y: y + x, "sub": lambda m, x, y: x - y,
    "mul": lambda m, x, y: x * y, "div": lambda m, x, y: x / y, "rdiv": lambda m, x, y: y / x,
    "floordiv": lambda m, x, y: x // y, "mod": lambda m, x, y: x % y,
    "pow": lambda m, x, y: x ** y, "eq": lambda m, x, y: x == y, "lt": lambda m, x, y: x < y,
    "and": lambda m, x, y: x & y, "maximum": lambda m, x, y: m.maximum(x, y),
    "where": lambda m, x, y: m.where(x == x, x, y), "atan2": lambda m, x, y: m.atan2(x, y),
    "clamp": lambda m, x, y: m.clamp(x, y), "fmod": lambda m, x, y: m.fmod(x, y),
    "xlogy": lambda m, x, y: m.xlogy(x, y), "copysign": lambda m, x, y: m.copysign(x, y),
    "float_power": lambda m, x, y: m.float_power(x, y), "lerp": lambda m, x, y: m.lerp(x, x, y),
}
TENSOR_ONLY = {"maximum", "atan2", "clamp"}


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(sorted(OPS)), st.sampled_from(DTYPES), st.sampled_from(DTYPES),
       st.sampled_from([(3,), ()]), st.sampled_from([(3,), (), None]),
       st.sampled_from(SCALARS))
def test_op_output_dtypes_match_torch(op, a, b, sa, sb, scalar):
    fn = OPS[op]
    ea, ta = _pair(a, sa, value=2)
    if sb is None:  # a Python scalar operand
        if op in TENSOR_ONLY:
            return
        if op == "pow" and isinstance(scalar, int) and scalar < 0:
            scalar = 2
        eb = tb = scalar
    else:
        eb, tb = _pair(b, sb, value=1)
    assert _op_dtype(ember, fn, ea, eb) == _op_dtype(torch, fn, ta, tb)


@pytest.mark.parametrize("name", ["exp", "sqrt", "sin", "sigmoid", "erf", "log1p", "reciprocal",
                                  "rsqrt", "tanh", "atan", "exp2", "abs", "neg", "square",
                                  "floor", "sign", "relu", "isnan", "logical_not"])
@pytest.mark.parametrize("dt", DTYPES)
def test_unary_output_dtypes_match_torch(name, dt):
    ea, ta = _pair(dt, (2,), value=1)
    fn = (lambda m, x, y: getattr(m, name)(x))
    assert _op_dtype(ember, fn, ea, None) == _op_dtype(torch, fn, ta, None)


def test_documented_rules():
    f32 = ember.ones(3)
    i64 = ember.ones(3, dtype=ember.int64)
    assert (f32 * 2.5).dtype is ember.float32  # Python floats are weak
    assert (f32 * np.float64(2.5)).dtype is ember.float32  # and so are NumPy scalars
    assert (i64 / i64).dtype is ember.float32  # true division of ints
    assert (i64 + 2.5).dtype is ember.float32
    assert (i64 + True).dtype is ember.int64
    assert (f32 < 1).dtype is ember.bool
    assert (ember.ones(3, dtype=ember.uint8) + ember.ones(3, dtype=ember.int8)).dtype is \
        ember.int16
    b = ember.ones(3, dtype=ember.bool)
    assert (b + b).dtype is ember.bool and (b + 1).dtype is ember.int64
    # A 0-d tensor only wins when it is of a higher kind than the dimensioned tensors.
    assert (f32 * ember.tensor(2.0, dtype=ember.float64)).dtype is ember.float32
    assert (i64 * ember.tensor(2.0, dtype=ember.float64)).dtype is ember.float64
    assert (ember.ones(3, dtype=ember.int8) * ember.tensor(300)).dtype is ember.int8
    assert (ember.tensor(2.0, dtype=ember.float64) * f32).dtype is ember.float32


def test_default_dtype_drives_scalar_promotion():
    ember.set_default_dtype(ember.float64)
    try:
        assert (ember.ones(3, dtype=ember.int64) * 2.5).dtype is ember.float64
        assert (ember.ones(3, dtype=ember.int32) / 2).dtype is ember.float64
        assert ember.ones(3, dtype=ember.int64).sqrt().dtype is ember.float64
        assert (ember.ones(3) * 2.5).dtype is ember.float64
        assert (ember.ones(3, dtype=ember.float32) * 2.5).dtype is ember.float32
    finally:
        ember.set_default_dtype(ember.float32)


def test_float32_stays_float32_through_a_chain():
    x = ember.randn(4, requires_grad=True)
    y = ((x * 1.5 + 2) / 3 - 0.5) ** 2
    y = y.exp().log1p().sqrt().clamp(0.1, 5.0).erf() * np.float64(2.0)
    assert y.dtype is ember.float32
    y.sum().backward()
    assert x.grad.dtype is ember.float32
