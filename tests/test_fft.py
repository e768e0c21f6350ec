"""ember.fft against torch.fft: values, dtypes, shapes, grad_fn names and gradients for random
(complex) upstream gradients over n / s, dim and every norm; errors; fftfreq and shifts;
float64 finite differences with ember's gradcheck."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from oracle import check_error
from test_complex import ccheck

import ember

RNG = np.random.default_rng(11)
X = RNG.standard_normal((4, 6)).astype(np.float32)
Z = (RNG.standard_normal((4, 6)) + 1j * RNG.standard_normal((4, 6))).astype(np.complex64)
X64 = RNG.standard_normal((3, 4, 5))
Z64 = RNG.standard_normal((3, 5)) + 1j * RNG.standard_normal((3, 5))
NORMS = [None, "backward", "ortho", "forward"]

ONE_D = [(name, a) for name in ("fft", "ifft", "irfft", "hfft") for a in ("X", "Z")] + \
    [("rfft", "X"), ("ihfft", "X")]
INPUTS = {"X": X, "Z": Z}


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n", [None, 4, 6, 7, 9])
@pytest.mark.parametrize("name,inp", ONE_D)
def test_one_dim(name, inp, n, norm):
    ccheck(lambda m, t: getattr(m.fft, name)(t, n=n, norm=norm), INPUTS[inp], atol=1e-4)


@pytest.mark.parametrize("name,inp", ONE_D)
def test_one_dim_other_dim(name, inp):
    ccheck(lambda m, t: getattr(m.fft, name)(t, n=5, dim=0, norm="ortho"), INPUTS[inp],
           atol=1e-4)


N_D = [(name, a) for name in ("fft2", "ifft2", "fftn", "ifftn", "irfft2", "irfftn")
       for a in ("X", "Z")] + [("rfft2", "X"), ("rfftn", "X")]


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("s", [None, (3, 5), (5, 8), (-1, 7)])
@pytest.mark.parametrize("name,inp", N_D)
def test_n_dim(name, inp, s, norm):
    ccheck(lambda m, t: getattr(m.fft, name)(t, s=s, norm=norm), INPUTS[inp], atol=1e-4)


@pytest.mark.parametrize("fn", [
    lambda m, t: m.fft.fftn(t, dim=(0, 2)),
    lambda m, t: m.fft.fftn(t, s=(3, 4)),
    lambda m, t: m.fft.ifftn(t, dim=2, norm="forward"),
    lambda m, t: m.fft.rfftn(t, dim=(2, 0)),
    lambda m, t: m.fft.rfftn(t, s=(2, 6), dim=(0, 1), norm="ortho"),
    lambda m, t: m.fft.irfftn(t, s=(4, 6), dim=(2, 0)),
    lambda m, t: m.fft.irfftn(t),
    lambda m, t: m.fft.rfft2(t, dim=(0, 1)),
    lambda m, t: m.fft.irfft(m.fft.rfft(t)),
    lambda m, t: m.fft.fftshift(t) * 2,
    lambda m, t: m.fft.ifftshift(t, dim=(0, 2)) * 2,
    lambda m, t: m.fft.fftshift(m.fft.fft(t), dim=-1),
])
def test_float64_dims(fn):
    ccheck(fn, X64, atol=1e-9, rtol=1e-7)


@pytest.mark.parametrize("name", ["fft", "ifft", "irfft", "hfft", "fftn", "irfftn"])
def test_complex128(name):
    ccheck(lambda m, t: getattr(m.fft, name)(t), Z64, atol=1e-9, rtol=1e-7)


def test_integer_input_promotes_to_default_float():
    a = np.arange(6)
    for name in ("fft", "rfft", "ihfft", "fftn", "irfft"):
        e = getattr(ember.fft, name)(ember.tensor(a))
        t = getattr(torch.fft, name)(torch.tensor(a))
        assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]
        np.testing.assert_allclose(e.resolve_conj().numpy(), t.resolve_conj().numpy(),
                                   atol=1e-5)


def test_zero_dim_fftn_is_a_copy():
    ccheck(lambda m, t: m.fft.fftn(t), np.array(2.5, dtype=np.float32))


@pytest.mark.parametrize("fn", [
    lambda m: m.fft.rfft(m.ones(4, dtype=m.complex64)),
    lambda m: m.fft.ihfft(m.ones(4, dtype=m.complex64)),
    lambda m: m.fft.fft(m.ones(4), norm="bad"),
    lambda m: m.fft.fft(m.ones(4), n=0),
    lambda m: m.fft.fftn(m.ones(4, 6), dim=(0, 0)),
    lambda m: m.fft.fftn(m.ones(4, 6), s=(2,), dim=(0, 1)),
    lambda m: m.fft.fftn(m.ones(4, 6), s=(2, 2, 2)),
    lambda m: m.fft.fft(m.ones(4).half()),
    lambda m: m.fft.fft(m.ones(4, 6), dim=2),
    lambda m: m.fft.irfft(m.ones(1)),
    lambda m: m.fft.fft([1.0, 2.0]),
    lambda m: m.fft.fft(m.tensor(1.0)),
    lambda m: m.fft.rfftn(m.tensor(1.0)),
    lambda m: m.fft.irfftn(m.tensor(1.0)),
    lambda m: m.fft.fftshift(m.tensor(1.0)),
    lambda m: m.fft.fftfreq(4, dtype=m.int64),
])
def test_errors(fn):
    check_error(lambda m: fn(m))


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
@pytest.mark.parametrize("n,d", [(1, 1.0), (5, 1.0), (8, 0.1), (9, 2.5)])
@pytest.mark.parametrize("dtype", [None, "float64"])
def test_freq(name, n, d, dtype):
    kw = {} if dtype is None else {"dtype": getattr(ember, dtype)}
    tkw = {} if dtype is None else {"dtype": getattr(torch, dtype)}
    e = getattr(ember.fft, name)(n, d, **kw)
    t = getattr(torch.fft, name)(n, d, **tkw)
    assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_freq_requires_grad():
    assert ember.fft.fftfreq(4, requires_grad=True).requires_grad


@pytest.mark.parametrize("shape", [(5,), (4,), (3, 4), (2, 3, 5)])
@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
def test_shifts(name, shape):
    a = RNG.standard_normal(shape).astype(np.float32)
    for dim in (None, 0, -1):
        ccheck(lambda m, t, d=dim: getattr(m.fft, name)(t, dim=d) * 1, a)


GRADCHECK = {
    "fft": lambda x: ember.view_as_real(ember.fft.fft(x, n=7, norm="ortho")),
    "ifft_complex": lambda x: ember.view_as_real(ember.fft.ifft(x * (1 + 2j))),
    "rfft": lambda x: ember.view_as_real(ember.fft.rfft(x)),
    "rfft_pad": lambda x: ember.view_as_real(ember.fft.rfft(x, n=8, norm="forward")),
    "irfft": lambda x: ember.fft.irfft(ember.view_as_complex(x.reshape(3, 4, 2).contiguous())),
    "irfft_odd": lambda x: ember.fft.irfft(ember.view_as_complex(
        x.reshape(3, 4, 2).contiguous()), n=7),
    "hfft": lambda x: ember.fft.hfft(ember.view_as_complex(x.reshape(3, 4, 2).contiguous())),
    "ihfft": lambda x: ember.view_as_real(ember.fft.ihfft(x, norm="ortho")),
    "rfft2": lambda x: ember.view_as_real(ember.fft.rfft2(x)),
    "irfftn": lambda x: ember.fft.irfftn(ember.view_as_complex(
        x.reshape(3, 4, 2).contiguous()), s=(3, 5)),
}


@pytest.mark.parametrize("name", list(GRADCHECK))
def test_gradcheck_float64(name):
    x = ember.tensor(RNG.standard_normal((3, 8)), dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(GRADCHECK[name], (x,))


def test_create_graph_second_order():
    a = RNG.standard_normal(6)
    grads = []
    for lib in (ember, torch):
        t = lib.tensor(a, requires_grad=True)
        g, = lib.autograd.grad(lib.fft.rfft(t * t).abs().sum(), t, create_graph=True)
        g2, = lib.autograd.grad((g * g).sum(), t)
        grads.append(g2.detach().numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6, atol=1e-8)
