"""F.conv1d/2d, F.conv_transpose1d/2d, F.unfold/F.fold (see ember/ops/conv.py)."""

from ember.ops.conv import conv1d, conv2d, conv_transpose1d, conv_transpose2d, fold, unfold

__all__ = ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "fold", "unfold"]
