"""dtypes: names, aliases, properties, finfo/iinfo, default dtype, promotion — against torch."""

import copy
import pickle

import numpy as np
import pytest
import torch
from oracle import same

import ember

NAMES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"]
ALIASES = ["float", "double", "half", "long", "int", "short"]


@pytest.mark.parametrize("name", NAMES + ALIASES)
def test_dtype_properties(name):
    same(lambda m: getattr(m, name))
    same(lambda m: str(getattr(m, name)))
    same(lambda m: (getattr(m, name).is_floating_point, getattr(m, name).is_signed,
                    getattr(m, name).itemsize, getattr(m, name).is_complex))
    same(lambda m: m.ones(2, dtype=getattr(m, name)).dtype)
    same(lambda m: m.ones(2, dtype=getattr(m, name)).element_size())


def test_aliases_are_the_same_objects():
    assert ember.float is ember.float32 and ember.double is ember.float64
    assert ember.long is ember.int64 and ember.int is ember.int32 and ember.short is ember.int16
    assert ember.half is ember.float16 and ember.bool is not bool
    assert isinstance(ember.float32, ember.dtype)
    assert copy.deepcopy(ember.float32) is ember.float32
    assert pickle.loads(pickle.dumps(ember.int8)) is ember.int8
    same(lambda m: m.float32 == m.float)
    same(lambda m: {m.float32: 1}[m.float])
    same(lambda m: m.float32 == "float32")
    same(lambda m: m.int32.to_real())


FLOATS = ["float16", "float32", "float64"]


@pytest.mark.parametrize("name", FLOATS)
def test_finfo(name):
    same(lambda m: m.finfo(getattr(m, name)))
    same(lambda m: str(m.finfo(getattr(m, name))))
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        same(lambda m, attr=attr: getattr(m.finfo(getattr(m, name)), attr))


@pytest.mark.parametrize("name", ["int8", "int16", "int32", "int64", "uint8"])
def test_iinfo(name):
    same(lambda m: m.iinfo(getattr(m, name)))
    for attr in ("bits", "max", "min", "dtype"):
        same(lambda m, attr=attr: getattr(m.iinfo(getattr(m, name)), attr))


def test_info_errors_and_default():
    same(lambda m: m.finfo())
    same(lambda m: m.finfo(m.int32), "requires a floating point input type")
    same(lambda m: m.iinfo(m.float32), "requires an integer input type")
    same(lambda m: m.iinfo(m.bool), "is not supported by torch.iinfo")


@pytest.mark.parametrize("a", NAMES)
@pytest.mark.parametrize("b", NAMES)
def test_promote_types_table(a, b):
    same(lambda m: m.promote_types(getattr(m, a), getattr(m, b)))


@pytest.fixture
def default_dtype_restored():
    yield
    torch.set_default_dtype(torch.float32)
    ember.set_default_dtype(ember.float32)


@pytest.mark.parametrize("name", ["float64", "float16"])
def test_set_default_dtype(name, default_dtype_restored):
    for lib in (torch, ember):
        lib.set_default_dtype(getattr(lib, name))
    same(lambda m: m.get_default_dtype())
    same(lambda m: m.tensor([1.5]))
    same(lambda m: m.tensor([1.5]).dtype)
    same(lambda m: m.tensor([1.5], dtype=m.float32))
    same(lambda m: m.randn(2).dtype)
    same(lambda m: m.zeros(2).dtype)
    same(lambda m: m.arange(3.0).dtype)
    same(lambda m: m.arange(3).dtype)
    same(lambda m: m.tensor(np.array([1.5], dtype=np.float32)).dtype)
    same(lambda m: m.tensor([np.float32(1.5)]).dtype)
    same(lambda m: (m.ones(2, dtype=m.int64) * 1.5).dtype)
    same(lambda m: m.zeros(0))
    same(lambda m: m.zeros(0, dtype=m.float32))
    same(lambda m: m.finfo().dtype)


def test_set_default_dtype_errors(default_dtype_restored):
    same(lambda m: m.set_default_dtype(m.int64), "only floating-point types")
    same(lambda m: m.set_default_dtype(m.bool), "only floating-point types")


def test_python_types_as_dtype():
    same(lambda m: m.zeros(2, dtype=float).dtype)
    same(lambda m: m.zeros(2, dtype=int).dtype)
    same(lambda m: m.zeros(2, dtype=bool).dtype)
    same(lambda m: m.ones(2).to(float).dtype)


def test_bfloat16():
    same(lambda m: m.tensor([1.5, 2.0], dtype=m.bfloat16))
    same(lambda m: m.finfo(m.bfloat16))
    same(lambda m: m.ones(2).bfloat16().type())
    same(lambda m: m.promote_types(m.bfloat16, m.float16))
    same(lambda m: m.randn(2, dtype=m.bfloat16).dtype)
    same(lambda m: m.tensor([1.5], dtype=m.bfloat16).tolist())
