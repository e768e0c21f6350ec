"""scalar_tensor, range, asarray, frombuffer, from_file, empty_permuted, the window functions,
and ravel, diagflat, combinations, unravel_index, nonzero_static, isin, fill, index_put_
against torch."""

import array
import warnings

import numpy as np
import oracle
import pytest
import torch
from oracle import check, same

import ember

_RNG = np.random.default_rng(5)


def arr(*shape, **kw):
    return oracle.arr(*shape, rng=_RNG, **kw)


def _nodes(out):
    outs = out if isinstance(out, tuple | list) else (out,)
    return [type(o.grad_fn).__name__ if o.grad_fn is not None else None for o in outs]


def quiet(fn):
    def run(*args):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args)
    return run


@pytest.mark.parametrize("fn", [
    lambda m: m.scalar_tensor(3),
    lambda m: m.scalar_tensor(True),
    lambda m: m.scalar_tensor(2, dtype=m.int64),
    lambda m: m.scalar_tensor(1.5, requires_grad=True),
    lambda m: m.scalar_tensor("x"),
    lambda m: m.range(1, 4),
    lambda m: m.range(0, 1, 0.25),
    lambda m: m.range(1, 4, dtype=m.int64),
    lambda m: m.range(4, 1, -0.5, dtype=m.float64),
    lambda m: m.range(4, 1),
    lambda m: m.range(0, 1, 0),
])
def test_scalar_tensor_and_range(fn):
    same(quiet(fn))


def test_range_warns():
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        ember.range(0, 2)


def test_asarray():
    for lib in (ember, torch):
        a = np.arange(4, dtype=np.float32)
        t = lib.asarray(a)
        a[0] = 9
        assert t[0].item() == 9  # shares memory
        assert lib.asarray(a, copy=True).data_ptr() != t.data_ptr()
        x = lib.ones(2)
        assert lib.asarray(x) is x and lib.asarray(x, copy=True) is not x
        assert lib.asarray(x, dtype=lib.float64).dtype == lib.float64
        assert lib.asarray(x.clone(), requires_grad=True).requires_grad
    same(lambda m: m.asarray([1, 2]))
    same(lambda m: m.asarray([1.0, 2], dtype=m.float64))
    same(lambda m: m.asarray(3.5))
    same(lambda m: m.asarray(np.arange(3, dtype=np.int16)).dtype)


def test_frombuffer():
    for lib in (ember, torch):
        b = bytearray(b"\x01\x00\x00\x00\x02\x00\x00\x00")
        t = lib.frombuffer(b, dtype=lib.int32)
        b[0] = 5
        assert t.tolist() == [5, 2]
        t[1] = 7
        assert b[4] == 7
        assert lib.frombuffer(b, dtype=lib.int8, count=3, offset=1).tolist() == [0, 0, 0]
        assert lib.frombuffer(array.array("d", [1.5, 2.5]), dtype=lib.float64).tolist() == \
            [1.5, 2.5]
    same(lambda m: m.frombuffer(bytearray(), dtype=m.float32))
    same(lambda m: m.frombuffer(bytearray(b"\x01\x00\x00"), dtype=m.int32))
    same(lambda m: m.frombuffer(bytearray(4), dtype=m.int32, count=2))
    same(lambda m: m.frombuffer(bytearray(4), dtype=m.int8, offset=4))


def test_from_file(tmp_path):
    path = tmp_path / "data.bin"
    np.arange(6, dtype=np.float32).tofile(path)
    same(lambda m: m.from_file(str(path), size=4))
    same(lambda m: m.from_file(str(path), size=3, dtype=m.float64))
    same(lambda m: m.from_file(str(path), size=7))
    same(lambda m: m.from_file(str(path)))
    t = ember.from_file(str(path), shared=True, size=6)
    t[0] = 42
    del t
    assert np.fromfile(path, dtype=np.float32)[0] == 42


@pytest.mark.parametrize("fn", [
    lambda m: m.empty_permuted((2, 3, 4, 5), (0, 2, 3, 1)).stride(),
    lambda m: m.empty_permuted((2, 3), (1, 0), dtype=m.int64).stride(),
    lambda m: m.empty_permuted((2, 3), (1, 1)),
])
def test_empty_permuted(fn):
    same(fn)


WINDOWS = ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window"]


@pytest.mark.parametrize("name", WINDOWS)
@pytest.mark.parametrize("n", [0, 1, 2, 5, 6, 64])
@pytest.mark.parametrize("periodic", [True, False])
def test_windows(name, n, periodic):
    check(lambda m: getattr(m, name)(n, periodic), grad=False, atol=1e-6)
    check(lambda m: getattr(m, name)(n, periodic, dtype=m.float64), grad=False, atol=1e-12)


@pytest.mark.parametrize("fn", [
    lambda m: m.hamming_window(6, False, 0.5, 0.3),
    lambda m: m.kaiser_window(6, True, 5.0),
    lambda m: m.hann_window(5, requires_grad=True),
])
def test_window_options(fn):
    check(fn, grad=False)


@pytest.mark.parametrize("fn", [
    lambda m: m.hann_window(-1),
    lambda m: m.hann_window(3, dtype=m.int64),
])
def test_window_errors(fn):
    same(fn, match="hann_window")


X = arr(3, 4)


@pytest.mark.parametrize("fn", [
    lambda m, x: m.ravel(x),
    lambda m, x: m.ravel(x.t()),
    lambda m, x: x.t().ravel(),
    lambda m, x: m.diagflat(x[:2, :2]),
    lambda m, x: m.diagflat(x[0], 1),
    lambda m, x: x[0].diagflat(-2),
    lambda m, x: m.combinations(x[0]),
    lambda m, x: m.combinations(x[0], 3),
    lambda m, x: m.combinations(x[0], 2, True),
    lambda m, x: m.combinations(x[0, :2], 4),
    lambda m, x: m.fill(x, 2.0),
    lambda m, x: m.fill(x, x[0, 0] * 3),
])
def test_shape_helpers(fn):
    e, t = check(fn, X)
    assert _nodes(e) == _nodes(t)


@pytest.mark.parametrize("fn", [
    lambda m: m.combinations(m.tensor([1, 2, 3]), 0),
    lambda m: m.combinations(m.ones(2, 2)),
    lambda m: m.combinations(m.ones(3), -1),
    lambda m: m.unravel_index(m.tensor([4, 1, 11, 12, -1]), (3, 4)),
    lambda m: m.unravel_index(m.tensor(5), (3, 4)),
    lambda m: m.unravel_index(m.tensor([5]), 4),
    lambda m: m.unravel_index(m.tensor([[5, 2], [1, 0]]), [2, 3]),
    lambda m: m.unravel_index(m.tensor([1]), ()),
    lambda m: m.unravel_index(m.tensor([1.0]), (3, 4)),
    lambda m: m.unravel_index(m.tensor([1]), (3, -4)),
    lambda m: m.nonzero_static(m.tensor([0, 1, 0, 2]), size=3),
    lambda m: m.nonzero_static(m.tensor([[0, 1], [1, 1]]), size=2, fill_value=9),
    lambda m: m.tensor([[0.0, 1.5], [1, 0]]).nonzero_static(size=4),
    lambda m: m.isin(m.tensor([1, 2, 3]), m.tensor([2, 5])),
    lambda m: m.isin(m.tensor([1, 2, 3]), 2),
    lambda m: m.isin(2, m.tensor([2, 5])),
    lambda m: m.isin(m.tensor([1.0, 2]), m.tensor([2]), invert=True),
    lambda m: m.isin(m.tensor([[1, 2], [3, 4]]), m.tensor([2.5, 1.0]), assume_unique=True),
    lambda m: m.fill(m.ones(2), m.ones(2)),
    lambda m: m.fill(m.ones(2, dtype=m.int32), 7),
    lambda m: m.index_put_(m.zeros(3), (m.tensor([0, 0]),), m.tensor(1.0), accumulate=True),
    lambda m: m.index_put_(m.zeros(3), (m.tensor([1]),), m.tensor(5.0)),
])
def test_index_helpers(fn):
    same(fn)


SIGNAL = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "hamming", "hann",
          "kaiser", "nuttall"]


@pytest.mark.parametrize("name", SIGNAL)
@pytest.mark.parametrize("M", [0, 1, 2, 5, 6, 33])
@pytest.mark.parametrize("sym", [True, False])
def test_signal_windows(name, M, sym):
    check(lambda m: getattr(m.signal.windows, name)(M, sym=sym), grad=False, atol=1e-6)
    check(lambda m: getattr(m.signal.windows, name)(M, sym=sym, dtype=m.float64), grad=False,
          atol=1e-12)


@pytest.mark.parametrize("fn", [
    lambda m: m.signal.windows.exponential(6, center=1.0, tau=2.0, sym=False),
    lambda m: m.signal.windows.gaussian(7, std=0.7),
    lambda m: m.signal.windows.kaiser(6, beta=3.0, sym=False),
    lambda m: m.signal.windows.general_cosine(8, a=[0.5, 0.3, 0.2]),
    lambda m: m.signal.windows.general_hamming(8, alpha=0.6, sym=False),
    lambda m: m.signal.windows.hann(5, requires_grad=True),
])
def test_signal_window_options(fn):
    check(fn, grad=False, atol=1e-6)


@pytest.mark.parametrize("fn", [
    lambda m: m.signal.windows.hann(-1),
    lambda m: m.signal.windows.hann(3, dtype=m.float16),
    lambda m: m.signal.windows.exponential(3, tau=0),
    lambda m: m.signal.windows.exponential(3, center=1.0),
    lambda m: m.signal.windows.gaussian(3, std=-1.0),
    lambda m: m.signal.windows.kaiser(3, beta=-1.0),
    lambda m: m.signal.windows.general_cosine(3, a=[]),
    lambda m: m.signal.windows.general_cosine(3, a=3),
])
def test_signal_window_errors(fn):
    same(fn)
