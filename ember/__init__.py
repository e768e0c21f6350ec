"""ember: PyTorch's training stack in readable Python on NumPy. ``import ember as torch``."""

from __future__ import annotations

from ember import _dtype, _malloc  # noqa: F401 - tunes malloc once, at import
from ember._backend import device, get_default_device, set_default_device
from ember._dtype import (
    dtype, finfo, iinfo, bfloat16, float16, float32, float64, int8, int16, int32, int64, uint8,
    complex64, complex128, get_default_dtype, set_default_dtype, promote_types,
)
from ember._tensor import Size, Tensor
from ember._tensor_casts import LEGACY_TYPES as _LEGACY_TYPES
from ember._random import (
    Generator, default_generator, manual_seed, seed, initial_seed, get_rng_state, set_rng_state,
)
from ember import _creation, _random, ops as _ops
from ember._tensor_str import set_printoptions
from ember.autograd.grad_mode import (
    no_grad, enable_grad, set_grad_enabled, is_grad_enabled, inference_mode,
    is_inference_mode_enabled,
)

bool = _dtype.bool_  # noqa: A001 - torch.bool shadows the builtin inside this namespace too
float = float32  # noqa: A001
double = float64
half = float16
long = int64
int = int32  # noqa: A001
short = int16
cfloat = complex64
cdouble = complex128

for _mod in (_creation, _random):
    for _name, _fn in _mod.METHODS.items():
        setattr(Tensor, _name, _fn)
    globals().update(_mod.FUNCTIONS)
_ops.install(Tensor, globals())
globals().update(_LEGACY_TYPES)  # FloatTensor, LongTensor, ...
# The public classes print as torch's do (<class 'torch.Tensor'>): where users import them.
for _cls in (Tensor, Size, dtype, Generator):
    _cls.__module__ = "ember"

from ember import autograd  # noqa: E402
from ember._flags import *  # noqa: E402, F403 - matmul precision, determinism, threads
from ember.amp.autocast_mode import *  # noqa: E402, F403

__version__ = "0.1.0"


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


def numel(x: Tensor) -> int:
    return x.numel()


def result_type(a, b) -> dtype:
    ts = [x for x in (a, b) if isinstance(x, Tensor)]
    ss = [x for x in (a, b) if not isinstance(x, Tensor)]
    return _dtype.result_type(ts, ss)


def can_cast(from_: dtype, to: dtype) -> bool:
    return from_._kind <= to._kind


def is_floating_point(x: Tensor) -> bool:
    return x.is_floating_point()


def is_complex(x: Tensor) -> bool:
    return x.is_complex()


# Submodules and names that live in them load on first use: `import ember` stays fast, and
# `ember.nn`, `ember.optim`, `ember.save`, ... work without explicit imports, as in torch.
_LAZY_MODULES = {
    "nn", "optim", "utils", "linalg", "cpu", "cuda", "backends", "accelerator", "vision", "viz",
    "serialization", "testing", "special", "examples", "random", "compiler", "_dynamo",
    "distributed", "func", "distributions", "profiler", "multiprocessing", "onnx", "fft",
    "signal",
}
_LAZY_NAMES = {"save": "ember.serialization", "load": "ember.serialization",
               "compile": "ember._compile", "from_dlpack": "ember.utils.dlpack"}


def __getattr__(name: str):
    import importlib

    if name in _LAZY_MODULES:
        return importlib.import_module(f"ember.{name}")
    if name in _LAZY_NAMES:
        return getattr(importlib.import_module(_LAZY_NAMES[name]), name)
    raise AttributeError(f"module 'ember' has no attribute '{name}'")


from ember.autograd.anomaly_mode import (  # noqa: E402 - torch exposes these at top level
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
)

from ember._layout import (  # noqa: E402
    channels_last, channels_last_3d, contiguous_format, layout, legacy_contiguous_format,
    memory_format, preserve_format, strided,
)

from math import e, inf, nan, pi  # noqa: E402 - torch.pi, torch.inf, ... as in torch

newaxis = None  # x[:, torch.newaxis]

# autocast's casts on the ops of torch's autocast lists (ember/amp/_casting.py); ember.nn and
# ember.linalg install theirs when they load.
from ember.amp import _casting  # noqa: E402

_casting.install()
