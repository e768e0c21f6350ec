"""RemovableHandle: what every ``register_*hook`` returns; the serialization warning for tensors
with hooks (``warn_if_has_hooks``, silenced by ``unserializable_hook``)."""

from __future__ import annotations

import itertools
import warnings
import weakref


class RemovableHandle:
    """A handle that removes its hook from the dict it was added to (``remove()`` or ``with``)."""

    next_id = itertools.count()

    def __init__(self, hooks_dict: dict, *, extra_dict=None) -> None:
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = next(RemovableHandle.next_id)
        extras = extra_dict if isinstance(extra_dict, list | tuple) else [extra_dict]
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extras if d is not None)

    @classmethod
    def add(cls, hooks_dict: dict, fn) -> RemovableHandle:
        handle = cls(hooks_dict)
        hooks_dict[handle.id] = fn
        return handle

    def remove(self) -> None:
        for ref in (self.hooks_dict_ref, *self.extra_dict_ref):
            d = ref()
            if d is not None:
                d.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()

    def __getstate__(self):
        d = self.hooks_dict_ref()
        return (d, self.id)

    def __setstate__(self, state) -> None:
        self.hooks_dict_ref = weakref.ref(state[0] if state[0] is not None else {})
        self.id = state[1]
        self.extra_dict_ref = ()


def unserializable_hook(f):
    """Mark ``f`` as a hook that is not meant to be saved: saving a tensor with it as a
    backward hook does not warn."""
    f.__torch_unserializable__ = True
    return f


def _tensor_hooks(tensor) -> dict:
    """The hooks ``tensor.register_hook`` added (on the leaf, or on its grad_fn's output)."""
    if tensor._grad_fn is not None:
        return (tensor._grad_fn._tensor_hooks or {}).get(tensor._output_nr) or {}
    aux = tensor._aux
    return aux.hooks[0] if aux is not None and aux.hooks else {}


def warn_if_has_hooks(tensor) -> None:
    """Warn that the backward hooks of ``tensor`` will not be serialized (each one not marked
    with ``unserializable_hook``)."""
    for hook in _tensor_hooks(tensor).values():
        if not hasattr(hook, "__torch_unserializable__"):
            warnings.warn(f"backward hook {hook!r} on tensor will not be serialized.  If this "
                          "is expected, you can decorate the function with "
                          "@torch.utils.hooks.unserializable_hook to suppress this warning",
                          stacklevel=2)


__all__ = ["RemovableHandle", "unserializable_hook", "warn_if_has_hooks"]
