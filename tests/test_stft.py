"""stft / istft against torch: values, dtypes, grad_fn names and gradients for random complex
upstream gradients; round trips; warnings and errors; float64 gradcheck."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from oracle import check_error
from test_complex import ccheck

import ember

RNG = np.random.default_rng(5)
X = RNG.standard_normal(40).astype(np.float32)
XB = RNG.standard_normal((3, 33))
HANN = torch.hann_window(8).numpy()


def _hann(m, n=8):
    return m.tensor(HANN[:n] if n == 8 else torch.hann_window(n).numpy())


STFT = {
    "default": (lambda m, t: m.stft(t, 8, return_complex=True), X),
    "hann": (lambda m, t: m.stft(t, 8, window=_hann(m), return_complex=True), X),
    "hop_win": (lambda m, t: m.stft(t, 8, hop_length=3, win_length=6, window=_hann(m, 6),
                                    return_complex=True), X),
    "no_center": (lambda m, t: m.stft(t, 8, center=False, return_complex=True), X),
    "constant_normalized": (lambda m, t: m.stft(t, 8, pad_mode="constant", normalized=True,
                                                return_complex=True), X),
    "two_sided": (lambda m, t: m.stft(t, 8, onesided=False, return_complex=True), X),
    "batch_float64": (lambda m, t: m.stft(t, 10, hop_length=4, return_complex=True), XB),
    "replicate": (lambda m, t: m.stft(t, 10, pad_mode="replicate", return_complex=True), XB),
    "complex_input": (lambda m, t: m.stft(t * (1 + 1j), 8, return_complex=True), X),
    "method": (lambda m, t: t.stft(16, hop_length=5, return_complex=True), X),
}


@pytest.mark.parametrize("name", list(STFT))
def test_stft(name):
    fn, a = STFT[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ccheck(fn, a, atol=1e-4)


def test_stft_return_complex_false_is_view_as_real_with_warning():
    with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
        ember.stft(ember.tensor(X), 8, window=ember.ones(8), return_complex=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ccheck(lambda m, t: m.stft(t, 8, window=m.ones(8), return_complex=False), X)


def test_missing_window_warns():
    with pytest.warns(UserWarning, match="A window was not provided"):
        ember.stft(ember.tensor(X), 8, return_complex=True)
    s = ember.stft(ember.tensor(X), 8, window=ember.ones(8), return_complex=True)
    with pytest.warns(UserWarning, match="A window was not provided"):
        ember.istft(s, 8)


ISTFT = {
    "round_trip": (lambda m, t: m.istft(m.stft(t, 8, window=_hann(m), return_complex=True), 8,
                                        window=_hann(m)), X),
    "length_padded": (lambda m, t: m.istft(m.stft(t, 8, hop_length=2, return_complex=True), 8,
                                           hop_length=2, length=45), X),
    "length_cut": (lambda m, t: m.istft(m.stft(t, 8, return_complex=True), 8, length=30), X),
    "batch_normalized": (lambda m, t: m.istft(m.stft(t, 10, normalized=True,
                                                     return_complex=True), 10,
                                              normalized=True), XB),
    "no_center": (lambda m, t: m.istft(m.stft(t, 8, center=False, return_complex=True), 8,
                                       hop_length=2, center=False), X),
    "two_sided": (lambda m, t: m.istft(m.stft(t, 8, onesided=False, return_complex=True), 8,
                                       onesided=False), X),
    "complex_output": (lambda m, t: m.istft(m.stft(t * (1 + 1j), 8, return_complex=True), 8,
                                            return_complex=True), X),
    "win_length": (lambda m, t: m.istft(m.stft(t, 8, win_length=6, window=_hann(m, 6) + 0.1,
                                               return_complex=True), 8, win_length=6,
                                        window=_hann(m, 6) + 0.1), X),
}


@pytest.mark.parametrize("name", list(ISTFT))
def test_istft(name):
    fn, a = ISTFT[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ccheck(fn, a, atol=1e-4)


def test_round_trip_recovers_signal():
    x = ember.tensor(X)
    w = ember.tensor(HANN)
    y = ember.istft(ember.stft(x, 8, hop_length=2, window=w, return_complex=True), 8,
                    hop_length=2, window=w, length=40)
    np.testing.assert_allclose(y.numpy(), X, atol=1e-5)


S = (RNG.standard_normal((5, 11)) + 1j * RNG.standard_normal((5, 11))).astype(np.complex64)


@pytest.mark.parametrize("fn", [
    lambda m: m.stft(m.ones(20), 8),
    lambda m: m.stft(m.ones(20), 0, return_complex=True),
    lambda m: m.stft(m.ones(20), 30, return_complex=True, center=False),
    lambda m: m.stft(m.ones(20), 8, hop_length=0, return_complex=True),
    lambda m: m.stft(m.ones(20), 8, win_length=9, return_complex=True),
    lambda m: m.stft(m.ones(20), 8, window=m.ones(7), return_complex=True),
    lambda m: m.stft(m.ones(2, 2, 20), 8, return_complex=True),
    lambda m: m.stft(m.ones(20), 8, return_complex=True, pad_mode="bad"),
    lambda m: m.stft(m.ones(20, dtype=m.complex64), 8, onesided=True, return_complex=True),
    lambda m: m.istft(m.tensor(S), 6, window=m.ones(6)),
    lambda m: m.istft(m.tensor(S).real, 8, window=m.ones(8)),
    lambda m: m.istft(m.tensor(S), 8, window=m.ones(8), return_complex=True),
    lambda m: m.istft(m.tensor(S), 8, window=m.tensor(HANN), center=False),
])
def test_errors(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_error(lambda m: fn(m))


def test_gradcheck_float64():
    x = ember.tensor(RNG.standard_normal(24), dtype=ember.float64, requires_grad=True)
    w = ember.tensor(RNG.uniform(0.5, 1.0, 8), dtype=ember.float64)

    def f(t):
        s = ember.stft(t, 8, hop_length=3, window=w, return_complex=True)
        return ember.istft(s * (s.abs() + 1), 8, hop_length=3, window=w)

    assert ember.autograd.gradcheck(f, (x,))
