"""DLPack: exchange tensors with NumPy, torch, CuPy and any other DLPack library without a
copy (torch's ``torch.utils.dlpack``). ``from_dlpack`` takes an object with ``__dlpack__``
(or a legacy ``dltensor`` capsule) and returns an ember tensor over the same memory;
``Tensor.__dlpack__`` lets the other libraries do the same with ember tensors."""

from __future__ import annotations

import enum

import numpy as np

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]


class DLDeviceType(enum.IntEnum):
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLExtDev = 12
    kDLOneAPI = 14


class _Capsule:
    """A legacy capsule, dressed as an object with ``__dlpack__`` (CPU memory)."""

    def __init__(self, capsule) -> None:
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self) -> tuple:
        return (DLDeviceType.kDLCPU, 0)


def to_dlpack(tensor):
    """A DLPack capsule of ``tensor``'s memory (consumed once, by ``from_dlpack``)."""
    return tensor.__dlpack__()


def from_dlpack(ext_tensor):
    """An ember tensor sharing the memory of ``ext_tensor`` (a NumPy array, a torch or CuPy
    tensor, any object with ``__dlpack__``, or a DLPack capsule)."""
    from ember._tensor import Tensor

    if isinstance(ext_tensor, Tensor):
        return ext_tensor
    if not hasattr(ext_tensor, "__dlpack__"):
        if type(ext_tensor).__name__ != "PyCapsule":
            raise TypeError(f"from_dlpack: expected an object with __dlpack__ or a DLPack "
                            f"capsule, got {type(ext_tensor).__name__}")
        ext_tensor = _Capsule(ext_tensor)
    device_type, _ = ext_tensor.__dlpack_device__()
    if device_type in (DLDeviceType.kDLCUDA, DLDeviceType.kDLROCM):
        from ember._backend import cupy_module

        cupy = cupy_module()
        if cupy is None:
            raise RuntimeError("from_dlpack: the tensor is on a GPU, but CuPy with a GPU is not "
                               "available to ember")
        return Tensor._make(cupy.from_dlpack(ext_tensor))
    if device_type not in (DLDeviceType.kDLCPU, DLDeviceType.kDLCUDAHost):
        raise RuntimeError(f"Unsupported device_type: {int(device_type)}")
    return Tensor._make(np.from_dlpack(ext_tensor))
