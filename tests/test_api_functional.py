"""nn.functional additions: affine_grid, grid_sample (every mode, padding and align_corners,
2-D and 3-D), the *_with_indices pools and the deprecated upsample functions, vs torch."""

import warnings

import numpy as np
import oracle
import pytest
from oracle import check, gradgrad_check, same

import ember
import ember.nn.functional as F

_RNG = np.random.default_rng(31)


def arr(*shape, **kw):
    return oracle.arr(*shape, rng=_RNG, **kw)


def _node(out):
    out = out[0] if isinstance(out, tuple | list) else out
    return type(out.grad_fn).__name__ if out.grad_fn is not None else None


def quiet(fn):
    def run(*args):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args)
    return run


@pytest.mark.parametrize("align", [True, False])
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 3, 1, 1), (2, 2, 3, 4, 5)])
def test_affine_grid(size, align):
    k = len(size) - 2
    e, t = check(quiet(lambda m, th: m.nn.functional.affine_grid(th, size, align)),
                 arr(2, k, k + 1))
    assert _node(e) == _node(t) == "AffineGridGeneratorBackward0"
    check(lambda m, th: m.nn.functional.affine_grid(th, list(size), align),
          arr(2, k, k + 1, dtype="float64"), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("fn", [
    lambda m: m.nn.functional.affine_grid(m.ones(2, 2, 3), (2, 3, 4)),
    lambda m: m.nn.functional.affine_grid(m.ones(2, 1, 3), (2, 3, 4, 5)),
    lambda m: m.nn.functional.affine_grid(m.ones(2, 2, 3, dtype=m.int64), (2, 3, 4, 5)),
    lambda m: m.nn.functional.affine_grid(m.ones(2, 2, 3), (2, 3, 0, 5), False),
])
def test_affine_grid_errors(fn):
    same(quiet(fn))


def test_align_corners_warnings():
    for fn in (lambda: F.affine_grid(ember.ones(1, 2, 3), (1, 1, 2, 2)),
               lambda: F.grid_sample(ember.ones(1, 1, 2, 2), ember.zeros(1, 1, 1, 2))):
        with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
            fn()


X2, G2 = arr(2, 3, 4, 5), arr(2, 6, 7, 2, low=-1.3, high=1.3)
X3, G3 = arr(2, 2, 3, 4, 5), arr(2, 3, 4, 5, 3, low=-1.3, high=1.3)


@pytest.mark.parametrize("align", [True, False])
@pytest.mark.parametrize("pad", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_grid_sample_2d(mode, pad, align):
    check(lambda m, x, g: m.nn.functional.grid_sample(x, g, mode, pad, align), X2, G2,
          atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("align", [True, False])
@pytest.mark.parametrize("pad", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_grid_sample_3d(mode, pad, align):
    check(lambda m, x, g: m.nn.functional.grid_sample(x, g, mode, pad, align), X3, G3,
          atol=1e-4, rtol=1e-4)


def test_grid_sample_float64_and_double_backward():
    check(lambda m, x, g: m.nn.functional.grid_sample(x, g, "bicubic", "reflection", False),
          X2.astype("float64"), G2.astype("float64"), rtol=1e-10, atol=1e-10)
    gradgrad_check(lambda x, g: F.grid_sample(x, g, "bilinear", "zeros", True),
                   arr(1, 1, 3, 3, dtype="float64"), arr(1, 2, 2, 2, dtype="float64",
                                                         low=-0.9, high=0.9))


def test_spatial_transformer_round_trip():
    """The identity affine grid samples the input back exactly (align_corners either way)."""
    for align in (True, False):
        theta = ember.tensor([[[1.0, 0, 0], [0, 1, 0]]]).expand(2, 2, 3)
        grid = F.affine_grid(theta, X2.shape, align)
        out = F.grid_sample(ember.tensor(X2), grid, align_corners=align)
        np.testing.assert_allclose(out.numpy(), X2, atol=1e-5)


@pytest.mark.parametrize("fn", [
    lambda m: m.nn.functional.grid_sample(m.ones(1, 1, 2, 2), m.zeros(1, 1, 1, 2), "foo"),
    lambda m: m.nn.functional.grid_sample(m.ones(1, 1, 2, 2), m.zeros(1, 1, 1, 2), "bilinear",
                                          "foo"),
    lambda m: m.nn.functional.grid_sample(m.ones(1, 1, 2, 2), m.zeros(1, 1, 1, 1), "bilinear",
                                          "zeros", False),
    lambda m: m.nn.functional.grid_sample(m.ones(1, 2, 2), m.zeros(2, 1, 1, 2), "bilinear",
                                          "zeros", False),
    lambda m: m.nn.functional.grid_sample(m.ones(1, 1, 2, 2, 2), m.zeros(1, 1, 1, 1, 3),
                                          "bicubic", "zeros", False),
    lambda m: m.nn.functional.grid_sample(m.ones(1, 1, 0, 2), m.zeros(1, 1, 1, 2), "bilinear",
                                          "zeros", False),
])
def test_grid_sample_errors(fn):
    same(fn)


P = arr(2, 3, 8, 8)


@pytest.mark.parametrize("fn", [
    lambda m, x: m.nn.functional.max_pool1d_with_indices(x[0], 2),
    lambda m, x: m.nn.functional.max_pool2d_with_indices(x, 3, 2, 1),
    lambda m, x: m.nn.functional.max_pool3d_with_indices(x[None], 2),
    lambda m, x: m.nn.functional.adaptive_max_pool1d_with_indices(x[0], 3),
    lambda m, x: m.nn.functional.adaptive_max_pool2d_with_indices(x, (3, 2)),
    lambda m, x: m.nn.functional.adaptive_max_pool3d_with_indices(x[None], 2),
])
def test_with_indices(fn):
    e, t = check(fn, P)
    assert _node(e) == _node(t) and isinstance(e, tuple) and len(e) == 2


@pytest.mark.parametrize("fn", [
    lambda m, x: m.nn.functional.upsample(x, scale_factor=2),
    lambda m, x: m.nn.functional.upsample(x, size=(5, 7), mode="bilinear", align_corners=False),
    lambda m, x: m.nn.functional.upsample_nearest(x, scale_factor=2),
    lambda m, x: m.nn.functional.upsample_bilinear(x, size=(5, 9)),
])
def test_upsample(fn):
    e, t = check(quiet(fn), P[:, :, :4, :3])
    assert _node(e) == _node(t)
    with pytest.warns(UserWarning, match="is deprecated. Use `nn.functional.interpolate`"):
        fn(ember, ember.tensor(P))


def test_grid_constants():
    same(lambda m: (m.nn.functional.GRID_SAMPLE_INTERPOLATION_MODES,
                    m.nn.functional.GRID_SAMPLE_PADDING_MODES))
