"""Devices, and the array module (NumPy, or CuPy imported lazily) behind each."""

from __future__ import annotations

import numpy as np

_DEVICE_TYPES = ("cpu", "cuda", "mps", "meta")


class device:
    """torch.device: ``device('cpu')``, ``device('cuda', 0)``, ``device('cuda:0')``."""

    __slots__ = ("type", "index")

    def __init__(self, type: str | device, index: int | None = None) -> None:
        if isinstance(type, device):
            self.type, self.index = type.type, type.index
            return
        if not isinstance(type, str):
            raise TypeError(f"device() received an invalid combination of arguments: {type!r}")
        name, _, idx = type.partition(":")
        if name not in _DEVICE_TYPES:
            raise RuntimeError(
                "Expected one of cpu, cuda, mps, meta device type at start of device string: "
                f"{type}"
            )
        if idx:
            if index is not None:
                raise RuntimeError("type (string) must not include an index because index was "
                                   f"passed explicitly: {type}")
            index = int(idx)
        self.type = name
        self.index = index

    def __repr__(self) -> str:
        idx = "" if self.index is None else f", index={self.index}"
        return f"device(type='{self.type}'{idx})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (str(self),))


CPU = device("cpu")
_default_device = CPU


def get_default_device() -> device:
    return _default_device


def set_default_device(dev) -> None:
    global _default_device
    _default_device = CPU if dev is None else check_device(dev)


def _cupy():
    try:
        import cupy  # noqa: PLC0415 - optional, imported only when CUDA is asked for
    except ImportError:
        return None
    try:
        if cupy.cuda.runtime.getDeviceCount() > 0:
            return cupy
    except Exception:  # noqa: BLE001 - any CUDA runtime failure means "no GPU"
        return None
    return None


def cuda_is_available() -> bool:
    return _cupy() is not None


def check_device(dev) -> device:
    """Normalise a device argument and refuse devices this machine does not have."""
    d = dev if isinstance(dev, device) else device(dev) if not isinstance(dev, int) else None
    if d is None:
        d = device("cuda", dev)
    if d.type == "cpu":
        return CPU if d.index in (None, 0) else d
    if d.type == "cuda":
        if not cuda_is_available():
            raise AssertionError(
                "Torch not compiled with CUDA enabled (ember: install CuPy and run on a machine "
                "with an NVIDIA GPU to use device 'cuda')"
            )
        raise NotImplementedError("ember's CUDA backend is not implemented yet")
    raise RuntimeError(f"ember has no backend for device type '{d.type}'")


def xp_for(dev: device):
    """The array module for a device."""
    return np
