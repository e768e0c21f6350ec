"""ember.nn: Module, Parameter, layers, losses, functional, init, utils."""

from ember.nn import functional, init, parallel, utils
from ember.nn.modules import *  # noqa: F403 - every layer class, as torch.nn exports them
from ember.nn.modules import __all__ as _modules_all
from ember.nn.parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

__all__ = ["Buffer", "Parameter", "UninitializedBuffer", "UninitializedParameter", "functional",
           "init", "parallel", "utils", *_modules_all]

from ember.amp import _casting  # noqa: E402
from ember.nn import attention  # noqa: E402, F401 - torch.nn.attention, loaded with torch.nn
from ember.ops import _lowp  # noqa: E402

_lowp.install()  # float32 math for the half-precision kernels defined in ember.nn
_casting.install()  # autocast's casts on the listed nn.functional ops
