"""ember.testing (assert_close, make_tensor) against torch.testing: same outcome, same errors.

Each case runs in both libraries; both must pass, or raise the same exception type with the
same message once torch's "torch." is read as "ember.".
"""

import math
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

import ember

nan, inf = math.nan, math.inf


def outcome(fn, lib):
    """None if ``fn(lib)`` returns, else (exception type, message with torch. read as ember.)."""
    try:
        fn(lib)
    except Exception as err:  # noqa: BLE001 - the outcome is what we compare
        return type(err), str(err).replace("torch.", "ember.")
    return None


def same_outcome(fn):
    t, e = outcome(fn, torch), outcome(fn, ember)
    assert e == t, f"\nember: {e}\ntorch: {t}"


def t(lib, data, dtype="float32"):
    return lib.tensor(data, dtype=getattr(lib, dtype))


RNG = np.random.default_rng(0)
BIG = RNG.standard_normal((40, 50)).astype(np.float32)
BIG_NOISY = BIG + (RNG.random((40, 50)) < 0.3) * RNG.standard_normal((40, 50)).astype(np.float32)
BIG_TIES = np.zeros((30, 40), np.float32)
BIG_TIES_OFF = BIG_TIES.copy()
BIG_TIES_OFF[3:, 5:] = 2.0  # many equal greatest differences: the first one is reported
NP_A = np.array([[1.0, 2.0], [3.0, 4.0]])

CASES = {
    # tensors of several dtypes and shapes
    "f32-equal": lambda L: L.testing.assert_close(t(L, [1.0, 2.0]), t(L, [1.0, 2.0])),
    "f32-within-tol": lambda L: L.testing.assert_close(t(L, [1.0, 2.0]), t(L, [1.0, 2.000002])),
    "f32-not-close": lambda L: L.testing.assert_close(t(L, [1.0, 2.0, 3.0]),
                                                      t(L, [1.0, 2.5, 1.0])),
    "f32-2d": lambda L: L.testing.assert_close(t(L, [[1.0, 2.0], [3.0, 4.0]]),
                                               t(L, [[1.0, 2.0], [3.0, 4.1]])),
    "f32-3d": lambda L: L.testing.assert_close(t(L, np.arange(24.0).reshape(2, 3, 4)),
                                               t(L, np.arange(24.0).reshape(2, 3, 4) * 1.01)),
    "f64-not-close": lambda L: L.testing.assert_close(t(L, [1.0, 1e-10], "float64"),
                                                      t(L, [1.0, 2e-10], "float64")),
    "f64-close": lambda L: L.testing.assert_close(t(L, [1.0, 1e-10], "float64"),
                                                  t(L, [1.00000001, 1e-10], "float64")),
    "f16-close": lambda L: L.testing.assert_close(t(L, [1.0, 100.0], "float16"),
                                                  t(L, [1.0, 100.05], "float16")),
    "f16-not-close": lambda L: L.testing.assert_close(t(L, [1.0, 100.0], "float16"),
                                                      t(L, [1.0, 101.0], "float16")),
    "f16-overflowing-diff": lambda L: L.testing.assert_close(t(L, [60000.0], "float16"),
                                                             t(L, [-60000.0], "float16")),
    "big-random": lambda L: L.testing.assert_close(L.tensor(BIG_NOISY), L.tensor(BIG)),
    "big-ties": lambda L: L.testing.assert_close(L.tensor(BIG_TIES_OFF), L.tensor(BIG_TIES)),
    "zero-expected": lambda L: L.testing.assert_close(t(L, [1.0, 0.5]), t(L, [1.0, 0.0])),
    # integers and bools compare exactly
    "int64-equal": lambda L: L.testing.assert_close(t(L, [1, 2], "int64"), t(L, [1, 2], "int64")),
    "int64-not-equal": lambda L: L.testing.assert_close(t(L, [1, 2, 7], "int64"),
                                                        t(L, [1, 3, 4], "int64")),
    "int32-2d": lambda L: L.testing.assert_close(t(L, [[5, -2], [0, 1]], "int32"),
                                                 t(L, [[5, 2], [0, 0]], "int32")),
    "uint8-wrap": lambda L: L.testing.assert_close(t(L, [0, 255], "uint8"),
                                                   t(L, [255, 0], "uint8")),
    "int8": lambda L: L.testing.assert_close(t(L, [-128, 3], "int8"), t(L, [127, 3], "int8")),
    "int-with-tol": lambda L: L.testing.assert_close(t(L, [10, 20], "int64"),
                                                     t(L, [11, 20], "int64"), rtol=0.0, atol=0.5),
    "int-loose-tol": lambda L: L.testing.assert_close(t(L, [10, 20], "int64"),
                                                      t(L, [11, 20], "int64"), rtol=0.1, atol=0),
    "bool": lambda L: L.testing.assert_close(t(L, [True, False, True], "bool"),
                                             t(L, [True, True, False], "bool")),
    # NaN and inf
    "nan": lambda L: L.testing.assert_close(t(L, [1.0, nan]), t(L, [1.0, nan])),
    "nan-equal-nan": lambda L: L.testing.assert_close(t(L, [1.0, nan]), t(L, [1.0, nan]),
                                                      equal_nan=True),
    "nan-vs-number": lambda L: L.testing.assert_close(t(L, [nan, 2.0, 3.0]),
                                                      t(L, [1.0, 2.0, 9.0]), equal_nan=True),
    "nan-in-expected": lambda L: L.testing.assert_close(t(L, [1.0, 2.0]), t(L, [1.0, nan])),
    "inf-equal": lambda L: L.testing.assert_close(t(L, [inf, -inf]), t(L, [inf, -inf])),
    "inf-vs-minus-inf": lambda L: L.testing.assert_close(t(L, [inf, 1.0]), t(L, [-inf, 1.0])),
    "inf-vs-finite": lambda L: L.testing.assert_close(t(L, [1.0, 3.0]), t(L, [inf, 1.0])),
    # 0-d and empty tensors
    "0d-close": lambda L: L.testing.assert_close(t(L, 1.0), t(L, 1.0000001)),
    "0d-not-close": lambda L: L.testing.assert_close(t(L, 1.0), t(L, 1.1)),
    "0d-f16": lambda L: L.testing.assert_close(t(L, 1.0, "float16"), t(L, 1.5, "float16")),
    "0d-zero-expected": lambda L: L.testing.assert_close(t(L, 0.5), t(L, 0.0)),
    "0d-int": lambda L: L.testing.assert_close(t(L, 3, "int64"), t(L, 5, "int64")),
    "0d-bool": lambda L: L.testing.assert_close(t(L, True, "bool"), t(L, False, "bool")),
    "0d-nan": lambda L: L.testing.assert_close(t(L, nan), t(L, nan)),
    "empty": lambda L: L.testing.assert_close(L.zeros(0), L.zeros(0)),
    "empty-2d": lambda L: L.testing.assert_close(L.zeros(0, 3), L.ones(0, 3)),
    "empty-shape-mismatch": lambda L: L.testing.assert_close(L.zeros(0), L.zeros(0, 3)),
    # attributes
    "shape-mismatch": lambda L: L.testing.assert_close(L.zeros(2, 3), L.zeros(3, 2)),
    "dtype-mismatch": lambda L: L.testing.assert_close(L.zeros(2), L.zeros(2, dtype=L.float64)),
    "int-dtype-mismatch": lambda L: L.testing.assert_close(t(L, [1], "int32"), t(L, [1], "int64")),
    "shape-before-dtype": lambda L: L.testing.assert_close(L.zeros(2), L.zeros(3, dtype=L.int64)),
    "no-check-dtype": lambda L: L.testing.assert_close(L.ones(2), L.ones(2, dtype=L.float64),
                                                       check_dtype=False),
    "no-check-dtype-fails": lambda L: L.testing.assert_close(
        t(L, [1.0, 2.0]), t(L, [1.0, 2.1], "float64"), check_dtype=False),
    "no-check-dtype-loosest-tol": lambda L: L.testing.assert_close(
        t(L, [1.0, 2.0], "float16"), t(L, [1.0, 2.001], "float64"), check_dtype=False),
    "int-vs-float-no-check": lambda L: L.testing.assert_close(
        t(L, [1, 2], "int64"), t(L, [1.0, 2.5]), check_dtype=False),
    "uint8-vs-int8-no-check": lambda L: L.testing.assert_close(
        t(L, [200, 1], "uint8"), t(L, [-56, 1], "int8"), check_dtype=False),
    "stride-unchecked": lambda L: L.testing.assert_close(L.zeros(2, 3).t(),
                                                         L.zeros(3, 2)),
    "stride-checked": lambda L: L.testing.assert_close(L.zeros(2, 3).t(), L.zeros(3, 2),
                                                       check_stride=True),
    "flags-accepted": lambda L: L.testing.assert_close(L.ones(2), L.ones(2), check_device=False,
                                                       check_layout=False),
    "requires-grad": lambda L: L.testing.assert_close(L.ones(2, requires_grad=True) * 2,
                                                      L.full((2,), 2.0)),
    # tolerances
    "rtol-without-atol": lambda L: L.testing.assert_close(L.ones(2), L.ones(2), rtol=1e-3),
    "atol-without-rtol": lambda L: L.testing.assert_close(L.ones(2), L.ones(2), atol=1e-3),
    "half-tol-on-numbers": lambda L: L.testing.assert_close(1.0, 1.0, atol=1.0),
    "half-tol-ignored-for-none": lambda L: L.testing.assert_close(None, None, rtol=1.0),
    "half-tol-before-compare": lambda L: L.testing.assert_close([1.0, L.ones(1)],
                                                                [2.0, L.ones(1)], rtol=1.0),
    "given-tol-pass": lambda L: L.testing.assert_close(t(L, [1.0, 2.0]), t(L, [1.1, 2.0]),
                                                       rtol=0.0, atol=0.2),
    "given-tol-fail": lambda L: L.testing.assert_close(t(L, [1.0, 2.0]), t(L, [1.5, 2.0]),
                                                       rtol=0.1, atol=0.2),
    "zero-tol-float": lambda L: L.testing.assert_close(t(L, [1.0, 2.0]), t(L, [1.0, 2.0000002]),
                                                       rtol=0, atol=0),
    "int-tol-printed": lambda L: L.testing.assert_close(t(L, [1.0, 2.0]), t(L, [1.0, 9.0]),
                                                        rtol=1, atol=2),
    # Python numbers, bools, None
    "float-close": lambda L: L.testing.assert_close(1.0, 1.0 + 1e-8),
    "float-not-close": lambda L: L.testing.assert_close(1.0, 1.1),
    "float-zero-expected": lambda L: L.testing.assert_close(0.5, 0.0),
    "int-not-equal": lambda L: L.testing.assert_close(1, 2),
    "number-int-vs-float": lambda L: L.testing.assert_close(1, 1.0),
    "number-int-vs-float-no-check": lambda L: L.testing.assert_close(1, 1.0,
                                                                     check_dtype=False),
    "complex": lambda L: L.testing.assert_close(1 + 2j, 1 + 2.5j),
    "float-nan": lambda L: L.testing.assert_close(nan, nan),
    "float-nan-equal-nan": lambda L: L.testing.assert_close(nan, nan, equal_nan=True),
    "float-inf": lambda L: L.testing.assert_close(inf, inf),
    "float-inf-vs-big": lambda L: L.testing.assert_close(inf, 1e308),
    "numpy-scalar": lambda L: L.testing.assert_close(np.float32(0.5), 0.5),
    "numpy-scalar-fail": lambda L: L.testing.assert_close(np.float32(0.1), 0.1),
    "numpy-int-vs-int": lambda L: L.testing.assert_close(np.int32(3), 4),
    "bools": lambda L: L.testing.assert_close(True, True),
    "bools-mismatch": lambda L: L.testing.assert_close(True, False),
    "numpy-bool": lambda L: L.testing.assert_close(np.bool_(False), True),
    "bool-vs-int": lambda L: L.testing.assert_close(True, 1),
    "numpy-bool-vs-int": lambda L: L.testing.assert_close(np.bool_(True), 1),
    "none": lambda L: L.testing.assert_close(None, None),
    "none-vs-number": lambda L: L.testing.assert_close(None, 1),
    "number-vs-none": lambda L: L.testing.assert_close(1.5, None),
    # containers
    "list": lambda L: L.testing.assert_close([L.ones(2), 1.0], [L.ones(2), 1.0]),
    "list-vs-tuple": lambda L: L.testing.assert_close([1, 2.0], (1, 2.0)),
    "list-fails-at-1": lambda L: L.testing.assert_close([L.ones(2), L.ones(2)],
                                                        [L.ones(2), L.zeros(2)]),
    "nested-list": lambda L: L.testing.assert_close([1, [2.0, [L.ones(2)]]],
                                                    [1, [2.0, [L.zeros(2)]]]),
    "first-failure-wins": lambda L: L.testing.assert_close([1, 2, 3], [1, 5, 6]),
    "length-mismatch": lambda L: L.testing.assert_close([1, 2], [1]),
    "nested-length-mismatch": lambda L: L.testing.assert_close([[1, 2]], [[1]]),
    "dict": lambda L: L.testing.assert_close({"a": L.ones(1), "b": 2}, {"b": 2, "a": L.ones(1)}),
    "dict-fails": lambda L: L.testing.assert_close({"a": 1.0, "b": [L.ones(2)]},
                                                   {"a": 1.0, "b": [L.zeros(2)]}),
    "dict-keys": lambda L: L.testing.assert_close({"a": 1, "b": 2, "c": 3},
                                                  {"a": 1, "d": 2, "e": 3}),
    "dict-int-keys": lambda L: L.testing.assert_close({2: 1.0, 1: 2.0}, {1: 2.0, 2: 1.5}),
    "dict-mixed-keys": lambda L: L.testing.assert_close({1: 1.0, "x": 2.0}, {1: 1.0, "x": 2.0}),
    "dict-in-list": lambda L: L.testing.assert_close([{"w": L.ones(2, 2)}], [{"w": L.zeros(2)}]),
    "size": lambda L: L.testing.assert_close(L.Size([2, 3]), L.Size([2, 4])),
    "structure-error-before-values": lambda L: L.testing.assert_close([1.0, 2], [2.0, "a"]),
    "string-in-list": lambda L: L.testing.assert_close(["a"], ["a"]),
    "strings": lambda L: L.testing.assert_close("ab", "ab"),
    # tensor-likes that are not tensors, and unrelated types
    "numpy-arrays": lambda L: L.testing.assert_close(NP_A, NP_A.copy()),
    "numpy-arrays-fail": lambda L: L.testing.assert_close(NP_A, NP_A + 1),
    "numpy-0d": lambda L: L.testing.assert_close(np.array(1.0), np.array(2.0)),
    "numpy-vs-tensor": lambda L: L.testing.assert_close(NP_A, L.tensor(NP_A)),
    "tensor-vs-list": lambda L: L.testing.assert_close(L.ones(1), [1.0]),
    "tensor-vs-number": lambda L: L.testing.assert_close(L.tensor(1.0), 1.0),
    "list-vs-dict": lambda L: L.testing.assert_close([1], {0: 1}),
    "sets": lambda L: L.testing.assert_close({1}, {1}),
    "parameter-vs-tensor": lambda L: L.testing.assert_close(L.nn.Parameter(L.ones(2)),
                                                            L.ones(2)),
    "parameter-no-subclasses": lambda L: L.testing.assert_close(
        L.nn.Parameter(L.ones(2)), L.ones(2), allow_subclasses=False),
    "tensor-parameter-no-subclasses": lambda L: L.testing.assert_close(
        L.ones(2), L.nn.Parameter(L.ones(2)), allow_subclasses=False),
    # msg
    "msg-str": lambda L: L.testing.assert_close(L.ones(2), L.zeros(2), msg="Argh!"),
    "msg-str-nested": lambda L: L.testing.assert_close([L.ones(2)], [L.zeros(2)], msg="Argh!"),
    "msg-callable": lambda L: L.testing.assert_close(
        [0, L.ones(2)], [0, L.zeros(2)], msg=lambda m: f"Header\n\n{m}\n\nFooter"),
    "msg-callable-shape": lambda L: L.testing.assert_close(L.ones(2), L.ones(3),
                                                           msg=lambda m: f"<{m}>"),
    "msg-on-numbers": lambda L: L.testing.assert_close(1.0, 2.0, msg="numbers differ"),
    "msg-ignored-for-length": lambda L: L.testing.assert_close([1, 2], [1], msg="ignored"),
    "msg-ignored-for-types": lambda L: L.testing.assert_close(NP_A, L.ones(1), msg="ignored"),
    "msg-ignored-for-tol": lambda L: L.testing.assert_close(L.ones(1), L.ones(1), rtol=1.0,
                                                            msg=lambda m: "ignored"),
}
BF16_CASES = {
    "bf16-close": lambda L: L.testing.assert_close(t(L, [1.0, 100.0], "bfloat16"),
                                                   t(L, [1.0, 100.5], "bfloat16")),
    "bf16-not-close": lambda L: L.testing.assert_close(t(L, [1.0, 100.0], "bfloat16"),
                                                       t(L, [1.0, 104.0], "bfloat16")),
    "bf16-vs-f16": lambda L: L.testing.assert_close(t(L, [1.0, 2.0], "bfloat16"),
                                                    t(L, [1.0, 2.01], "float16"),
                                                    check_dtype=False),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_assert_close_like_torch(case):
    same_outcome(case)


@pytest.mark.parametrize("case", BF16_CASES.values(), ids=BF16_CASES.keys())
def test_assert_close_bfloat16_like_torch(case):
    same_outcome(case)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "uint8"])
@pytest.mark.parametrize("scale", [1e-7, 1e-5, 1e-3, 1e-1])
def test_assert_close_random_data_like_torch(dtype, scale):
    rng = np.random.default_rng(int(scale * 1e7))
    a = rng.standard_normal((7, 9)) * 10
    b = a * (1 + scale * rng.standard_normal((7, 9)))
    if dtype in ("int32", "uint8"):
        a, b = np.abs(np.round(a)), np.abs(np.round(b))
    same_outcome(lambda L: L.testing.assert_close(t(L, a, dtype), t(L, b, dtype)))


# isclose rounds each step as torch does: half types via float32, int64 compared exactly
@pytest.mark.parametrize("pair", [
    ([0.2342529296875], [0.2340087890625], "float16"),
    ([2 ** 60], [2 ** 60 + 1], "int64"),
], ids=["float16-rounding", "int64-beyond-2**53"])
def test_assert_close_at_rounding_edges_like_torch(pair):
    a, b, dtype = pair
    same_outcome(lambda L: L.testing.assert_close(t(L, a, dtype), t(L, b, dtype)))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16",
                                   "float32", "float64", "int64", "uint8"])
@pytest.mark.parametrize("rtol,atol", [(1e-5, 1e-8), (1e-3, 1e-5), (0.1, 0), (0, 0.5), (0, 0)])
def test_isclose_rounds_like_torch_at_every_scale(dtype, rtol, atol):
    """Random pairs whose gaps straddle the tolerance, NaN and infinities included."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal(4000) * 10.0 ** rng.integers(-3, 3, 4000)
    b = a * (1 + 10.0 ** rng.integers(-8, 0, 4000) * rng.standard_normal(4000))
    a[:20], b[10:30], a[40:45], b[43:48] = nan, nan, inf, -inf
    if dtype in ("int64", "uint8"):
        a, b = (np.abs(np.nan_to_num(np.round(x), posinf=5, neginf=3)) % 200 for x in (a, b))
    ta, tb = (torch.tensor(x).to(getattr(torch, dtype)) for x in (a, b))
    ea, eb = (ember.tensor(x.double().numpy()).to(getattr(ember, dtype)) for x in (ta, tb))
    for equal_nan in (False, True):
        expected = torch.isclose(ta, tb, rtol, atol, equal_nan).numpy()
        np.testing.assert_array_equal(ember.isclose(ea, eb, rtol, atol, equal_nan).numpy(),
                                      expected)


def test_failure_is_raised_from_the_caller():
    with pytest.raises(AssertionError, match=r"Mismatched elements: 1 / 2 \(50.0%\)"):
        ember.testing.assert_close(ember.ones(2), ember.tensor([1.0, 0.0]))


def test_testing_is_a_lazy_submodule():
    assert hasattr(ember, "testing")
    assert ember.testing.assert_close is ember.testing._comparison.assert_close
    code = ("import sys, ember; assert 'ember.testing' not in sys.modules; "
            "ember.testing.assert_close(ember.ones(1), ember.ones(1)); "
            "assert 'ember.testing' in sys.modules; ember.testing.make_tensor(2, dtype=ember.int8, "
            "device='cpu')")
    subprocess.run([sys.executable, "-c", code], check=True)


# --- make_tensor ---------------------------------------------------------------------------

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64",
          "bfloat16"]
INTEGERS = {"bool", "uint8", "int8", "int16", "int32", "int64"}


def _make(lib, shape, dtype, **kw):
    return lib.testing.make_tensor(*shape, dtype=getattr(lib, dtype), device="cpu", **kw)


def _props(x):
    return (tuple(x.shape), str(x.dtype).replace("torch.", "ember."), x.stride(),
            x.is_contiguous(), x.storage_offset(), x.requires_grad, x.is_leaf)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (1,), (5,), ((2, 3),), (4, 1, 3), ([3, 2],)],
                         ids=str)
@pytest.mark.parametrize("kw", [{}, {"noncontiguous": True}, {"exclude_zero": True},
                                {"low": 0, "high": 2, "exclude_zero": True},
                                {"noncontiguous": True, "requires_grad": True},
                                {"low": -1e30, "high": 1e30}, {"low": 2.5, "high": 5}], ids=str)
def test_make_tensor_like_torch(dtype, shape, kw):
    if kw.get("requires_grad") and dtype not in ("float16", "float32", "float64", "bfloat16"):
        kw = {k: v for k, v in kw.items() if k != "requires_grad"}
    if outcome(lambda L: _make(L, shape, dtype, **kw), torch):  # e.g. bool in [2.5, 5)
        return same_outcome(lambda L: _make(L, shape, dtype, **kw))
    torch.manual_seed(7)
    ember.manual_seed(7)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tt, et = _make(torch, shape, dtype, **kw), _make(ember, shape, dtype, **kw)
    assert _props(et) == _props(tt)
    ev, tv = et.detach().double().numpy(), tt.detach().double().numpy()
    if dtype in INTEGERS:  # ember's generator gives torch's numbers
        np.testing.assert_array_equal(ev, tv)
    else:  # floats: torch's numbers up to the last bit
        np.testing.assert_allclose(ev, tv, rtol=2 ** -7 if dtype in ("float16", "bfloat16")
                                   else 1e-15 if dtype == "float64" else 0)
    if kw.get("exclude_zero"):
        assert (ev != 0).all()


@pytest.mark.parametrize("dtype,low,high,lo,hi", [
    ("float32", None, None, -9, 9), ("float16", -1e6, 1e6, -65504, 65504),
    ("float64", 0.25, 0.5, 0.25, 0.5), ("int8", -1000, 1000, -128, 127),
    ("uint8", None, None, 0, 9), ("int64", None, None, -9, 9), ("int32", 0.5, 3.5, 1, 3),
    ("bool", None, None, 0, 1), ("bool", 0, 1, 0, 0),
])
def test_make_tensor_ranges(dtype, low, high, lo, hi):
    x = ember.testing.make_tensor(2000, dtype=getattr(ember, dtype), device="cpu", low=low,
                                  high=high).double().numpy()
    assert x.min() >= lo and x.max() <= hi
    assert np.isfinite(x).all()
    if hi - lo < 20:  # small ranges are covered
        assert x.min() < lo + 0.1 * (hi - lo + 1) and x.max() > hi - 0.1 * (hi - lo + 1)


def test_make_tensor_draws_from_the_generator():
    ember.manual_seed(0)
    a = ember.testing.make_tensor(3, 4, dtype=ember.float32, device="cpu")
    b = ember.testing.make_tensor(3, 4, dtype=ember.float32, device="cpu")
    ember.manual_seed(0)
    c = ember.testing.make_tensor((3, 4), dtype=ember.float32, device="cpu")
    assert not np.array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(a.numpy(), c.numpy())


def test_make_tensor_requires_grad_is_a_leaf():
    x = ember.testing.make_tensor(2, 2, dtype=ember.float64, device="cpu", requires_grad=True)
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy())


def test_make_tensor_low_equal_high_warns_like_torch():
    for lib in (torch, ember):
        with pytest.warns(FutureWarning, match="Passing `low==high`") as rec:
            x = lib.testing.make_tensor(3, dtype=lib.float32, device="cpu", low=2, high=2)
        assert rec[0].filename == __file__
        assert x.tolist() == [2.0, 2.0, 2.0]


MAKE_ERRORS = {
    "low-ge-high": dict(dtype="float32", low=3, high=1),
    "int-low-eq-high": dict(dtype="int64", low=3, high=3),
    "low-nan": dict(dtype="float32", low=nan),
    "high-nan": dict(dtype="int32", high=nan),
    "below-range": dict(dtype="uint8", low=-20, high=-10),
    "above-range": dict(dtype="int8", low=200, high=300),
    "float-above-range": dict(dtype="float16", low=1e5, high=1e6),
    "requires-grad-int": dict(dtype="int64", requires_grad=True),
    "requires-grad-bool": dict(dtype="bool", requires_grad=True),
    "noncontiguous-and-memory-format": dict(dtype="float32", noncontiguous=True,
                                            memory_format="channels_last"),
    "dtype-string": dict(dtype="'float32'"),
    "dtype-python-type": dict(dtype="float", py=True),
    "negative-dim": dict(dtype="float32", shape=(-1, 2)),
    "negative-dim-int": dict(dtype="int16", shape=(2, -3)),
    "cuda": dict(dtype="float32", device="cuda"),
    "low-above-default-high": dict(dtype="float32", low=20),
}


@pytest.mark.parametrize("spec", MAKE_ERRORS.values(), ids=MAKE_ERRORS.keys())
def test_make_tensor_errors_like_torch(spec):
    spec = dict(spec)
    name, shape, py = spec.pop("dtype"), spec.pop("shape", (2, 3)), spec.pop("py", False)
    device = spec.pop("device", "cpu")

    def fn(lib):
        dt = name.strip("'") if name.startswith("'") else float if py else getattr(lib, name)
        lib.testing.make_tensor(*shape, dtype=dt, device=device, **spec)
    same_outcome(fn)
