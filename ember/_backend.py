"""Devices, and the array module behind each.

ember computes with NumPy on the CPU. Device objects exist for every device type torch knows,
so programs that name ``'cuda'`` parse; putting a tensor on a device other than the CPU raises
torch's error for a machine without that device.
"""

from __future__ import annotations

import numpy as np

_DEVICE_TYPES = (
    "cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga",
    "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone",
)


def _bad_args(got) -> TypeError:
    return TypeError(
        f"device() received an invalid combination of arguments - got "
        f"({type(got).__name__}), but expected one of:\n * (torch.device device)\n"
        " * (str type, int index = -1)\n"
    )


class device:
    """torch.device: ``device('cpu')``, ``device('cuda', 0)``, ``device('cuda:0')``.

    >>> ember.device('cuda:1')
    device(type='cuda', index=1)
    """

    __slots__ = ("type", "index")

    def __init__(self, type: str | device | int, index: int | None = None) -> None:
        if isinstance(type, device):
            self.type, self.index = type.type, type.index
            return
        if isinstance(type, int) and not isinstance(type, bool):
            # A bare index means "accelerator number N"; ember has no accelerator.
            raise RuntimeError("Cannot access accelerator device when none is available.")
        if not isinstance(type, str):
            raise _bad_args(type)
        name, sep, idx = type.partition(":")
        if name not in _DEVICE_TYPES:
            raise RuntimeError(
                f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start of device "
                f"string: {type}"
            )
        if sep:
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}'")
            if index is not None:
                raise RuntimeError("type (string) must not include an index because index was "
                                   f"passed explicitly: {type}")
            index = int(idx)
        if index is not None and index < 0:
            raise RuntimeError("Device index must not be negative")
        self.type = name
        self.index = index

    def __repr__(self) -> str:
        idx = "" if self.index is None else f", index={self.index}"
        return f"device(type='{self.type}'{idx})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other) -> bool:
        # As in torch, a device never equals a string: device('cpu') == 'cpu' is False.
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (str(self),))


CPU = device("cpu")
_default_device = CPU


def get_default_device() -> device:
    """The device factories use when none is given (always the CPU unless changed)."""
    return _default_device


def set_default_device(dev) -> None:
    """Set the default device; only the CPU is available in ember."""
    global _default_device
    _default_device = CPU if dev is None else check_device(dev)


def _cupy_gpu_present() -> bool:
    try:
        import cupy  # noqa: PLC0415 - optional; only asked about to word the error
    except ImportError:
        return False
    try:
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - any CUDA runtime failure means "no GPU"
        return False


def no_cuda_error() -> AssertionError:
    return AssertionError("Torch not compiled with CUDA enabled")


def check_device(dev) -> device:
    """Normalise a device argument; refuse devices ember cannot compute on."""
    d = dev if isinstance(dev, device) else device(dev)
    if d.type == "cpu":
        return CPU
    if d.type == "cuda":
        if _cupy_gpu_present():
            raise NotImplementedError(
                "ember computes with NumPy on the CPU; it has no CUDA backend (a GPU and CuPy "
                "were found, but ember does not use them). Use device='cpu'."
            )
        raise no_cuda_error()
    raise RuntimeError(f"PyTorch is not linked with support for {d.type} devices")


def xp_for(dev: device):
    """The array module for a device."""
    return np
