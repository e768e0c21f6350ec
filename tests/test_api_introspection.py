"""Layouts, memory formats, constants and the small tensor questions (is_nonzero, typename,
dim_order, Tensor.new, empty_strided, ...) against torch."""

import copy
import math
import pickle
import warnings

import numpy as np
import pytest
import torch
from oracle import arr, check, same

import ember


def test_constants():
    for name in ("e", "pi", "inf"):
        assert getattr(ember, name) == getattr(torch, name)
    assert math.isnan(ember.nan) and ember.newaxis is None is torch.newaxis
    x = ember.zeros(2, 3)
    assert x[:, ember.newaxis].shape == (2, 1, 3)


@pytest.mark.parametrize("name", ["strided", "contiguous_format", "channels_last",
                                  "channels_last_3d", "preserve_format",
                                  "legacy_contiguous_format"])
def test_layout_objects(name):
    obj = getattr(ember, name)
    assert repr(obj) == repr(getattr(torch, name)).replace("torch.", "ember.")
    assert pickle.loads(pickle.dumps(obj)) is obj and copy.deepcopy(obj) is obj
    assert type(obj).__name__ == type(getattr(torch, name)).__name__
    with pytest.raises(TypeError, match="cannot create"):
        type(obj)()


def test_tensor_layout():
    assert ember.zeros(2).layout is ember.strided
    same(lambda m: m.zeros(2).layout == m.strided)


MF = [
    lambda m: m.randn(2, 3, 4, 5).contiguous(memory_format=m.channels_last).stride(),
    lambda m: m.randn(2, 3, 4, 5).contiguous(memory_format=m.channels_last).is_contiguous(),
    lambda m: m.randn(2, 3, 4, 5).contiguous(memory_format=m.channels_last)
    .is_contiguous(memory_format=m.channels_last),
    lambda m: m.randn(2, 3, 1, 1).is_contiguous(memory_format=m.channels_last),
    lambda m: m.randn(2, 3, 4, 5, 6).contiguous(memory_format=m.channels_last_3d).stride(),
    lambda m: m.randn(2, 3, 4, 5).contiguous(memory_format=m.contiguous_format).stride(),
    lambda m: m.randn(2, 3, 4, 5).clone(memory_format=m.channels_last).stride(),
    lambda m: (m.randn(2, 3, 4, 5).contiguous(memory_format=m.channels_last) + 1).stride(),
    lambda m: m.randn(2, 3, 4, 5).contiguous(memory_format=m.channels_last)
    .clone(memory_format=m.contiguous_format).stride(),
    lambda m: m.randn(3, 4).contiguous(memory_format=m.preserve_format).stride(),
    lambda m: m.randn(3, 4).is_contiguous(memory_format=m.channels_last),
    lambda m: m.randn(3, 4).t().is_contiguous(memory_format=m.contiguous_format),
    lambda m: m.randn(3, 4).contiguous(memory_format=m.channels_last),
    lambda m: m.randn(3, 4).t().contiguous(memory_format=m.preserve_format),
    lambda m: m.randn(2, 3, 4, 5).contiguous(memory_format=m.channels_last_3d),
    lambda m: m.randn(3, 4).clone(memory_format=m.channels_last),
    lambda m: m.randn(3, 4).contiguous(memory_format=1),
]


@pytest.mark.parametrize("fn", MF)
def test_memory_formats(fn):
    same(fn)


def test_channels_last_values_and_grad():
    check(lambda m, x: x.contiguous(memory_format=m.channels_last) * 2, arr(2, 3, 4, 5))


@pytest.mark.parametrize("fn", [
    lambda m: m.is_nonzero(m.tensor([0.5])),
    lambda m: m.is_nonzero(m.tensor(0)),
    lambda m: m.tensor([[False]]).is_nonzero(),
    lambda m: m.is_nonzero(m.tensor([])),
    lambda m: m.is_nonzero(m.tensor([1, 2])),
    lambda m: m.is_same_size(m.zeros(2, 3), m.zeros(3, 2)),
    lambda m: m.zeros(2, 3).is_same_size(m.ones(2, 3)),
    lambda m: m.typename(m.zeros(2, dtype=m.int64)),
    lambda m: m.typename(3),
    lambda m: m.typename(m.nn.Linear).replace("torch", "ember"),
    lambda m: m.typename(m.nn.Linear(2, 2)).replace("torch", "ember"),
    lambda m: m.get_device(m.zeros(2)),
    lambda m: m.is_distributed(m.zeros(2)),
    lambda m: m.zeros(2).is_distributed(),
    lambda m: m.zeros(2).is_nested,
    lambda m: m.is_signed(m.zeros(2, dtype=m.uint8)),
    lambda m: m.is_inference(m.zeros(2)),
    lambda m: (lambda x: x.const_data_ptr() == x.data_ptr())(m.zeros(2)),
])
def test_questions(fn):
    same(fn)


def test_detach_functions():
    check(lambda m, x: m.detach(x * 2) + x, arr(3))
    same(lambda m: m.detach_(m.ones(2, requires_grad=True) * 2).requires_grad)


@pytest.mark.parametrize("fn", [
    lambda m: m.empty(2, 3, 5, 7).dim_order(),
    lambda m: m.empty(2, 3, 5, 7).transpose(1, 2).dim_order(),
    lambda m: m.empty(2, 3, 5, 7).contiguous(memory_format=m.channels_last).dim_order(),
    lambda m: m.empty(1, 2, 3, 4).dim_order(),
    lambda m: m.empty(3, 4)[:, ::2].dim_order(),
    lambda m: m.empty(3, 1, 4).expand(3, 5, 4).dim_order(),
    lambda m: m.empty(4, 3, 2).permute(2, 0, 1).dim_order(),
    lambda m: m.empty(()).dim_order(),
    lambda m: m.empty(1, 2, 3, 4).dim_order(ambiguity_check=True),
    lambda m: m.empty(1, 2, 3, 4).dim_order(ambiguity_check=[m.contiguous_format,
                                                             m.channels_last]),
    lambda m: m.empty(2, 3).dim_order(ambiguity_check="ILLEGAL"),
])
def test_dim_order(fn):
    same(fn)


@pytest.mark.parametrize("fn", [
    lambda m: m.zeros(2, dtype=m.float64).new().shape,
    lambda m: m.zeros(2, dtype=m.float64).new(2, 3).shape,
    lambda m: m.zeros(2, dtype=m.float64).new([1, 2]),
    lambda m: m.zeros(2, dtype=m.int32).new((1, 2)),
    lambda m: m.zeros(2).new(m.Size([4])).shape,
    lambda m: m.zeros(2).new(m.tensor([1.0, 2.0])),
    lambda m: m.zeros(2).new(m.tensor([1, 2])),
])
def test_new(fn):
    same(fn)


def test_new_tensor_aliases():
    a = ember.tensor([1.0, 2.0])
    b = ember.zeros(2).new(a)
    b[0] = 5
    assert a[0].item() == 5


@pytest.mark.parametrize("fn", [
    lambda m: m.empty_strided((2, 3), (1, 2)).stride(),
    lambda m: m.empty_strided((2, 3), (0, 1)).stride(),
    lambda m: m.empty_strided((2, 0), (5, 1)).shape,
    lambda m: m.empty_strided((2, 3), (3, 1), dtype=m.float64).dtype,
    lambda m: m.empty_strided((2, 3), (3, 1), requires_grad=True).requires_grad,
    lambda m: m.zeros(2, dtype=m.int16).new_empty_strided((2, 3), (1, 2)).dtype,
    lambda m: m.zeros(2).new_empty_strided((2, 3), (1, 2)).stride(),
    lambda m: m.empty_strided((2, 3), (1,)),
    lambda m: m.empty_strided((2, -3), (1, 1)),
])
def test_empty_strided(fn):
    same(fn)


def test_module_load():
    p, q = ember.zeros(3), ember.ones(3, requires_grad=True)
    r = p.module_load(q)
    assert r is not p and r is not q and not r.requires_grad
    np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    assert p.module_load(q, assign=True).data_ptr() == q.data_ptr()


def test_set_default_tensor_type():
    try:
        for lib in (ember, torch):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                lib.set_default_tensor_type(lib.DoubleTensor)
                assert lib.tensor([1.5]).dtype == lib.float64
                lib.set_default_tensor_type("torch.FloatTensor")
            assert any("deprecated" in str(x.message) for x in w)
            assert lib.tensor([1.5]).dtype == lib.float32
    finally:
        ember.set_default_dtype(ember.float32)
        torch.set_default_dtype(torch.float32)
    same(lambda m: m.set_default_tensor_type(m.LongTensor))


def test_set_anomaly_enabled():
    for lib in (ember, torch):
        lib.set_anomaly_enabled(True, False)
        assert lib.is_anomaly_enabled() and not lib.is_anomaly_check_nan_enabled()
        lib.set_anomaly_enabled(False)
        assert not lib.is_anomaly_enabled()


@pytest.mark.parametrize("fn", [
    lambda m: m.tensor([1.0, 2, 3]).apply_(lambda v: v * 2),
    lambda m: m.tensor([1, 2]).apply_(lambda v: v * 1.7),
    lambda m: m.tensor([[1.0, 2], [3, 4]]).t().apply_(lambda v: v + 1),
    lambda m: m.tensor([1.0, 2, 3]).map_(m.tensor([1.0]), lambda a, b: a * 10 + b),
    lambda m: m.tensor([1.0, 2, 3]).map2_(m.ones(3), m.tensor([5.0]), lambda a, b, c: a + b + c),
    lambda m: (lambda x: (x.apply_(abs), x._version))(m.tensor([-1.0])),
    lambda m: m.ones(2, requires_grad=True).apply_(lambda v: v),
    lambda m: (m.ones(2, requires_grad=True) * 2).map_(m.ones(2), lambda a, b: a),
    lambda m: m.ones(2).apply_(lambda v: "a"),
    lambda m: m.ones(2).map_(m.ones(3), lambda a, b: a),
    lambda m: m.ones(2).apply_(3),
])
def test_python_callables(fn):
    same(fn)


def test_warn_always_flag():
    for lib in (ember, torch):
        assert lib.is_warn_always_enabled() is False
    import importlib

    mod = importlib.import_module("ember.ops.inplace_more")
    mod._WARNED.clear()
    try:
        ember.set_warn_always(True)
        assert ember.is_warn_always_enabled()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            for _ in range(2):
                ember.zeros(2).index_reduce(0, ember.tensor([0]), ember.ones(1), "prod")
        assert len(w) == 2
    finally:
        ember.set_warn_always(False)


def test_error_classes():
    for name in ("OutOfMemoryError", "AcceleratorError"):
        e, t = getattr(ember, name), getattr(torch, name)
        assert e.__name__ == t.__name__ and issubclass(e, RuntimeError)
        assert e.__doc__ == t.__doc__
    assert ember.cuda.OutOfMemoryError is ember.OutOfMemoryError


def test_increment_version():
    for lib in (ember, torch):
        a, b = lib.zeros(2), lib.zeros(3)
        lib.autograd.graph.increment_version(a)
        lib.autograd.graph.increment_version([a, b])
        assert (a._version, b._version) == (2, 1)
        x = lib.ones(2, requires_grad=True)
        y = x * 1
        z = y.exp()
        lib.autograd.graph.increment_version(z)  # exp saved its result
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.sum().backward()
