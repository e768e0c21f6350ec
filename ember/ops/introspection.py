"""Questions about tensors and the small top-level helpers around them: ``is_nonzero``,
``is_same_size``, ``typename``, ``dim_order``, ``Tensor.new``, ``empty_strided``, the
torch-level forms of ``detach``/``get_device``/..., ``set_default_tensor_type``.

Not an op family: nothing here is differentiable; the file uses the op installer to attach
its ``METHODS`` to Tensor and its ``FUNCTIONS`` to ``ember``.
"""

from __future__ import annotations

import warnings

import numpy as np

from ember import _dtype
from ember._backend import check_device, to_device
from ember._tensor import Tensor


def is_nonzero(input: Tensor) -> bool:
    """Whether a one-element tensor is not zero (torch's errors for other sizes)."""
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input._data.reshape(()))


def is_same_size(input: Tensor, other: Tensor) -> bool:
    return input._data.shape == other._data.shape


def typename(obj, /) -> str:
    """The legacy type name of a tensor (``'ember.FloatTensor'``), else ``module.qualname``."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def set_default_tensor_type(t, /) -> None:
    """Deprecated: the default float dtype from a legacy type (``ember.DoubleTensor`` or
    ``'torch.DoubleTensor'``)."""
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    if isinstance(t, str):
        name = "ember." + t.removeprefix("torch.").removeprefix("ember.")
        if name not in _dtype.TYPE_BY_NAME:
            raise TypeError(f"invalid type: '{t}'")
        dt = _dtype.TYPE_BY_NAME[name]
    else:
        dt = getattr(t, "dtype", None)
        if not isinstance(dt, _dtype.dtype):
            raise TypeError(f"invalid type object: only floating-point types are supported as "
                            f"the default type, got {t!r}")
    if not dt.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got "
                        f"{_dtype.TYPE_NAMES[dt]}")
    _dtype.set_default_dtype(dt)


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """torch's low-level switch behind ``detect_anomaly`` / ``set_detect_anomaly``."""
    from ember.autograd import graph

    graph.ANOMALY[:] = [bool(enabled), bool(check_nan)]


# --- warnings and errors -----------------------------------------------------------------

_WARN_ALWAYS = [False]


def set_warn_always(b: bool) -> None:
    """Make ember's warn-once warnings warn every time (torch's TORCH_WARN_ONCE switch)."""
    _WARN_ALWAYS[0] = bool(b)


def is_warn_always_enabled() -> bool:
    return _WARN_ALWAYS[0]


def warn_once(seen: list, message: str, stacklevel: int = 3) -> None:
    """Warn the first time (every time under ``set_warn_always(True)``); ``seen`` records it."""
    if not seen or _WARN_ALWAYS[0]:
        seen.append(True)
        warnings.warn(message, UserWarning, stacklevel=stacklevel)


class OutOfMemoryError(RuntimeError):
    """Exception raised when device is out of memory"""


class AcceleratorError(RuntimeError):
    """Exception raised while executing on device"""


for _cls in (OutOfMemoryError, AcceleratorError):
    _cls.__module__ = "ember"


# --- layout ------------------------------------------------------------------------------


def _storage_size(size: tuple, stride: tuple) -> int:
    """Elements a tensor of this size and stride spans (0 if it is empty)."""
    if any(s == 0 for s in size):
        return 0
    return 1 + sum((n - 1) * st for n, st in zip(size, stride))


def empty_strided(size, stride, *, dtype=None, layout=None, device=None,
                  requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor with the given element strides."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(size)}: "
                           f"{list(size)}")
    if any(s < 0 for s in stride):
        raise RuntimeError("as_strided: Negative strides are not supported at the moment, got "
                           f"strides: {list(stride)}")
    dt = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    buf = np.empty(max(_storage_size(size, stride), 1), dt.np)
    item = buf.itemsize
    a = np.lib.stride_tricks.as_strided(buf, size, tuple(s * item for s in stride))
    if device is not None:
        a = to_device(a, check_device(device))
    out = Tensor._make(a)
    return out.requires_grad_(True) if requires_grad else out


def new_empty_strided(self: Tensor, size, stride, *, dtype=None, layout=None, device=None,
                      requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    return empty_strided(size, stride, dtype=dtype or self.dtype, device=device or self.device,
                         requires_grad=requires_grad)


def dim_order(self: Tensor, *, ambiguity_check=False) -> tuple:
    """The dims from outermost to innermost in memory (torch's stride sort, and its checks)."""
    from ember._layout import memory_format

    if not isinstance(ambiguity_check, bool) and not (
            isinstance(ambiguity_check, list) and
            all(isinstance(f, memory_format) for f in ambiguity_check)):
        raise TypeError("The ambiguity_check argument must be a bool or a list of memory formats.")
    shape, strides = self.shape, self.stride()
    formats = ambiguity_check if isinstance(ambiguity_check, list) else []
    check_multiple = ambiguity_check if isinstance(ambiguity_check, bool) else True
    multiple = any(a == b for a, b in zip(strides, strides[1:])) or 1 in shape
    if check_multiple and multiple and \
            sum(self.is_contiguous(memory_format=f) for f in formats) != 1:
        raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact "
                           "one of the given memory formats.")
    return _physical_order(shape, strides)


def _physical_order(shape: tuple, strides: tuple) -> tuple:
    """torch._prims_common's logical-to-physical permutation of one tensor."""
    from ember._layout import channels_last, contiguous_format, is_contiguous_as

    nd = len(shape)
    if nd <= 1:
        return tuple(range(nd))
    contiguous = is_contiguous_as(shape, strides, contiguous_format)
    last = is_contiguous_as(shape, strides, channels_last)
    if contiguous and not last:
        return tuple(range(nd))
    if last and not contiguous:
        return (0, *range(2, nd), 1)

    def swap(a: int, b: int) -> int:
        sa, sb = strides[a], strides[b]
        if sa == 0 or sb == 0:
            return 0
        if sa == sb:
            return 0 if _ge(shape[b], shape[a]) else 1
        return -1 if _ge(sb, sa) else 1 if _ge(sa, sb) else 0

    perm = list(reversed(range(nd)))
    for i in range(1, nd):  # insertion sort that tolerates ambiguous comparisons
        d1 = i
        for d0 in reversed(range(i)):
            c = swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    return tuple(reversed(perm))


def _ge(a: int, b: int) -> bool:
    return b == 0 or (a != 0 and (a >= b or a % b == 0))


# --- Tensor methods ----------------------------------------------------------------------


def new(self: Tensor, *args, device=None) -> Tensor:
    """The legacy constructor in ``self``'s dtype: ``x.new(2, 3)`` (uninitialised),
    ``x.new([1, 2])`` (data), ``x.new()`` (empty), ``x.new(tensor)`` (an alias)."""
    if len(args) == 1 and isinstance(args[0], Tensor):
        other = args[0]
        if other.dtype is not self.dtype:
            raise TypeError(f"expected {self.type()} (got {other.type()})")
        return other._alias()
    return Tensor(*args, dtype=self.dtype, device=device or self.device)


def module_load(self: Tensor, other: Tensor, assign: bool = False) -> Tensor:
    """How ``load_state_dict`` turns ``other`` into the value that replaces ``self``."""
    return other.detach() if assign else self.copy_(other).detach()


def _false(self: Tensor) -> bool:
    return False


def detach(input: Tensor) -> Tensor:
    return input.detach()


def detach_(input: Tensor) -> Tensor:
    return input.detach_()


def get_device(input: Tensor) -> int:
    return input.get_device()


def is_inference(input: Tensor) -> bool:
    return input.is_inference()


def is_signed(input: Tensor) -> bool:
    return input.is_signed()


def is_distributed(input: Tensor) -> bool:
    return False


METHODS = {
    "is_nonzero": is_nonzero, "is_same_size": is_same_size, "dim_order": dim_order,
    "new": new, "new_empty_strided": new_empty_strided, "module_load": module_load,
    "const_data_ptr": Tensor.data_ptr, "is_distributed": _false, "is_nested": property(_false),
}
FUNCTIONS = {
    "is_nonzero": is_nonzero, "is_same_size": is_same_size, "typename": typename,
    "set_default_tensor_type": set_default_tensor_type, "set_anomaly_enabled": set_anomaly_enabled,
    "empty_strided": empty_strided, "detach": detach, "detach_": detach_,
    "get_device": get_device, "is_inference": is_inference, "is_signed": is_signed,
    "is_distributed": is_distributed, "set_warn_always": set_warn_always,
    "is_warn_always_enabled": is_warn_always_enabled, "OutOfMemoryError": OutOfMemoryError,
    "AcceleratorError": AcceleratorError,
}
