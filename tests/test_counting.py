"""bincount, histc, diff, kron, renorm, quantile and nanquantile vs torch."""

import numpy as np
import oracle
import pytest
import torch
from oracle import check, check_error, fd_check, gradgrad_check

import ember

# A private generator: drawing from oracle's shared one would shift other files' inputs.
_RNG = np.random.default_rng(2026)


def arr(*shape, **kw):
    return oracle.arr(*shape, rng=_RNG, **kw)


def noncontig(*shape):
    return arr(*reversed(shape)).T


def negstride(*shape):
    return arr(*shape)[::-1]


def distinct(*shape, dtype="float32"):
    """Values without ties, so that sort routes gradients to the same elements as torch."""
    n = int(np.prod(shape))
    perm = np.random.default_rng(n).permutation(n).reshape(shape)
    return (perm * 0.37 - n / 5).astype(dtype)


def _name(out):
    return type(out.grad_fn).__name__ if out.grad_fn is not None else None


# --- bincount ------------------------------------------------------------------------------


IDX = np.array([1, 3, 3, 0, 7, 3], dtype=np.int64)


@pytest.mark.parametrize("fn", [
    lambda m, i: m.bincount(i),
    lambda m, i: i.bincount(minlength=12),
    lambda m, i: m.bincount(i, None, 2),
    lambda m, i: m.bincount(i, m.tensor([1.5, 2, 3, 4, 5, 6])),            # float32 stays
    lambda m, i: m.bincount(i, m.tensor([1.5, 2, 3, 4, 5, 6], dtype=m.float64)),
    lambda m, i: m.bincount(i, m.tensor([1, 2, 3, 4, 5, 6])),              # int -> float64
    lambda m, i: m.bincount(i, m.tensor([1, 2, 3, 4, 5, 6], dtype=m.float16)),
    lambda m, i: m.bincount(i, m.tensor([True, False, True, True, False, True])),
    lambda m, i: m.bincount(i.to(m.uint8)),
    lambda m, i: m.bincount(i.int(), minlength=3),
    lambda m, i: m.bincount(i[:0]),
    lambda m, i: m.bincount(i[:0], m.ones(0), minlength=3),                 # int64, not float
    lambda m, i: m.bincount(i.flip(0)[::2]),
])
def test_bincount_matches_torch(fn):
    check(fn, IDX)


def test_bincount_random():
    idx = arr(500, dtype="int64", low=0, high=40)
    w = arr(500)
    check(lambda m, i, w: m.bincount(i, w, minlength=50), idx, w, grad=False)


@pytest.mark.parametrize("fn, match", [
    (lambda m, i: m.bincount(i - 2), "1-d non-negative integral"),
    (lambda m, i: m.bincount(i.reshape(2, 3)), "1-d non-negative integral"),
    (lambda m, i: m.bincount(i[0]), "1-d non-negative integral"),
    (lambda m, i: m.bincount(i.float()), "not implemented for 'Float'"),
    (lambda m, i: m.bincount(i > 1), "not implemented for 'Bool'"),
    (lambda m, i: m.bincount(i, minlength=-1), "minlength should be >= 0"),
    (lambda m, i: m.bincount(i, m.ones(5)), "same length as input"),
    (lambda m, i: m.bincount(i, m.ones(1, 6)), "same length as input"),
    (lambda m, i: m.bincount(i, [1.0] * 6), "must be Tensor"),
])
def test_bincount_errors(fn, match):
    check_error(fn, IDX, match=match)


def test_bincount_weights_that_require_grad_have_no_derivative():
    def fn(m):
        w = m.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], requires_grad=True)
        out = m.bincount(m.tensor(IDX), w)
        assert out.requires_grad and _name(out) == "NotImplemented"
        out.sum().backward()

    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="derivative for aten::bincount is not implemented"):
            fn(lib)


# --- histc ---------------------------------------------------------------------------------


@pytest.mark.parametrize("fn", [
    lambda m, x: m.histc(x),
    lambda m, x: x.histc(bins=7),
    lambda m, x: m.histc(x, bins=4, min=-1, max=1),            # values outside are ignored
    lambda m, x: m.histc(x, 5, 0.5, 0.5),                      # equal bounds: the data's range
    lambda m, x: m.histc(x, bins=3, min=-2, max=-1.5),
    lambda m, x: m.histc(x * 0 + 1, bins=4),                   # constant: [v - 1, v + 1]
    lambda m, x: m.histc(x[:0], bins=4),
    lambda m, x: m.histc(x[0, 0], bins=3),
    lambda m, x: m.histc(x.double(), bins=13, min=-1.5, max=1.25),
    lambda m, x: m.histc(x.half(), bins=6),
])
def test_histc_matches_torch(fn):
    check(fn, arr(7, 9), grad=False)


def test_histc_edges_and_nan():
    # Values exactly on bin edges (right edge inclusive); NaN is skipped when min/max given.
    x = np.array([0.0, 0.25, 0.5, 0.75, 1.0, np.nan, 0.1, 0.3], dtype=np.float32)
    check(lambda m, x: m.histc(x, bins=4, min=0, max=1), x)
    check(lambda m, x: m.histc(x, bins=3, min=0, max=1), x)
    x = np.linspace(-3, 3, 601, dtype=np.float32)
    for bins in (1, 6, 7, 100):
        check(lambda m, x, b=bins: m.histc(x, bins=b), x)


def test_histc_has_no_graph():
    for lib in (torch, ember):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        assert not lib.histc(x, bins=3).requires_grad


@pytest.mark.parametrize("fn, match", [
    (lambda m, x: m.histc(x, bins=0), "bins must be > 0"),
    (lambda m, x: m.histc(x, bins=-2), "bins must be > 0"),
    (lambda m, x: m.histc(x, bins=3, min=3, max=1), "max must be larger than min"),
    (lambda m, x: m.histc(x / 0, bins=3), "is not finite"),
    (lambda m, x: m.histc(x, bins=3, min=float("nan"), max=2), "is not finite"),
    (lambda m, x: m.histc(x.long(), bins=3), "not implemented for 'Long'"),
    (lambda m, x: m.histc(x > 0, bins=3), "not implemented for 'Bool'"),
    (lambda m, x: m.histc(x, bins=3.5), "must be int"),
])
def test_histc_errors(fn, match):
    check_error(fn, arr(5), match=match)


# --- diff ----------------------------------------------------------------------------------


@pytest.mark.parametrize("fn", [
    lambda m, x: m.diff(x),
    lambda m, x: x.diff(dim=0),
    lambda m, x: m.diff(x, n=2, dim=1),
    lambda m, x: m.diff(x, n=3, dim=-1),
    lambda m, x: m.diff(x, n=9, dim=0),                        # n past the length: empty
    lambda m, x: m.diff(x, n=0),                               # a copy (CopyBackwards)
    lambda m, x: m.diff(x, prepend=x[:, :2] * 2),
    lambda m, x: m.diff(x, n=2, dim=0, append=x[:1] + 1),
    lambda m, x: m.diff(x, dim=0, prepend=x[1:2], append=x[:2].double()),
    lambda m, x: m.diff(x.t()),
])
def test_diff_matches_torch(fn):
    e, t = check(fn, arr(4, 5))
    assert _name(e) == _name(t)


@pytest.mark.parametrize("make", [noncontig, negstride])
def test_diff_strided(make):
    check(lambda m, x: m.diff(x, n=2), make(3, 6))


@pytest.mark.parametrize("fn", [
    lambda m, x: m.diff(x),
    lambda m, x: m.diff(x.to(m.uint8), n=2),                   # wraps around
    lambda m, x: m.diff(x > 0, n=2),                           # xor for bool
    lambda m, x: m.diff(x, append=m.tensor([[1.5], [2.5]])),   # promotes through cat
])
def test_diff_other_dtypes(fn):
    check(fn, arr(2, 6, dtype="int64", low=-5, high=9))


def test_diff_gradients_fd():
    fd_check(lambda x: ember.diff(x, n=2, dim=0), arr(5, 3))
    fd_check(lambda x, p: ember.diff(x, prepend=p), arr(2, 4), arr(2, 3))
    gradgrad_check(lambda x: ember.diff(x, n=2) ** 2, arr(3, 4))


@pytest.mark.parametrize("fn, match", [
    (lambda m, x: m.diff(x[0, 0]), "at least one-dimensional"),
    (lambda m, x: m.diff(x, n=-1), "order must be non-negative"),
    (lambda m, x: m.diff(x, dim=2), "Dimension out of range"),
    (lambda m, x: m.diff(x, prepend=x[0]), "same dimension as input"),
    (lambda m, x: m.diff(x, append=m.ones(4, 1)), "except along the differencing dimension"),
    (lambda m, x: m.diff(x, prepend=1.0), "must be Tensor"),
])
def test_diff_errors(fn, match):
    check_error(fn, arr(3, 4), match=match)


# --- kron ----------------------------------------------------------------------------------


@pytest.mark.parametrize("sa, sb", [
    ((2, 3), (4, 2)), ((3,), (2,)), ((2, 3), (2,)), ((2,), (2, 1, 3)), ((), (3,)), ((), ()),
    ((2, 0), (3, 2)),
])
def test_kron_matches_torch(sa, sb):
    e, t = check(lambda m, a, b: m.kron(a, b), arr(*sa), arr(*sb))
    assert _name(e) == _name(t)


def test_kron_strided_dtypes_and_method():
    check(lambda m, a, b: a.kron(b), noncontig(3, 2), negstride(2, 2))
    check(lambda m, a, b: m.kron(a, b), arr(2, 2, dtype="int64", high=5), arr(2, 3))
    check(lambda m, a, b: m.kron(a > 0, b > 0), arr(3), arr(2, 2))


def test_kron_gradients_fd():
    fd_check(lambda a, b: ember.kron(a, b), arr(2, 3), arr(3, 2))
    gradgrad_check(lambda a, b: ember.kron(a, b), arr(2, 2), arr(2))


def test_kron_error():
    check_error(lambda m, a: m.kron(a, 2), arr(2), match="must be Tensor")


# --- renorm --------------------------------------------------------------------------------


@pytest.mark.parametrize("fn", [
    lambda m, x: m.renorm(x, 2, 0, 1.5),
    lambda m, x: x.renorm(1, 1, 2.0),
    lambda m, x: m.renorm(x, 3.5, -1, 1.0),
    lambda m, x: m.renorm(x, float("inf"), 0, 0.8),
    lambda m, x: m.renorm(x, 2, 1, 100.0),                     # nothing exceeds: unchanged
    lambda m, x: m.renorm(x, 2, 0, 0),
    lambda m, x: m.renorm(x.t(), 2, 0, 1.0),
])
def test_renorm_matches_torch(fn):
    e, t = check(fn, arr(4, 3))
    assert _name(e) == _name(t) == "RenormBackward0"


def test_renorm_3d_half_and_empty():
    check(lambda m, x: m.renorm(x, 2, 1, 1.0), arr(2, 3, 4))
    check(lambda m, x: m.renorm(x.half(), 2, 0, 1.0).float(), arr(3, 4), atol=2e-3, rtol=2e-3)
    check(lambda m, x: m.renorm(x, 2, 0, 1.0), arr(2, 0))


def test_renorm_divides_by_norm_plus_eps():
    # Tiny norms show torch's 1e-7 in maxnorm / (norm + 1e-7).
    check(lambda m, x: m.renorm(x, 2, 0, 1e-7) * 1e7, arr(3, 4, dtype="float64") * 1e-6)


def test_renorm_gradients_fd():
    for p, dim in ((2, 0), (1.5, 1), (3, 0)):
        fd_check(lambda x, p=p, d=dim: ember.renorm(x, p, d, 1.0), arr(3, 4))
    gradgrad_check(lambda x: ember.renorm(x, 2, 0, 1.0), arr(3, 2))


@pytest.mark.parametrize("fn, match", [
    (lambda m, x: m.renorm(x, 0, 0, 1.0), "non-positive-norm not supported"),
    (lambda m, x: m.renorm(x, -1, 0, 1.0), "non-positive-norm not supported"),
    (lambda m, x: m.renorm(x, 2, 0, -5), "expected maxnorm to be >= 0 but got -5"),
    (lambda m, x: m.renorm(x[0], 2, 0, 1.0), "needs at least 2 dimensions, got 1 dimensions"),
    (lambda m, x: m.renorm(x, 2, 2, 1.0), "Dimension out of range"),
    (lambda m, x: m.renorm(x.long(), 2, 0, 1.0), "Expected a floating point"),
])
def test_renorm_errors(fn, match):
    check_error(fn, arr(3, 4), match=match)


# --- quantile, nanquantile -----------------------------------------------------------------

MODES = ["linear", "lower", "higher", "midpoint", "nearest"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fn", [
    lambda m, x, i: m.quantile(x, 0.3, interpolation=i),
    lambda m, x, i: x.quantile(0.75, dim=0, interpolation=i),
    lambda m, x, i: m.quantile(x, 0.5, dim=1, keepdim=True, interpolation=i),
    lambda m, x, i: m.quantile(x, 0.4, keepdim=True, interpolation=i),
    lambda m, x, i: m.quantile(x, m.tensor([0.0, 0.25, 0.6, 1.0]), dim=-1, interpolation=i),
    lambda m, x, i: m.quantile(x, m.tensor([0.1, 0.9]), dim=0, keepdim=True, interpolation=i),
    lambda m, x, i: m.quantile(x, m.tensor([0.33]), interpolation=i),
    lambda m, x, i: m.quantile(x, m.tensor(0.66), dim=1, interpolation=i),
    lambda m, x, i: m.nanquantile(x, 0.3, dim=1, interpolation=i),
    lambda m, x, i: x.nanquantile(m.tensor([0.2, 0.7]), interpolation=i),
])
def test_quantile_matches_torch(fn, mode):
    e, t = check(lambda m, x: fn(m, x, mode), distinct(4, 6))
    assert _name(e) == _name(t)


@pytest.mark.parametrize("mode", MODES)
def test_quantile_3d_and_strided(mode):
    check(lambda m, x: m.quantile(x, m.tensor([0.2, 0.5]), dim=1, interpolation=mode),
          distinct(2, 5, 3))
    check(lambda m, x: m.quantile(x, 0.35, dim=0, interpolation=mode),
          np.ascontiguousarray(distinct(5, 3)).T)
    check(lambda m, x: m.nanquantile(x, 0.8, dim=1, keepdim=True, interpolation=mode),
          distinct(5, 4)[::-1])


@pytest.mark.parametrize("mode", MODES)
def test_quantile_nan_rows(mode):
    x = distinct(3, 5, dtype="float64")
    x[0, 1] = np.nan
    x[2] = np.nan  # an all-NaN row
    for fn in (lambda m, x: m.quantile(x, m.tensor([0.2, 0.9], dtype=m.float64), dim=1,
                                       interpolation=mode),
               lambda m, x: m.nanquantile(x, m.tensor([0.2, 0.9], dtype=m.float64), dim=1,
                                          interpolation=mode),
               lambda m, x: m.nanquantile(x, 0.5, interpolation=mode),
               lambda m, x: m.quantile(x, 0.5, interpolation=mode)):
        check(fn, x)  # gradients go to the NaN that a NaN result was gathered from


def test_quantile_scalar_and_edge_q():
    check(lambda m, x: m.quantile(x, 0.3, dim=0, keepdim=True), np.array(2.5, "float32"))
    check(lambda m, x: m.quantile(x, 0.3, keepdim=True), np.array(2.5, "float32"))
    check(lambda m, x: m.quantile(x, 1), distinct(3, 2))
    check(lambda m, x: m.quantile(x, True), distinct(3, 2))
    check(lambda m, x: m.quantile(x, m.tensor([], dtype=m.float64), dim=0),
          distinct(3, 2, dtype="float64"), grad=False)


@pytest.mark.parametrize("mode", MODES)
def test_quantile_gradient_reaches_q(mode):
    # In torch the linear weight (ranks - floor(ranks)) carries q's gradient.
    check(lambda m, x, q: m.quantile(x, q, dim=1, interpolation=mode), distinct(3, 7),
          np.array([0.15, 0.55, 0.8], dtype=np.float32))
    check(lambda m, x, q: m.nanquantile(x, q, interpolation=mode), distinct(9),
          np.array(0.45, dtype=np.float32))


def test_quantile_gradients_fd():
    for mode in MODES:
        fd_check(lambda x, i=mode: ember.quantile(
            x, ember.tensor([0.2, 0.7], dtype=ember.float64), dim=0, interpolation=i),
            distinct(5, 3))
    fd_check(lambda x, q: ember.quantile(x, q, dim=1), distinct(2, 5), np.array([0.3, 0.6]))
    fd_check(lambda x: ember.nanquantile(x, 0.35, dim=1), distinct(3, 4))
    gradgrad_check(lambda x: ember.quantile(x, 0.4, dim=1) ** 2, distinct(2, 4))


@pytest.mark.parametrize("fn, match", [
    (lambda m, x: m.quantile(x, 1.5), "q must be in the range [0, 1] but got 1.5"),
    (lambda m, x: m.nanquantile(x, -0.1), "q must be in the range [0, 1] but got -0.1"),
    (lambda m, x: m.quantile(x, float("nan")), "but got nan"),
    (lambda m, x: m.quantile(x, m.tensor([0.3, 1.5])), "q values must be in the range [0, 1]"),
    (lambda m, x: m.quantile(x, m.tensor(float("nan"))), "q values must be in the range"),
    (lambda m, x: m.quantile(x, m.tensor([0.3], dtype=m.float64)), "same dtype as the input"),
    (lambda m, x: m.quantile(x, m.tensor([[0.3]])), "q must be a scalar or 1D tensor"),
    (lambda m, x: m.quantile(x.long(), 0.3), "must be either float or double dtype"),
    (lambda m, x: m.quantile(x.half(), 0.3), "must be either float or double dtype"),
    (lambda m, x: m.quantile(x, 0.3, interpolation="foo"), "interpolation must be one of"),
    (lambda m, x: m.quantile(x[:0], 0.3), "input tensor must be non-empty"),
    (lambda m, x: m.nanquantile(x[:, :0], 0.3, dim=0), "input tensor must be non-empty"),
    (lambda m, x: m.quantile(x, 0.3, dim=2), "Dimension out of range"),
    (lambda m, x: m.quantile(x, 0.3, dim=(0, 1)), "invalid combination of arguments"),
    (lambda m, x: m.quantile(x, [0.1, 0.2]), "invalid combination of arguments"),
])
def test_quantile_errors(fn, match):
    check_error(fn, arr(3, 4), match=match)
