"""Conv1d/2d/3d and ConvTranspose1d/2d/3d (torch's ``_ConvNd`` family)."""

from __future__ import annotations

import math

from ember import _creation
from ember._tensor import Tensor
from ember.nn import init
from ember.nn._functional import conv as F
from ember.nn._functional.vision import pad as _pad
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter

_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


def _ntuple(v, n: int) -> tuple:
    if isinstance(v, int):
        return (v,) * n
    return tuple(v)


class _ConvNd(Module):
    """Shared constructor, init and repr of the convolution layers."""

    _nd = 2
    transposed = False

    # Conv1d and Conv2d inherit this signature (torch's); the transposed convolutions add
    # ``output_padding`` and set it after this runs.
    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None) -> None:
        super().__init__()
        n = self._nd
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in {"same", "valid"}:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 f"{ {'valid', 'same'} }")
            if padding == "same" and any(s != 1 for s in _ntuple(stride, n)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {_PADDING_MODES}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _ntuple(kernel_size, n)
        self.stride = _ntuple(stride, n)
        self.padding = padding if isinstance(padding, str) else _ntuple(padding, n)
        self.dilation = _ntuple(dilation, n)
        self.output_padding = (0,) * n
        self.groups, self.padding_mode = groups, padding_mode
        if isinstance(self.padding, str):
            total = [d * (k - 1) for d, k in zip(self.dilation, self.kernel_size)]
            pairs = [(t // 2, t - t // 2) if self.padding == "same" else (0, 0) for t in total]
        else:
            pairs = [(p, p) for p in self.padding]
        self._reversed_padding_repeated_twice = [v for pr in reversed(pairs) for v in pr]
        shape = ((in_channels, out_channels // groups) if self.transposed else
                 (out_channels, in_channels // groups)) + self.kernel_size
        self.weight = Parameter(_creation.empty(shape, dtype=dtype))
        if bias:
            self.bias = Parameter(_creation.empty(out_channels, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """kaiming_uniform_(a=sqrt(5)) weights; bias uniform in +-1/sqrt(fan_in), as torch."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s

    def _conv_forward(self, input: Tensor, weight: Tensor, bias) -> Tensor:
        fn = getattr(F, f"conv{self._nd}d")
        if self.padding_mode != "zeros":
            input = _pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return fn(input, weight, bias, self.stride, 0, self.dilation, self.groups)
        return fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_ConvNd):
    """1-D convolution over (N, C_in, L) input."""

    _nd = 1


class Conv2d(_ConvNd):
    """2-D convolution over (N, C_in, H, W) input."""


class Conv3d(_ConvNd):
    """3-D convolution over (N, C_in, D, H, W) input."""

    _nd = 3


class _ConvTransposeNd(_ConvNd):
    transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                 padding_mode: str = "zeros", device=None, dtype=None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f"{type(self).__name__}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device=device, dtype=dtype)
        self.output_padding = _ntuple(output_padding, self._nd)

    def _output_padding(self, input: Tensor, output_size) -> tuple:
        if output_size is None:
            return self.output_padding
        n = self._nd
        output_size = tuple(output_size)[-n:]
        res = []
        for i in range(n):
            base = ((input.shape[-n + i] - 1) * self.stride[i] - 2 * self.padding[i]
                    + self.dilation[i] * (self.kernel_size[i] - 1) + 1)
            extra = output_size[i] - base
            if not 0 <= extra < max(self.stride[i], self.dilation[i]):
                raise ValueError(f"requested an output size of {list(output_size)}, but valid "
                                 f"sizes range from {base} to "
                                 f"{base + max(self.stride[i], self.dilation[i]) - 1} (for an "
                                 f"input of {list(input.shape[-n:])})")
            res.append(extra)
        return tuple(res)

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        fn = getattr(F, f"conv_transpose{self._nd}d")
        opad = self._output_padding(input, output_size)
        return fn(input, self.weight, self.bias, self.stride, self.padding, opad, self.groups,
                  self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution (the adjoint of Conv1d in its input)."""

    _nd = 1


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution (the adjoint of Conv2d in its input)."""


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution (the adjoint of Conv3d in its input)."""

    _nd = 3


__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]
