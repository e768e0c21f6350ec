"""F.conv1d/2d/3d, F.conv_transpose1d/2d/3d, F.unfold/F.fold (see ember/ops/conv.py)."""

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

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "fold", "unfold"]
