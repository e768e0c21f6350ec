"""conv_tbc: a 1-d convolution over (time, batch, channel) input, torch's ``ConvTbcBackward0``.

``out[t, b, o] = bias[o] + sum_{k, i} xpad[t + k, b, i] * w[k, i, o]``, with ``xpad`` the input
padded by ``pad`` time steps on both sides. Backward is conv_tbc again (the input's gradient:
the gradient convolved with the time-flipped, transposed weight) and one product per kernel tap
(the weight's), so it is differentiable in turn. Forward is one GEMM per kernel tap.
"""

from __future__ import annotations

from ember._backend import xp_of
from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.ops import _lowp


def _pad_time(x, pad: int, xp):
    """``x`` with ``pad`` zero steps before and after on dim 0 (a negative pad crops)."""
    if pad < 0:
        return x[-pad:x.shape[0] + pad]
    return xp.pad(x, ((pad, pad), (0, 0), (0, 0)))


@_lowp.float32_math
def _taps(xpad, w, bias, steps: int):
    """``bias`` plus one GEMM per kernel tap, ``(T' * B, I) @ (I, O)``."""
    k, cin, cout = w.shape
    rows = steps * xpad.shape[1]
    out = xp_of(xpad).empty((steps, xpad.shape[1], cout), dtype=xpad.dtype)
    out[...] = bias
    flat = out.reshape(rows, cout)
    for i in range(k):
        flat += xpad[i:i + steps].reshape(rows, cin) @ w[i]
    return out


class ConvTbc(Op):
    node_name = "ConvTbcBackward0"
    saves = (0, 1, 2)

    @staticmethod
    def forward(ctx, x, w, bias, pad=0):
        xp = xp_of(x)
        ctx.pad = pad
        k = w.shape[0]
        steps = x.shape[0] + 2 * pad - k + 1
        if steps < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {steps}: "
                               f"[{steps}, {x.shape[1]}, {w.shape[2]}]")
        return _taps(xp.ascontiguousarray(_pad_time(x, pad, xp)), w, bias, steps)

    @staticmethod
    def backward(ctx, g):
        from ember.nn._functional.vision import pad as fpad
        from ember.ops.joining import stack

        x, w, bias = ctx.saved_tensors
        need = ctx.needs_input_grad
        k, p = w.shape[0], ctx.pad
        gx = gw = gb = None
        if need[0]:  # the gradient of the padded input, then un-padded (a crop: zeros back)
            full = conv_tbc(g, w.flip(0).transpose(1, 2), bias.new_zeros(w.shape[1]), k - 1)
            gx = fpad(full, (0, 0, 0, 0, -p, -p))
        if need[1]:
            xpad = fpad(x, (0, 0, 0, 0, p, p))
            steps, cin = g.shape[0], x.shape[2]
            g2 = g.reshape(-1, g.shape[2])
            gw = stack([xpad[i:i + steps].reshape(-1, cin).T @ g2 for i in range(k)])
        if need[2]:
            gb = g.sum((0, 1))
        return gx, gw, gb


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """1-d convolution of a (time, batch, in_channels) input with a (kernel_width,
    in_channels, out_channels) weight; ``pad`` time steps of zeros on both sides."""
    if not isinstance(bias, Tensor):
        raise TypeError(f"conv_tbc(): argument 'bias' (position 3) must be Tensor, not "
                        f"{type(bias).__name__}")
    if input.ndim != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.ndim != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, "
                           "out_channels.")
    if bias.ndim != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    if not input.dtype == weight.dtype == bias.dtype:
        from ember.nn._functional.loss import _cname

        other = weight.dtype if weight.dtype != input.dtype else bias.dtype
        raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                           f"{_cname(input.dtype)} and {_cname(other)}")
    return ConvTbc.apply(input, weight, bias, pad=int(pad))


METHODS: dict = {}
FUNCTIONS = {"conv_tbc": conv_tbc}
