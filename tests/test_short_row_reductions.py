"""Softmax and log_softmax over short last-axis rows take their row sums as matrix-vector
products and their row maxima down a transposed copy (``_common.row_sum`` / ``row_max``):
the same values as torch's, NaN and infinities included, forward and backward, on tensors big
enough to take that path."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import check

from ember.ops._common import row_max, row_sum, short_rows


def _rows(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    flat = x.reshape(-1, shape[-1])
    w = shape[-1]
    flat[1, 3 % w] = np.inf  # a row with +inf: NaN, as torch's kernels give
    flat[2, :] = -np.inf  # all -inf: NaN
    flat[3, 0] = np.nan
    flat[4, 1 % w] = -np.inf  # one -inf: a zero probability
    flat[5, :] = 0.0
    flat[6, 2 % w] = -0.0
    return x


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(16, 4, 32, 32), (2048, 8), (64, 100), (8, 2048)])
@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_short_rows_match_torch(fn, shape, dtype):
    x = _rows(shape, dtype)
    assert short_rows(x, -1, 1024) == (shape[-1] <= 1024)  # (8, 2048): NumPy's own sum
    check(lambda lib, t: getattr(lib, fn)(t, -1), x, atol=1e-6, rtol=1e-5)


def test_other_dims_and_layouts_keep_numpy_reductions():
    x = _rows((64, 32, 16), "float32")
    check(lambda lib, t: lib.softmax(t, 1), x, atol=1e-6, rtol=1e-5)
    check(lambda lib, t: lib.log_softmax(t.transpose(0, 2), -1), x, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("shape", [(4096, 1), (512, 8), (128, 32), (128, 33), (16, 1024)])
def test_row_helpers_equal_numpy(shape):
    x = _rows(shape, "float64", seed=1)
    assert short_rows(x, -1, 1024)  # the matrix-vector path is the one tested
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(row_max(x, -1), x.max(-1, keepdims=True))
        got, ref = row_sum(x, 1), x.sum(-1, keepdims=True)
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_layer_norm_over_short_rows_matches_torch(dtype):
    x = _rows((16, 32, 64), dtype, seed=2)
    rng = np.random.default_rng(3)
    w, b = rng.standard_normal((2, 64)).astype(dtype)
    assert short_rows(x, -1, 1024)
    check(lambda lib, t, w, b: lib.nn.functional.layer_norm(t, (64,), w, b), x, w, b,
          atol=1e-5, rtol=1e-4)
