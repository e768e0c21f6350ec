"""``FunctionalLayer``: the base of layers that are one ``F`` function plus stored options.

A private module: it has no ``__all__``, so the package's auto-discovery exports nothing from it.
"""

from __future__ import annotations

from ember._tensor import Tensor
from ember.nn.modules.module import Module


class FunctionalLayer(Module):
    """A layer whose forward is ``_fn(input, *options)``: ReLU, Softplus, Dropout, Unfold, ...

    A subclass sets ``_fn``, wrapped in ``staticmethod`` so that it is not bound to the layer,
    and ``_args``: the attributes its ``__init__`` stores, in the order ``_fn`` takes them after
    the input. ``training`` may be one of them (Module's own flag, set by ``train``/``eval``).
    """

    _fn = None
    _args: tuple[str, ...] = ()

    def forward(self, input: Tensor) -> Tensor:
        return self._fn(input, *[getattr(self, name) for name in self._args])

    def extra_repr(self) -> str:
        """``name=value`` for each option, as torch prints them; ``training`` never (the repr
        does not show the mode) and ``inplace`` only when it is on."""
        shown = [name for name in self._args
                 if name != "training" and (name != "inplace" or self.inplace)]
        return ", ".join(f"{name}={getattr(self, name)}" for name in shown)
