"""The Tensor object API (metadata, conversions, autograd flags, copies) compared with torch."""

import copy
import pickle
import warnings

import numpy as np
import pytest
import torch
from oracle import same

import ember

# --- Size and metadata -----------------------------------------------------------------------


SIZE_CASES = [
    lambda m: m.Size([2, 3]), lambda m: m.Size([]), lambda m: m.Size((4,)),
    lambda m: m.Size([2, 3])[1:], lambda m: m.Size([2, 3])[0], lambda m: m.Size([2, 3]).numel(),
    lambda m: m.Size([]).numel(), lambda m: m.Size([2, 3]) + (4,), lambda m: (4,) + m.Size([2, 3]),
    lambda m: m.Size([2, 3]) * 2, lambda m: m.Size([2, 3]) == (2, 3), lambda m: str(m.Size([1])),
    lambda m: m.Size([m.tensor(3)]), lambda m: m.Size([2.5]), lambda m: m.Size([2, 3]) + [4],
    lambda m: isinstance(m.Size([1]), tuple), lambda m: m.ones(64, 1, 28, 28).shape,
    lambda m: pickle.loads(pickle.dumps(m.Size([2, 3]))), lambda m: m.ones(2, 3).size(),
]


@pytest.mark.parametrize("k", range(len(SIZE_CASES)))
def test_size(k):
    same(SIZE_CASES[k])


META_CASES = [
    lambda m: m.ones(2, 3).size(1), lambda m: m.ones(2, 3).size(-1), lambda m: m.ones(2, 3).size(5),
    lambda m: (m.ones(2, 3).dim(), m.ones(2, 3).ndim, m.ones(()).dim()),
    lambda m: (m.ones(2, 3).numel(), m.numel(m.ones(4)), m.ones(0, 3).numel()),
    lambda m: m.ones(2, 3).stride(), lambda m: m.ones(2, 3).t().stride(),
    lambda m: m.ones(2, 3).stride(1), lambda m: m.ones(2, 3).t().is_contiguous(),
    lambda m: m.ones(2, 3).is_contiguous(), lambda m: m.ones(2, dtype=m.float64).element_size(),
    lambda m: m.ones(2, dtype=m.int8).element_size(), lambda m: m.ones(2).dtype,
    lambda m: m.ones(2, dtype=m.int16).dtype, lambda m: (m.is_tensor(m.ones(1)), m.is_tensor(1)),
    lambda m: m.ones(2).is_floating_point(), lambda m: m.ones(2, dtype=m.uint8).is_signed(),
    lambda m: m.ones(2).is_signed(), lambda m: m.is_floating_point(m.ones(2, dtype=m.int32)),
]


@pytest.mark.parametrize("k", range(len(META_CASES)))
def test_metadata(k):
    same(META_CASES[k])


# --- conversions -----------------------------------------------------------------------------


CONVERSION_CASES = [
    lambda m: m.ones(2, 2).item(), lambda m: m.ones(()).item(), lambda m: m.ones(1, 1).item(),
    lambda m: m.tensor(3).item(), lambda m: m.tensor(True).item(), lambda m: m.tensor(1.5).tolist(),
    lambda m: m.tensor([[1.5]]).tolist(), lambda m: m.tensor([[1, 2]], dtype=m.int32).tolist(),
    lambda m: bool(m.ones(2)), lambda m: bool(m.ones(0)), lambda m: bool(m.tensor([0.0])),
    lambda m: float(m.ones(2)), lambda m: int(m.ones(2)), lambda m: int(m.tensor([2.7])),
    lambda m: float(m.tensor([2])), lambda m: complex(m.tensor(2.0)),
    lambda m: [1, 2, 3][m.tensor(1)], lambda m: [1, 2, 3][m.tensor(1.0)],
    lambda m: [1, 2, 3][m.tensor([1])], lambda m: [1, 2, 3][m.tensor([1, 2])],
    lambda m: len(m.tensor(1)), lambda m: len(m.ones(4, 2)), lambda m: iter(m.tensor(1)),
    lambda m: list(m.tensor([[1, 2], [3, 4]])), lambda m: [x.item() for x in m.arange(3)],
    lambda m: m.ones(2, requires_grad=True).numpy(), lambda m: np.asarray(m.ones(2)),
    lambda m: np.asarray(m.ones(2, requires_grad=True)), lambda m: m.ones(2, 3).numpy().shape,
    lambda m: np.asarray(m.ones(2), dtype=np.float64), lambda m: m.ones(2).numpy(force=True),
]


@pytest.mark.parametrize("k", range(len(CONVERSION_CASES)))
def test_conversions(k):
    same(CONVERSION_CASES[k])


def test_numpy_shares_memory_both_ways():
    t = ember.zeros(3)
    a = t.numpy()
    a[0] = 4
    assert t[0].item() == 4
    t[1] = 5
    assert a[1] == 5


TO_CASES = [
    lambda m: m.ones(2, 3).type(), lambda m: m.ones(2, dtype=m.int64).type(),
    lambda m: m.ones(2, dtype=m.bool).type(), lambda m: m.ones(2).type(m.int32),
    lambda m: m.ones(2).type("torch.IntTensor"), lambda m: m.ones(2).type("torch.int32"),
    lambda m: m.ones(2).type("foo"), lambda m: m.ones(2).to("cpu", m.float64),
    lambda m: m.ones(2).to(m.ones(1, dtype=m.int32)),
    lambda m: m.ones(2).to(device="cpu", dtype=m.int32), lambda m: m.ones(2).to("cuda"),
    lambda m: m.ones(2).to(m.device("cpu")), lambda m: m.ones(2).to("foo"),
    lambda m: m.ones(2).to(float), lambda m: m.ones(2).to(int),
    lambda m: m.ones(2, requires_grad=True).to(m.float64),
    lambda m: m.ones(2, requires_grad=True).to(m.int64),
    lambda m: (m.ones(2).float(), m.ones(2).double(), m.ones(2).half(), m.ones(2).long(),
               m.ones(2).int(), m.ones(2).short(), m.ones(2).char(), m.ones(2).byte(),
               m.ones(2).bool()),
    lambda m: m.tensor([1.7, -1.7]).long(), lambda m: m.tensor([0.0, 2.0]).bool(),
    lambda m: m.ones(2).type_as(m.ones(1, dtype=m.int8)), lambda m: m.ones(2).cuda(),
]


@pytest.mark.parametrize("k", range(len(TO_CASES)))
def test_type_and_to(k):
    same(TO_CASES[k])


def test_to_returns_self_unless_something_changes():
    for lib in (torch, ember):
        a = lib.ones(2, requires_grad=True)
        assert a.to(lib.float32) is a and a.to("cpu") is a and a.cpu() is a
        assert a.to(lib.float32, copy=True) is not a
        b = a.to(lib.float64)
        assert not b.is_leaf and b.requires_grad
        assert type(b.grad_fn).__name__ == "ToCopyBackward0"


# --- autograd flags ----------------------------------------------------------------------------


def set_rg(value, nonleaf=False, dtype=None):
    def fn(m):
        x = m.ones(2, dtype=getattr(m, dtype or "float32"), requires_grad=nonleaf)
        if nonleaf:
            x = x * 2
        x.requires_grad = value
        return x
    return fn


AUTOGRAD_CASES = [
    (set_rg(True, dtype="int64"), "only Tensors of floating point and complex dtype"),
    (lambda m: m.tensor([1, 2]).requires_grad_(), "only Tensors of floating point dtype"),
    (set_rg(False, nonleaf=True), "you can only change requires_grad flags of leaf variables."),
    (set_rg(True, nonleaf=True), "you can only change requires_grad flags of leaf variables."),
    (lambda m: (m.ones(2, requires_grad=True) * 2).requires_grad_(False), "leaf variables"),
    (lambda m: (m.ones(2, requires_grad=True) * 2).requires_grad_(True), None),
    (set_rg(True), None), (lambda m: m.ones(2).requires_grad_(), None),
    (lambda m: m.ones(2).retain_grad(), "can't retain_grad on Tensor that has requires_grad=False"),
    (lambda m: m.ones(2, requires_grad=True).retains_grad, None),
    (lambda m: (m.ones(2, requires_grad=True) * 2).retains_grad, None),
    (lambda m: (m.ones(2).is_leaf, (m.ones(1, requires_grad=True) * 2).is_leaf), None),
    (lambda m: m.ones(2, requires_grad=True).grad, None),
    (lambda m: m.ones(2, requires_grad=True).clone(), None),
    (lambda m: m.ones(2, requires_grad=True).detach(), None),
    (lambda m: (m.ones(2, requires_grad=True) * 1).detach_(), None),
    (lambda m: m.ones(3, requires_grad=True)[:2].detach_(), "Can't detach views in-place"),
    (lambda m: m.ones(2, requires_grad=True).data, None),
    (lambda m: m.autograd.Variable(m.ones(2), requires_grad=True), None),
    (lambda m: copy.deepcopy(m.ones(2, requires_grad=True)), None),
    (lambda m: copy.deepcopy(m.ones(2, requires_grad=True) * 2), "graph leaves"),
    (lambda m: pickle.loads(pickle.dumps(m.ones(2, requires_grad=True))), None),
    (lambda m: pickle.loads(pickle.dumps(m.ones(2, requires_grad=True) * 2)), None),
    (lambda m: pickle.loads(pickle.dumps(m.arange(6).reshape(2, 3))), None),
]


@pytest.mark.parametrize("k", range(len(AUTOGRAD_CASES)))
def test_autograd_flags(k):
    fn, match = AUTOGRAD_CASES[k]
    same(fn, match)


def test_nonleaf_grad_warns_like_torch():
    for lib in (torch, ember):
        y = lib.ones(2, requires_grad=True) * 2
        with pytest.warns(UserWarning, match="is not a leaf Tensor is being accessed") as rec:
            assert y.grad is None
        assert "retain_grad()" in str(rec[0].message)
        y.retain_grad()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert y.grad is None
        y.sum().backward()
        assert y.grad.tolist() == [1.0, 1.0]


def test_detach_shares_storage_and_data_setter():
    for lib in (torch, ember):
        a = lib.ones(2, requires_grad=True)
        d = a.detach()
        d[0] = 5
        assert a[0].item() == 5 and not d.requires_grad
        a.data = lib.zeros(3)
        assert a.shape == (3,) and a.requires_grad and a.is_leaf
        z = a.data
        z[0] = 9
        assert a[0].item() == 9 and not z.requires_grad
    same(lambda m: setattr(m.ones(2), "data", [1]), "Variable data has to be a tensor")


def test_clone_is_differentiable_and_independent():
    for lib in (torch, ember):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        c = x.clone()
        (c * c).sum().backward()
        assert x.grad.tolist() == [2.0, 4.0]
        with lib.no_grad():
            c[0] = 10
        assert x[0].item() == 1.0


def test_deepcopy_keeps_grad_subclass_and_attributes():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    (x * 3).sum().backward()
    x.note = "kept"
    y = copy.deepcopy(x)
    assert y.requires_grad and y.is_leaf and y.grad.tolist() == [3.0, 3.0] and y.note == "kept"
    y.detach()[0] = 7
    assert x[0].item() == 1.0
    pair = copy.deepcopy([x, x])
    assert pair[0] is pair[1]


def test_format_and_str_are_repr():
    t = ember.tensor([1.0, 2.0])
    assert str(t) == repr(t) == f"{t}"


def test_legacy_tensor_constructor():
    same(lambda m: m.Tensor([1, 2]))
    same(lambda m: m.Tensor(2, 3).shape)
    same(lambda m: m.Tensor(np.array([1, 2], dtype=np.int32)))


LEGACY_CASES = [
    lambda m: isinstance(m.ones(2), m.FloatTensor), lambda m: isinstance(m.ones(2), m.LongTensor),
    lambda m: isinstance(m.arange(2), m.LongTensor), lambda m: isinstance(m.ones(2), m.Tensor),
    lambda m: repr(m.FloatTensor), lambda m: m.LongTensor([1.5, 2]),
    lambda m: m.FloatTensor([1, 2]), lambda m: m.FloatTensor(2, 3).shape,
    lambda m: m.FloatTensor().shape, lambda m: m.Tensor().shape,
    lambda m: m.ones(2).type(m.LongTensor), lambda m: m.ones(2).type(m.FloatTensor),
    lambda m: m.BoolTensor([1, 0]), lambda m: m.ByteTensor([1]), lambda m: m.DoubleTensor(2).dtype,
    lambda m: m.Tensor(m.Size([2, 3])).shape, lambda m: m.Tensor((2, 3)),
    lambda m: m.IntTensor([1]).type(),
]


@pytest.mark.parametrize("k", range(len(LEGACY_CASES)))
def test_legacy_tensor_types(k):
    same(LEGACY_CASES[k])


@pytest.mark.parametrize("make", [lambda L: L.empty(0, 3), lambda L: L.zeros(2, 0, 3),
                                  lambda L: L.ones(3, 0)[:, :], lambda L: L.empty(0),
                                  lambda L: L.arange(6).view(2, 3)[:0]])
def test_empty_tensors_report_torchs_strides(make):
    assert make(ember).stride() == make(torch).stride()
