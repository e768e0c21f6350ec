"""Laying convolution weights out channels-last (``convert_conv2d/3d_weight_memory_format``)."""

from __future__ import annotations

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert(module, memory_format, kinds: tuple):
    for m in module.modules():
        if isinstance(m, kinds):
            w = m.weight.detach().clone(memory_format=memory_format)
            m.weight.data = w
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """Re-lay the weights of every Conv2d / ConvTranspose2d in ``module`` in ``memory_format``
    (``channels_last`` for NHWC); returns the module."""
    from ember.nn import Conv2d, ConvTranspose2d

    return _convert(module, memory_format, (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module, memory_format):
    """As ``convert_conv2d_weight_memory_format``, for Conv3d / ConvTranspose3d."""
    from ember.nn import Conv3d, ConvTranspose3d

    return _convert(module, memory_format, (Conv3d, ConvTranspose3d))
