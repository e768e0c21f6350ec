"""nn.Parameter (a Tensor a Module registers as learnable), nn.Buffer (a marked Tensor), and
the uninitialized parameters and buffers of lazy modules."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from ember._tensor import Tensor


class Parameter(Tensor):
    """A Tensor that a Module registers as a parameter when assigned as an attribute.

    It shares storage with ``data`` and requires grad by default; ops on it return plain Tensors.
    """

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            from ember._creation import empty

            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): argument 'data' must be Tensor, not "
                            f"{type(data).__name__}")
        p = object.__new__(cls)
        p._init(data._data)
        p._vc = data._vc  # a detached alias of data, as torch's _make_subclass
        if requires_grad:
            p.requires_grad_(True)
        return p

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        pass

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.data.clone(), self.requires_grad)
        if self._grad is not None:
            result._grad = self._grad.__deepcopy__(memo)
        if self.__dict__:
            import copy

            result.__dict__.update(copy.deepcopy(self.__dict__, memo))
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (self.data, self.requires_grad, OrderedDict(),
                                     self.__dict__ or None))


def _rebuild_parameter(data, requires_grad, backward_hooks, state=None):
    p = Parameter(data, requires_grad)
    if state:
        p.__dict__.update(state)
    return p


class _BufferMeta(type):
    """``isinstance(t, Buffer)`` is true for tensors marked by ``Buffer(...)``, as in torch."""

    def __instancecheck__(cls, instance) -> bool:
        if cls is Buffer:
            return isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False)
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """Marks a Tensor to be registered as a buffer when assigned to a Module attribute."""

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True):
        if data is None:
            from ember._creation import empty

            data = empty(0)
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t


class _Unmaterialized(np.ndarray):
    """The empty array behind an uninitialized tensor: its metadata reads (dtype, ``astype``
    for ``.to()``), but computing with it raises torch's error for using a lazy module's
    parameter before the first forward."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        raise _uninitialized_error(ufunc.__name__)

    def __array_function__(self, func, types, args, kwargs):
        raise _uninitialized_error(func.__name__)


def _uninitialized_error(where: str) -> ValueError:
    return ValueError(
        f"Attempted to use an uninitialized parameter in {where}. This error happens when you "
        "are using a `LazyModule` or explicitly manipulating `torch.nn.parameter."
        "UninitializedParameter` objects. When using LazyModules Call `forward` with a dummy "
        "batch to initialize the parameters before calling torch functions")


class UninitializedTensorMixin:
    """A parameter or buffer whose shape is not known yet; ``materialize`` gives it one."""

    __slots__ = ()
    cls_to_become: type

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Allocate (uninitialised) storage of ``shape`` and become a ``cls_to_become``."""
        from ember._creation import empty

        self.data = empty(shape, device=device or self.device, dtype=dtype or self.dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually "
            "happens in `load_state_dict` when trying to load an uninitialized parameter into "
            "an initialized one. Call `forward` to initialize the parameters before accessing "
            "their attributes.")

    def share_memory_(self):
        raise RuntimeError(
            "Can't share memory on an uninitialized parameter or buffer. Call `forward` to "
            "initialize the parameters before calling `module.share_memory()`.")

    def __repr__(self) -> str:
        return f"<{self.__class__.__name__}>"

    def __reduce_ex__(self, proto):
        return (self.__class__, (self.requires_grad,))


def _unmaterialized(device, dtype) -> np.ndarray:
    from ember._creation import empty

    return empty(0, device=device, dtype=dtype)._data.view(_Unmaterialized)


def is_lazy(param) -> bool:
    """Whether ``param`` is an uninitialized parameter or buffer."""
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A Parameter of a lazy module before its first call (``LazyLinear`` and friends)."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        p = object.__new__(cls)
        p._init(_unmaterialized(device, dtype))
        if requires_grad:
            p.requires_grad_(True)
        return p

    def __init__(self, requires_grad: bool = True, device=None, dtype=None) -> None:
        pass

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.requires_grad, self.device, self.dtype)
        return memo[id(self)]


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer of a lazy module before its first call (``LazyBatchNorm*``'s statistics)."""

    cls_to_become = Tensor

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None,
                persistent: bool = True):
        t = object.__new__(cls)
        t._init(_unmaterialized(device, dtype))
        if requires_grad:
            t.requires_grad_(True)
        t.persistent = persistent
        t._is_buffer = True
        return t

    def __init__(self, requires_grad: bool = False, device=None, dtype=None,
                 persistent: bool = True) -> None:
        pass


__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "is_lazy"]
