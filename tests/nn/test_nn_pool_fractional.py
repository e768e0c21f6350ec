"""F.fractional_max_pool2d/3d and nn.FractionalMaxPool2d/3d vs torch: given samples (values,
indices, gradients, double backward), seeded draws without them, output_ratio, NaN windows,
module options and errors."""

import numpy as np
import pytest
import torch
from oracle import arr, check, check_error, grad_fn_names, same

import ember

R = np.random.default_rng(17)


def _samples(x, nd, dtype="float32"):
    n = 1 if x.ndim == nd + 1 else x.shape[0]
    return R.uniform(0, 1, (n, x.shape[-nd - 1], nd)).astype(dtype)


CASES = [((2, 3, 11, 13), 3, (5, 6)), ((3, 10, 10), 2, (9, 9)), ((2, 3, 11, 13), (2, 4), (10, 3)),
         ((1, 2, 8, 8), 2, 7), ((2, 2, 9, 5), 1, (9, 5)), ((2, 1, 6, 6), 3, 1)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,k,o", CASES)
def test_fractional_max_pool2d_given_samples(shape, k, o, dtype):
    x, s = arr(*shape, dtype=dtype), None
    s = _samples(x, 2, dtype)
    check(lambda lib, t, u: lib.nn.functional.fractional_max_pool2d(
        t, k, output_size=o, return_indices=True, _random_samples=u), x, s, grad_inputs=(0,))


CASES3 = [((2, 2, 7, 8, 9), 2, (3, 4, 5)), ((2, 2, 7, 8, 9), (2, 3, 1), (5, 4, 8)),
          ((3, 6, 6, 6), 3, 2)]


@pytest.mark.parametrize("shape,k,o", CASES3)
def test_fractional_max_pool3d_given_samples(shape, k, o):
    x = arr(*shape)
    s = _samples(x, 3)
    check(lambda lib, t, u: lib.nn.functional.fractional_max_pool3d(
        t, k, output_size=o, return_indices=True, _random_samples=u), x, s, grad_inputs=(0,))


@pytest.mark.parametrize("nd", [2, 3])
def test_seeded_samples_match_torch(nd):
    x = arr(2, 3, *(9,) * nd)

    def fn(lib, t):
        lib.manual_seed(5)
        f = getattr(lib.nn.functional, f"fractional_max_pool{nd}d")
        out = f(t, 2, output_ratio=(0.5,) * nd, return_indices=True)
        return out + (lib.rand(2),)  # the generator advanced as torch's

    check(fn, x)


def test_ratio_module_and_double_backward():
    x = arr(2, 3, 10, 7)

    def fn(lib, t):
        lib.manual_seed(1)
        return lib.nn.FractionalMaxPool2d((2, 3), output_ratio=(0.6, 0.5))(t)

    check(fn, x)
    check(lambda lib, t: lib.nn.FractionalMaxPool3d(2, output_size=(2, 3, 2),
                                                    _random_samples=lib.full((1, 2, 3), 0.3))(t),
          arr(1, 2, 5, 6, 5))
    s = _samples(x, 2)

    def pool(lib, t):
        return lib.nn.functional.fractional_max_pool2d(t, 2, (4, 3),
                                                       _random_samples=lib.tensor(s))

    assert grad_fn_names(pool, x, ember) == grad_fn_names(pool, x, torch)
    same(lambda lib: lib.nn.FractionalMaxPool2d(3, output_ratio=0.5))
    m = ember.nn.FractionalMaxPool2d(3, output_size=(4, 5), return_indices=True)
    t = torch.nn.FractionalMaxPool2d(3, output_size=(4, 5), return_indices=True)
    assert (m.kernel_size, m.output_size, m.output_ratio, m.return_indices) == \
        (t.kernel_size, t.output_size, t.output_ratio, t.return_indices)
    assert list(m.state_dict()) == list(t.state_dict()) == []


def test_nan_and_ties_pick_torch_index():
    x = np.zeros((1, 1, 6, 6), np.float32)
    x[0, 0, 1, 1] = x[0, 0, 2, 2] = np.nan
    s = np.float32([[[0.2, 0.7]]])
    check(lambda lib, t: lib.nn.functional.fractional_max_pool2d(
        t, 3, 3, return_indices=True, _random_samples=lib.tensor(s))[1], x, grad=False)


F2 = "fractional_max_pool2d"


@pytest.mark.parametrize("call", [
    lambda lib, x: getattr(lib.nn.functional, F2)(x, 2),
    lambda lib, x: getattr(lib.nn.functional, F2)(x, 2, output_ratio=0.5),
    lambda lib, x: getattr(lib.nn.functional, F2)(x, 2, output_ratio=(0.5, 0.5, 0.5)),
    lambda lib, x: getattr(lib.nn.functional, F2)(x, 4, output_size=6),
    lambda lib, x: getattr(lib.nn.functional, F2)(x, (2, 2, 2), output_size=3),
    lambda lib, x: getattr(lib.nn.functional, F2)(x[0, 0], 2, output_size=3),
    lambda lib, x: getattr(lib.nn.functional, F2)(x, 2, 3, _random_samples=lib.rand(2, 3, 2,
                                                                                      dtype=lib.float64)),
    lambda lib, x: getattr(lib.nn.functional, F2)(x, 2, 3, _random_samples=lib.rand(2, 3)),
    lambda lib, x: getattr(lib.nn.functional, F2)(x, 2, 3, _random_samples=lib.rand(1, 3, 2)),
    lambda lib, x: getattr(lib.nn.functional, F2)(x, 2, 3, _random_samples=lib.rand(2, 4, 2)),
    lambda lib, x: getattr(lib.nn.functional, F2)(x, 2, 3, _random_samples=lib.rand(2, 3, 3)),
    lambda lib, x: lib.nn.functional.fractional_max_pool3d(x.unsqueeze(2).expand(
        -1, -1, 4, -1, -1), 2, output_size=3),
    lambda lib, x: lib.nn.FractionalMaxPool2d(2),
    lambda lib, x: lib.nn.FractionalMaxPool2d(2, output_size=3, output_ratio=0.5),
    lambda lib, x: lib.nn.FractionalMaxPool2d(2, output_ratio=1.5),
])
def test_errors_match_torch(call):
    e = check_error(call, arr(2, 3, 6, 6))
    try:
        call(torch, torch.tensor(arr(2, 3, 6, 6)))
    except Exception as t:  # noqa: BLE001 - comparing messages
        assert str(e) == str(t)


def test_empty_batch():
    check(lambda lib, t: lib.nn.functional.fractional_max_pool2d(
        t, 2, 3, _random_samples=lib.rand(1, 2, 2)), arr(0, 2, 6, 6))


def test_samples_fix_the_windows():
    x = ember.tensor(arr(2, 3, 12, 12))
    s = ember.rand(2, 3, 2)
    a = ember.nn.functional.fractional_max_pool2d(x, 2, 5, _random_samples=s)
    b = ember.nn.functional.fractional_max_pool2d(x, 2, 5, _random_samples=s)
    assert ember.equal(a, b)
