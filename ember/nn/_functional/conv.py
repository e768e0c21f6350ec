"""F.conv1d, F.conv2d, F.conv_transpose1d, F.conv_transpose2d (see ember/ops/conv.py)."""

from ember.ops.conv import conv1d, conv2d, conv_transpose1d, conv_transpose2d

__all__ = ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d"]
