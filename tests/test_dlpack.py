"""DLPack: zero-copy exchange with NumPy and torch in both directions (writes on one side are
seen on the other), strides, dtypes, capsules, and torch's errors."""

import numpy as np
import pytest
import torch

import ember
from ember.utils import dlpack

DTYPES = ["float32", "float64", "int64", "int32", "uint8", "bool", "float16", "int8"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_round_trip_shares_memory(dtype):
    a = (np.arange(12) % 3).astype(dtype).reshape(3, 4)
    t = ember.from_dlpack(a)
    assert t.dtype == getattr(ember, "bool" if dtype == "bool" else dtype)
    assert np.shares_memory(t.numpy(), a)
    back = np.from_dlpack(t)
    assert np.shares_memory(back, a)
    if dtype != "bool":
        t.add_(1)
        np.testing.assert_array_equal(a, (np.arange(12) % 3).astype(dtype).reshape(3, 4) + 1)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_torch_both_directions(dtype):
    src = torch.arange(12).reshape(3, 4).to(getattr(torch, dtype))
    e = ember.from_dlpack(src)  # torch -> ember: the same memory
    assert e.data_ptr() == src.data_ptr()
    assert e.tolist() == src.tolist()
    et = ember.arange(6).reshape(2, 3).to(getattr(ember, dtype))
    t = torch.from_dlpack(et)  # ember -> torch
    assert t.data_ptr() == et.data_ptr() and t.tolist() == et.tolist()
    if dtype == "float32":
        t.mul_(2)
        assert et.tolist() == [[0, 2, 4], [6, 8, 10]]
        e.fill_(7)
        assert src.eq(7).all()


def test_strides_and_capsules():
    base = ember.arange(24.0).reshape(4, 6)
    view = base[:, ::2].t()
    t = torch.from_dlpack(view)
    assert t.tolist() == view.tolist()
    assert t.stride() == tuple(s // 4 for s in view.numpy().strides)
    cap = dlpack.to_dlpack(ember.ones(3))
    back = dlpack.from_dlpack(cap)
    assert back.tolist() == [1.0, 1.0, 1.0]
    tcap = torch.utils.dlpack.to_dlpack(torch.tensor([1.0, 2.0]))
    assert ember.from_dlpack(tcap).tolist() == [1.0, 2.0]
    assert ember.ones(2).__dlpack_device__() == torch.ones(2).__dlpack_device__()
    x = ember.ones(2)
    assert ember.from_dlpack(x) is x


def test_dlpack_errors():
    with pytest.raises(BufferError, match="require gradient"):
        ember.ones(2, requires_grad=True).__dlpack__()
    with pytest.raises(BufferError, match="require gradient"):
        torch.ones(2, requires_grad=True).__dlpack__()
    with pytest.raises(TypeError):
        ember.from_dlpack([1, 2])
