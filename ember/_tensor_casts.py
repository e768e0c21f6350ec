"""Tensor methods that change dtype or device (``to``, ``type``, ``float()``, ``cpu()``, ...),
sharing (``share_memory_``, DLPack export) and the legacy tensor types (``ember.FloatTensor``)."""

from __future__ import annotations

import numpy as np

from ember import _dtype
from ember._backend import CPU, check_device
from ember._dtype import dtype as _DType


class TensorCasts:
    """Mixin of Tensor: conversions between dtypes and devices."""

    __slots__ = ()

    def to(self, *args, **kwargs) -> TensorCasts:
        """``to(dtype)``, ``to(device)``, ``to(other)``, ``to(device, dtype)``; ``copy=``.

        Returns ``self`` when nothing changes; otherwise a differentiable copy.
        """
        dt, dev, copy = _to_args(args, kwargs)
        if dev == self.device:
            dev = None
        if (dt is None or dt is self.dtype) and dev is None and not copy:
            return self
        from ember.ops.pointwise import to_copy

        return to_copy(self, dt or self.dtype, dev)

    def type(self, dtype=None, non_blocking: bool = False, **kwargs):
        """The legacy type name (``'ember.FloatTensor'``), or a copy converted to ``dtype``."""
        if dtype is None:
            return _dtype.TYPE_NAMES[self.dtype]
        if isinstance(dtype, tensortype):
            dtype = dtype.dtype
        elif isinstance(dtype, str):
            name = "ember." + dtype.removeprefix("torch.").removeprefix("ember.")
            if name not in _dtype.TYPE_BY_NAME:
                raise ValueError(f"invalid type: '{dtype}'")
            dtype = _dtype.TYPE_BY_NAME[name]
        return self.to(_dtype.to_dtype(dtype))

    def type_as(self, other: TensorCasts) -> TensorCasts:
        return self.to(other.dtype)

    def float(self) -> TensorCasts:
        return self.to(_dtype.float32)

    def double(self) -> TensorCasts:
        return self.to(_dtype.float64)

    def half(self) -> TensorCasts:
        return self.to(_dtype.float16)

    def bfloat16(self) -> TensorCasts:
        if _dtype.bfloat16 is None:
            raise RuntimeError("bfloat16 needs the ml_dtypes package: pip install ml_dtypes")
        return self.to(_dtype.bfloat16)

    def long(self) -> TensorCasts:
        return self.to(_dtype.int64)

    def int(self) -> TensorCasts:
        return self.to(_dtype.int32)

    def short(self) -> TensorCasts:
        return self.to(_dtype.int16)

    def char(self) -> TensorCasts:
        return self.to(_dtype.int8)

    def byte(self) -> TensorCasts:
        return self.to(_dtype.uint8)

    def bool(self) -> TensorCasts:
        return self.to(_dtype.bool_)

    def cpu(self, memory_format=None) -> TensorCasts:
        return self.to(CPU)

    def cuda(self, device=None, non_blocking: bool = False, memory_format=None) -> TensorCasts:
        if isinstance(device, int) and not isinstance(device, bool):
            device = f"cuda:{device}"
        dev = check_device("cuda" if device is None else device)
        if dev.type != "cuda":
            raise RuntimeError(f"Invalid device, must be cuda device: {dev}")
        return self.to(dev)

    def pin_memory(self) -> TensorCasts:
        return self

    def share_memory_(self) -> TensorCasts:
        """Move the values into shared memory (in place), for other processes to use."""
        from ember.multiprocessing._shared import share_memory_

        return share_memory_(self)

    def is_shared(self) -> bool:
        from ember.multiprocessing._shared import is_shared

        return is_shared(self)

    def is_pinned(self) -> bool:
        return False

    def __dlpack__(self, *, stream=-1, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of this tensor's memory (``torch.from_dlpack(t)`` shares it)."""
        from ember.compiler.traced import refuse

        refuse("exporting a tensor through DLPack")
        if self._rg:
            raise BufferError("Can't export tensors that require gradient, use "
                              "tensor.detach()")
        kwargs = {} if max_version is None else {"max_version": max_version}
        if copy is not None:
            kwargs["copy"] = copy
        if isinstance(self._data, np.ndarray):
            return self._data.__dlpack__(**kwargs)
        return self._data.__dlpack__(stream=None if stream == -1 else stream, **kwargs)

    def __dlpack_device__(self) -> tuple:
        from ember.utils.dlpack import DLDeviceType

        if isinstance(self._data, np.ndarray):
            return (DLDeviceType.kDLCPU, 0)
        return (DLDeviceType.kDLCUDA, self._data.device.id)


def _to_args(args: tuple, kwargs: dict):
    """Parse ``Tensor.to``'s overloads into (dtype or None, device or None, copy)."""
    dt = dev = None
    copy = bool(kwargs.pop("copy", False))
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    if "dtype" in kwargs and kwargs["dtype"] is not None:
        dt = _dtype.to_dtype(kwargs.pop("dtype"))
    if kwargs.get("device") is not None:
        dev = check_device(kwargs.pop("device"))
    if kwargs.keys() - {"dtype", "device"}:
        raise TypeError(f"to() got an unexpected keyword argument "
                        f"'{next(iter(kwargs.keys() - {'dtype', 'device'}))}'")
    flags = []
    for a in args:
        if isinstance(a, TensorCasts):
            dt, dev = a.dtype, a.device
        elif isinstance(a, _DType) or a in (float, int, bool):
            dt = _dtype.to_dtype(a)
        elif isinstance(a, bool):
            flags.append(a)  # positional non_blocking, then copy
        elif isinstance(a, str | int) or type(a).__name__ == "device":
            dev = check_device(a)
        elif a is not None:
            raise TypeError(f"to() received an invalid combination of arguments - got "
                            f"({type(a).__name__})")
    if len(flags) > 1:
        copy = copy or flags[1]
    return dt, dev, copy


class tensortype(type):
    """The metaclass of the legacy types: ``isinstance(t, ember.FloatTensor)`` checks the dtype,
    and ``ember.LongTensor([1.5, 2])`` builds a tensor of that dtype (legacy constructor)."""

    dtype: _DType

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, TensorCasts) and obj.dtype is cls.dtype

    def __call__(cls, *args, **kwargs):
        from ember._tensor import Tensor

        return Tensor(*args, dtype=cls.dtype, **kwargs)


def _legacy_type(dt: _DType) -> tensortype:
    name = _dtype.TYPE_NAMES[dt].split(".")[1]
    return tensortype(name, (), {"dtype": dt, "__module__": "ember", "__qualname__": name})


LEGACY_TYPES = {_dtype.TYPE_NAMES[dt].split(".")[1]: _legacy_type(dt) for dt in _dtype.TYPE_NAMES}
