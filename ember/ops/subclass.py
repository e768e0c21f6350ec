"""``Tensor.as_subclass``: the same data as an instance of a Tensor subclass."""

from __future__ import annotations

from ember._tensor import Tensor
from ember.ops.shape import Alias


def as_subclass(self: Tensor, cls: type) -> Tensor:
    """A ``cls`` instance over ``self``'s storage (writes show in both), attached to the graph
    through an ``AliasBackward0`` node when ``self`` requires grad; ``cls.__init__`` is not
    called."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from "
                        "Tensor is not possible. Make sure your class inherits from Tensor.")
    out = Alias.apply(self)
    out.__class__ = cls
    return out


METHODS = {"as_subclass": as_subclass}
FUNCTIONS: dict = {}
