"""nn.Parameter (a Tensor a Module registers as learnable) and nn.Buffer (a marked Tensor)."""

from __future__ import annotations

from collections import OrderedDict

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


__all__ = ["Parameter", "Buffer"]
