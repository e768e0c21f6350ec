"""Padding layers: constant (and zero), reflection, replication and circular."""

from __future__ import annotations

from ember._tensor import Tensor
from ember.nn._functional.vision import pad
from ember.nn.modules.module import Module


class _PadNd(Module):
    _nd = 1
    _mode = "constant"

    def __init__(self, padding) -> None:
        super().__init__()
        n = 2 * self._nd
        self.padding = (padding,) * n if isinstance(padding, int) else tuple(padding)
        if len(self.padding) != n:
            raise ValueError(f"expected padding of length {n}, got {len(self.padding)}")

    def forward(self, input: Tensor) -> Tensor:
        return pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


def _family(prefix: str, mode: str | None) -> dict:
    classes = {}
    for nd in (1, 2, 3):
        name = f"{prefix}{nd}d"
        base = _ConstantPadNd if mode is None else _PadNd
        attrs = {"_nd": nd, "__module__": __name__,
                 "__doc__": f"Pad the last {nd} dim(s) ({mode or 'constant'})."}
        if mode is not None:
            attrs["_mode"] = mode
        classes[name] = type(name, (base,), attrs)
    return classes


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


_CLASSES = {**_family("ConstantPad", None), **_family("ReflectionPad", "reflect"),
            **_family("ReplicationPad", "replicate"), **_family("CircularPad", "circular")}
for _nd in (1, 2, 3):
    _CLASSES[f"ZeroPad{_nd}d"] = type(f"ZeroPad{_nd}d", (_ZeroPadNd,),
                                      {"_nd": _nd, "__module__": __name__,
                                       "__doc__": f"Zero-pad the last {_nd} dim(s)."})
globals().update(_CLASSES)

__all__ = sorted(_CLASSES)
