"""ember.nn: Module, Parameter, layers, losses, functional, init, utils."""

from ember.nn import functional, init, parallel, utils
from ember.nn.modules import *  # noqa: F403 - every layer class, as torch.nn exports them
from ember.nn.modules import __all__ as _modules_all
from ember.nn.parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

__all__ = ["Buffer", "Parameter", "UninitializedBuffer", "UninitializedParameter", "functional",
           "init", "parallel", "utils", *_modules_all]
