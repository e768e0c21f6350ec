"""RemovableHandle: what every ``register_*hook`` returns."""

from __future__ import annotations

import itertools
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
