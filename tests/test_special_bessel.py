"""torch.special's Cephes functions against real torch: the Bessel-type functions of one
argument, the orthogonal polynomials p_n(x), and the Hurwitz zeta function, in float32 and
float64, over wide ranges (negative, large, near zeros, poles and branch points, +-0, +-inf,
NaN); dtype promotion, broadcasting, Python-number arguments, out=, errors and autograd."""

from __future__ import annotations

import warnings

import mpmath
import numpy as np
import pytest
import torch

import ember
from tests.oracle import fd_check, gradgrad_check


def _rng() -> np.random.Generator:
    """A fresh generator per use: each test sees the same numbers however tests are
    distributed over workers or ordered."""
    return np.random.default_rng(18)


UNARY = ("airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0",
         "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
         "spherical_bessel_j0")
POLYNOMIALS = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
               "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
               "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
               "laguerre_polynomial_l", "legendre_polynomial_p")
DTYPES = (np.float32, np.float64)


def _compare(e: np.ndarray, t: np.ndarray, rtol, atol, what: str, exact=None,
             slack=0.0) -> None:
    """Same dtype and shape, NaN where torch has NaN, the same infinities, and the finite
    values within ``atol + rtol * |torch|`` (arrays allowed for both). Where not, and
    ``exact(i)`` gives the true value at flat index ``i`` (mpmath) and a bound on the rounding
    error of the evaluation, ember may be no further from the truth than that bound, four
    times torch, or ``slack`` (torch's float32 libm differs from NumPy's where a result is
    ill-conditioned: near the zeros of a Bessel function, near x = +-1 for a polynomial)."""
    assert e.dtype == t.dtype and e.shape == t.shape, what
    nan = np.isnan(t)
    bad = np.flatnonzero(np.isnan(e) != nan)
    assert not bad.size, f"{what}: NaN pattern differs at {bad[:5]}: {e.flat[bad[:5]]} vs " \
                         f"{t.flat[bad[:5]]}"
    inf = np.isinf(t) | np.isinf(e)
    bad = np.flatnonzero(inf & (e != t))
    assert not bad.size, f"{what}: infinities differ: {e.flat[bad[:5]]} vs {t.flat[bad[:5]]}"
    fin = ~nan & ~inf
    tol = np.broadcast_to(atol + rtol * np.abs(t), t.shape)
    with np.errstate(invalid="ignore"):  # inf - inf where both are the same infinity
        err = np.abs(e.astype(np.float64) - t)
    worst = np.flatnonzero(fin & (err > tol))
    if exact is not None:
        keep = []
        for i in worst:
            true, bound = exact(i)
            off = abs(float(e.flat[i]) - true)
            if off > max(4 * abs(float(t.flat[i]) - true) + tol.flat[i], bound,
                         np.broadcast_to(slack, t.shape).flat[i]):
                keep.append(i)
        worst = np.array(keep, dtype=np.int64)
    assert not worst.size, f"{what}: {worst.size} values off, e.g. {e.flat[worst[:5]]} vs " \
                           f"{t.flat[worst[:5]]}"


def _eps(dt) -> float:
    return float(np.finfo(dt).eps)


# --- one-argument functions ----------------------------------------------------------------

# Branch points of torch's kernels, to test on both sides.
_BREAKS = (0.5, 1e-5, 2.0, 2.09, 5.0, 8.3203353, 103.892)


def _zeros() -> list:
    """The first zeros of J0, J1, Y0, Y1 (mpmath), where relative error is largest."""
    out = []
    for k in range(1, 8):
        out += [float(mpmath.besseljzero(0, k)), float(mpmath.besseljzero(1, k)),
                float(mpmath.besselyzero(0, k)), float(mpmath.besselyzero(1, k)),
                float(mpmath.airyaizero(k))]
    return out


def _unary_grid(dt) -> np.ndarray:
    rng = _rng()
    big = np.finfo(dt).max
    mags = np.logspace(-30, np.log10(big) - 1, 600)
    edges = np.array(_BREAKS + tuple(-b for b in _BREAKS))
    near = np.concatenate([np.nextafter(edges.astype(dt), dt(np.inf)),
                           np.nextafter(edges.astype(dt), dt(-np.inf)), edges.astype(dt)])
    x = np.concatenate([rng.uniform(-12, 12, 4000), rng.uniform(-300, 300, 1000), mags, -mags,
                        _zeros(), near, [0.0, -0.0, np.inf, -np.inf, np.nan, big, -big]])
    return x.astype(dt)


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("name", UNARY)
def test_unary_values(name, dt):
    x = _unary_grid(dt)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no NumPy warnings leak out
        e = getattr(ember.special, name)(ember.tensor(x)).numpy()
    t = getattr(torch.special, name)(torch.from_numpy(x)).numpy()
    # The kernels are bounded by ~1 where they cancel (zeros of J, Y, Ai); float32 is
    # evaluated in float32 as in torch, with other libm rounding.
    _compare(e, t, rtol=64 * _eps(dt), atol=16 * _eps(dt), what=name)


@pytest.mark.parametrize("name", UNARY)
def test_unary_shapes_and_layouts(name):
    rng = _rng()
    fn_e, fn_t = getattr(ember.special, name), getattr(torch.special, name)
    base = rng.uniform(-6, 6, (5, 4)).astype(np.float32)
    for a in (base.T, base[::-1], base[1:2, 3], np.empty((0, 3), np.float32)):
        e, t = fn_e(ember.from_numpy(a)), fn_t(torch.from_numpy(np.ascontiguousarray(a)))
        assert tuple(e.shape) == tuple(t.shape) and e.dtype == ember.float32
        _compare(e.numpy(), t.numpy(), 1e-5, 1e-6, name)


@pytest.mark.parametrize("name", UNARY)
def test_unary_promotion_and_errors(name):
    fn_e, fn_t = getattr(ember.special, name), getattr(torch.special, name)
    for vals, edt, tdt in (([1, 2, 3], ember.int64, torch.int64), ([True, False], ember.bool,
                                                                    torch.bool)):
        e, t = fn_e(ember.tensor(vals, dtype=edt)), fn_t(torch.tensor(vals, dtype=tdt))
        assert e.dtype == ember.float32 and t.dtype == torch.float32
        _compare(e.numpy(), t.numpy(), 1e-6, 1e-7, name)
    ember.set_default_dtype(ember.float64)
    torch.set_default_dtype(torch.float64)
    try:
        e, t = fn_e(ember.tensor([1, 2])), fn_t(torch.tensor([1, 2]))
        assert e.dtype == ember.float64 and t.dtype == torch.float64
    finally:
        ember.set_default_dtype(ember.float32)
        torch.set_default_dtype(torch.float32)
    for edt, tdt in ((ember.float16, torch.float16), (ember.bfloat16, torch.bfloat16),
                     (ember.complex64, torch.complex64)):
        with pytest.raises(NotImplementedError) as te:
            fn_t(torch.ones(2, dtype=tdt))
        with pytest.raises(NotImplementedError) as ee:
            fn_e(ember.ones(2, dtype=edt))
        assert str(ee.value) == str(te.value)
    with pytest.raises(TypeError) as te:
        fn_t(2.0)
    with pytest.raises(TypeError) as ee:
        fn_e(2.0)
    assert str(ee.value) == str(te.value)
    kw = "x" if "'x'" in str(te.value) else "input"  # torch's parameter name, by keyword too
    e, t = fn_e(**{kw: ember.tensor([0.5])}), fn_t(**{kw: torch.tensor([0.5])})
    _compare(e.numpy(), t.numpy(), 1e-6, 1e-7, name)


# --- polynomials ---------------------------------------------------------------------------

_DEGREES = np.array([-3, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 20, 33, 50, 100, 128, 129,
                     200, 512, 513, 1000, 2.5, 7.9, -0.5, np.nan, np.inf, -np.inf, 1e30])
# torch's kernels leave the result uninitialised when x is NaN and n >= 2 (``T r;`` returned
# without a step); ember gives NaN there, which is compared separately.
_UNINITIALISED = {n for n in POLYNOMIALS if n not in ("chebyshev_polynomial_t",
                                                      "hermite_polynomial_h",
                                                      "hermite_polynomial_he")}


def _polynomial_grid(dt):
    rng = _rng()
    x = np.concatenate([rng.uniform(-1.1, 1.1, 120), rng.uniform(-0.1, 1.1, 80),
                        rng.uniform(-25, 25, 40), [0.0, -0.0, 1.0, -1.0, 0.5, 1e-7, 1 - 1e-7,
                                                    -1 + 1e-7, 2.0, -2.0, np.nan, np.inf,
                                                    -np.inf, 1e20, -1e20]])
    xg, ng = np.meshgrid(x.astype(dt), _DEGREES.astype(dt))
    return xg, ng


_FIRST = {"t": lambda v: v, "u": lambda v: 2 * v, "v": lambda v: 2 * v - 1,
          "w": lambda v: 2 * v + 1, "h": lambda v: 2 * v, "he": lambda v: v,
          "l": lambda v: 1 - v, "p": lambda v: v}
_STEP = {"h": lambda v, p, q, j: 2 * v * q - 2 * j * p, "he": lambda v, p, q, j: v * q - j * p,
         "l": lambda v, p, q, j: ((2 * j + 1 - v) * q - j * p) / (j + 1),
         "p": lambda v, p, q, j: ((2 * j + 1) * v * q - j * p) / (j + 1)}


def _exact_polynomial(name: str, x: float, n: float, eps: float) -> tuple[float, float]:
    """p_n(x) by its three-term recurrence in 80-digit arithmetic, and the classic bound on
    the rounding error of the recurrence in working precision: 8 n eps times the same
    recurrence run on |x| with every term added (no cancellation)."""
    k = int(n)
    kind = name.rsplit("_", 1)[1]
    with mpmath.workdps(80):
        v = mpmath.mpf(x)
        if name.startswith("shifted_"):
            v = 2 * v - 1
        if k <= 0:
            return (1.0 if k == 0 else 0.0), 0.0
        step = _STEP.get(kind, lambda v, p, q, j: 2 * v * q - p)
        p, q = mpmath.mpf(1), _FIRST[kind](v)
        ap, aq = mpmath.mpf(1), abs(q) + 1
        av = -abs(v) if kind == "l" else abs(v)  # Laguerre's x enters as 2j + 1 - x
        for j in range(1, k):
            p, q = q, step(v, p, q, j)
            ap, aq = aq, step(av, -ap, aq, j)  # p enters with a minus sign in every step
        return float(q), float(8 * max(k, 1) * eps * aq)


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_values(name, dt):
    x, n = _polynomial_grid(dt)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        e = getattr(ember.special, name)(ember.tensor(x), ember.tensor(n)).numpy()
    t = getattr(torch.special, name)(torch.from_numpy(x), torch.from_numpy(n)).numpy()
    if name in _UNINITIALISED:
        garbage = np.isnan(x) & (n >= 2) & np.isfinite(n) & (n < 1e18)
        assert np.isnan(e[garbage]).all()
        x, n, e, t = x[~garbage], n[~garbage], e[~garbage], t[~garbage]
    deg = np.where(np.isfinite(n), np.abs(n.astype(np.float64)), 0.0)
    # Each recurrence step and the n * acos(x) of the closed forms add rounding: the error
    # grows with the degree (and an overflow to inf or NaN must fall on the same degree).
    tol = 8 * np.maximum(deg, 1) * _eps(dt)
    # Chebyshev's closed forms in theta = acos(x) (acos(2x - 1)) divide by sin or cos of theta
    # (or theta / 2), which vanish at the ends: float32's acos, rounded differently by each
    # libm, moves the result by ~n^2 ulp there.
    slack = 0.0
    if "chebyshev" in name and dt == np.float32:
        slack = 16 * np.maximum(deg, 1) ** 2 * _eps(dt) * (np.abs(t) + 1)
    _compare(e, t, rtol=tol, atol=tol, what=name, slack=slack,
             exact=lambda i: _exact_polynomial(name, float(x.flat[i]), float(n.flat[i]),
                                               _eps(dt)))


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_scalars_broadcasting_promotion(name):
    rng = _rng()
    x = rng.uniform(-1.5, 1.5, (3, 1)).astype(np.float32)
    n = np.array([0, 1, 4, 9], dtype=np.int64)
    cases = [
        (lambda lib, m: fn(lib, name)(m(x), m(n))),  # float32 x, int64 n: float32
        (lambda lib, m: fn(lib, name)(m(x), 5)),
        (lambda lib, m: fn(lib, name)(m(x), 3.7)),  # n truncated
        (lambda lib, m: fn(lib, name)(0.3, m(n))),  # Python x, int n: default float
        (lambda lib, m: fn(lib, name)(0.3, m(n.astype(np.float64)))),
        (lambda lib, m: fn(lib, name)(m(x.astype(np.int64)), m(n))),
        (lambda lib, m: fn(lib, name)(m(x), m(n.astype(np.int32)[:1].reshape(())))),
        (lambda lib, m: fn(lib, name)(m(x.astype(np.float64)), m(n.astype(np.float32)))),
    ]
    for case in cases:
        e, t = case(ember, ember.from_numpy), case(torch, torch.from_numpy)
        assert tuple(e.shape) == tuple(t.shape)
        assert str(e.dtype) == str(t.dtype).replace("torch", "ember")
        _compare(e.numpy(), t.numpy(), 1e-5, 1e-5, name)
    _same_error(lambda lib: fn(lib, name)(0.5, 3), TypeError)
    _same_error(lambda lib: fn(lib, name)(lib.ones(2), lib.ones(3)), RuntimeError)
    _same_error(lambda lib: fn(lib, name)(lib.ones(2, dtype=lib.float16), 3),
                NotImplementedError)
    _same_error(lambda lib: fn(lib, name)(lib.ones(2, dtype=lib.complex64), 3),
                NotImplementedError)


def fn(lib, name):
    return getattr(lib.special, name)


def _same_error(run, exc) -> None:
    with pytest.raises(exc) as te:
        run(torch)
    with pytest.raises(exc) as ee:
        run(ember)
    assert str(ee.value) == str(te.value)


def test_polynomial_large_degree_closed_form():
    """Chebyshev inside (-1, 1) above degree 6 or 8 is cos/sin of n acos(x): a huge degree
    costs nothing (the recurrence would take n steps)."""
    x = np.linspace(-0.99, 0.99, 50)
    for name in ("chebyshev_polynomial_t", "chebyshev_polynomial_u",
                 "chebyshev_polynomial_v", "chebyshev_polynomial_w"):
        e = fn(ember, name)(ember.tensor(x), 10 ** 9).numpy()
        t = fn(torch, name)(torch.tensor(x), 10 ** 9).numpy()
        _compare(e, t, 1e-6, 1e-6, name)  # n acos(x) ~ 1e9: both round it alike


# --- zeta ----------------------------------------------------------------------------------

def _zeta_grid(dt):
    rng = _rng()
    x = np.concatenate([rng.uniform(0.5, 5, 40), rng.uniform(1, 80, 20),
                        [1.0, 2.0, 3.0, 4.0, 10.0, 0.5, -1.0, -2.0, 1 + 1e-6, 1e3, np.nan,
                         np.inf, -np.inf]])
    q = np.concatenate([rng.uniform(-10, 10, 40), rng.uniform(0, 200, 20),
                        [1.0, 2.0, 0.5, 0.0, -0.0, -1.0, -2.5, -3.0, -20.5, 1e-8, 1e10, np.nan,
                         np.inf, -np.inf]])
    xg, qg = np.meshgrid(x.astype(dt), q.astype(dt))
    return xg, qg


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.__name__)
def test_zeta_values(dt):
    x, q = _zeta_grid(dt)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        e = ember.special.zeta(ember.tensor(x), ember.tensor(q)).numpy()
    t = torch.special.zeta(torch.from_numpy(x), torch.from_numpy(q)).numpy()
    # computed in float64 (torch's accumulate type) and rounded: float32 within an ulp or two
    _compare(e, t, rtol=4 * _eps(dt) if dt == np.float32 else 256 * _eps(dt),
             atol=np.finfo(dt).tiny, what="zeta")  # subnormal float32 results lose bits


def test_zeta_scalars_broadcasting_promotion_errors():
    rng = _rng()
    x = rng.uniform(1.5, 4, (2, 1)).astype(np.float32)
    q = rng.uniform(0.5, 3, (3,)).astype(np.float32)
    cases = [
        lambda lib, m: lib.special.zeta(m(x), m(q)),
        lambda lib, m: lib.special.zeta(m(x), 2.5),
        lambda lib, m: lib.special.zeta(3, m(q)),
        lambda lib, m: lib.special.zeta(m(x), m(q.astype(np.float64))),
        lambda lib, m: lib.special.zeta(m(np.array([2, 3])), m(np.array([1, 2]))),
        lambda lib, m: lib.special.zeta(m(np.array([2, 3])), 1.5),
    ]
    for case in cases:
        e, t = case(ember, ember.from_numpy), case(torch, torch.from_numpy)
        assert tuple(e.shape) == tuple(t.shape)
        assert str(e.dtype) == str(t.dtype).replace("torch", "ember")
        _compare(e.numpy(), t.numpy(), 1e-6, 0, "zeta")
    _same_error(lambda lib: lib.special.zeta(2.0, 3.0), TypeError)
    _same_error(lambda lib: lib.special.zeta(lib.ones(2), lib.ones(3)), RuntimeError)
    _same_error(lambda lib: lib.special.zeta(lib.ones(2, dtype=lib.bfloat16), 2.0),
                NotImplementedError)


def test_zeta_autograd_nodes_and_gradient():
    rng = _rng()
    x = rng.uniform(1.5, 4, (2, 3))
    q = rng.uniform(0.5, 3, (2, 3))
    g = rng.standard_normal((2, 3))
    res = {}
    for lib in (ember, torch):
        xt = lib.tensor(x, requires_grad=True)
        qt = lib.tensor(q, requires_grad=True)
        out = lib.special.zeta(xt, qt)
        names = [type(out.grad_fn).__name__,
                 type(lib.special.zeta(xt, 2.0).grad_fn).__name__,
                 type(lib.special.zeta(2.0, qt).grad_fn).__name__]
        (dq,) = lib.autograd.grad(out, [qt], lib.tensor(g))  # x requires grad: not asked for
        (dq1,) = lib.autograd.grad(lib.special.zeta(2.5, qt), [qt], lib.tensor(g))
        res[lib] = names, dq.detach().numpy(), dq1.detach().numpy()
    assert res[ember][0] == res[torch][0] == ["SpecialZetaBackward0", "SpecialZetaBackward2",
                                              "SpecialZetaBackward1"]
    for a, b in zip(res[ember][1:], res[torch][1:]):
        np.testing.assert_allclose(a, b, rtol=1e-12)


@pytest.mark.parametrize("scalar_q", [False, True])
def test_zeta_no_derivative_for_x(scalar_q):
    def run(lib):
        x = lib.tensor([2.5, 3.0], requires_grad=True)
        q = 2.0 if scalar_q else lib.tensor([1.5, 2.0], requires_grad=True)
        lib.special.zeta(x, q).sum().backward()
    _same_error(run, NotImplementedError)


def test_zeta_forward_ad_not_implemented():
    for make in (lambda lib, d: lib.special.zeta(lib.tensor([2.5]), d),
                 lambda lib, d: lib.special.zeta(d, 2.0), lambda lib, d: lib.special.zeta(2.0, d)):
        def run(lib, make=make):
            fw = lib.autograd.forward_ad
            with fw.dual_level():
                make(lib, fw.make_dual(lib.tensor([1.5]), lib.tensor([1.0])))
        _same_error(run, NotImplementedError)


def test_no_derivative_under_forward_ad():
    """The other functions have no tangent: the result is a plain tensor."""
    for lib in (ember, torch):
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            d = fw.make_dual(lib.tensor([1.5]), lib.tensor([1.0]))
            assert fw.unpack_dual(lib.special.bessel_j0(d)).tangent is None
            assert fw.unpack_dual(lib.special.legendre_polynomial_p(d, 3)).tangent is None


def test_zeta_gradcheck_q():
    rng = _rng()
    x = rng.uniform(1.5, 4, (4,))
    q = rng.uniform(0.5, 3, (4,))
    fd_check(lambda t: ember.special.zeta(ember.tensor(x), t), q)
    gradgrad_check(lambda t: ember.special.zeta(ember.tensor(x), t), q)
    fd_check(lambda t: ember.special.zeta(2.5, t), q)


# --- autograd and out= for all ---------------------------------------------------------------

@pytest.mark.parametrize("name", UNARY + POLYNOMIALS)
def test_no_derivative(name):
    def run(lib):
        x = lib.tensor([0.3, 0.7], requires_grad=True)
        y = fn(lib, name)(x) if name in UNARY else fn(lib, name)(x, 3)
        assert not y.requires_grad and y.grad_fn is None
        y.sum().backward()
    _same_error(run, RuntimeError)


@pytest.mark.parametrize("name", UNARY + POLYNOMIALS + ("zeta",))
def test_out(name):
    x = np.array([0.3, 0.7, 1.5], np.float32)

    def call(lib, out, x=x, grad=False):
        t = lib.tensor(x, requires_grad=grad)
        extra = () if name in UNARY else (lib.tensor([3.0, 2.0, 1.5]),) if name == "zeta" \
            else (3,)
        return fn(lib, name)(t, *extra, out=out)

    for lib_out in ((lambda lib: lib.empty(3)), (lambda lib: lib.empty(3, dtype=lib.float64)),
                    (lambda lib: lib.empty(0))):
        oe, ot = lib_out(ember), lib_out(torch)
        re, rt = call(ember, oe), call(torch, ot)
        assert re is oe and rt is ot
        assert str(oe.dtype) == str(ot.dtype).replace("torch", "ember")
        _compare(oe.numpy(), ot.numpy(), 1e-6, 1e-6, name)
    _same_error(lambda lib: call(lib, lib.empty(3, dtype=lib.int64)), RuntimeError)
    if name == "zeta":
        _same_error(lambda lib: call(lib, lib.empty(3), grad=True), RuntimeError)
    else:  # nothing to differentiate: an input that requires grad is fine
        oe, ot = ember.empty(3), torch.empty(3)
        call(ember, oe, grad=True)
        call(torch, ot, grad=True)
        assert not oe.requires_grad and not ot.requires_grad
        _compare(oe.numpy(), ot.numpy(), 1e-6, 1e-6, name)


def test_namespace():
    for name in UNARY + POLYNOMIALS + ("zeta",):
        assert name in ember.special.__all__ and callable(getattr(ember.special, name))
    # torch has no top-level aliases of these (only torch._C._special)
    assert not any(hasattr(torch, n) for n in UNARY + POLYNOMIALS)
