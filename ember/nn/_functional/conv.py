"""F.conv1d/2d/3d, F.conv_transpose1d/2d/3d, F.unfold/F.fold (see ember/ops/conv.py) and
F.conv_tbc (ember/ops/conv_tbc.py)."""

from ember.ops.conv import (
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    fold,
    unfold,
)
from ember.ops.conv_tbc import conv_tbc

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "fold", "unfold", "conv_tbc"]
