"""Autograd Functions behind modules (torch.nn.modules._functions): SyncBatchNorm, CrossMapLRN2d.

SyncBatchNorm normalises with the statistics of the whole group's batch. Forward: each rank's
per-channel count, mean and sum of squared deviations are all-gathered and combined (Chan's
parallel formula, in float64); backward: the per-channel sums of ``dy`` and ``dy * (x - mean)``
are all-reduced, then each rank computes its own input gradient from them, as torch does.
Weight and bias gradients stay local; DDP averages them like any other.
"""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor
from ember.autograd.function import Function


class SyncBatchNorm(Function):
    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, eps, momentum,
                process_group, world_size):
        from ember.distributed import collectives as c

        x = input._data
        c_dim = x.shape[1]
        dims = (0, *range(2, x.ndim))
        shape = (1, c_dim) + (1,) * (x.ndim - 2)
        count = x.size // max(c_dim, 1)
        x64 = x.astype(np.float64)
        mean = x64.mean(axis=dims)
        m2 = ((x64 - mean.reshape(shape)) ** 2).sum(axis=dims)
        mine = Tensor._make(np.concatenate([[count], mean, m2]))
        every = Tensor._make(np.empty(world_size * mine.numel()))
        c.all_gather_into_tensor(every, mine, group=process_group)
        rows = every._data.reshape(world_size, -1)
        counts, means, m2s = rows[:, :1], rows[:, 1:1 + c_dim], rows[:, 1 + c_dim:]
        total = counts.sum()
        if total <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input "
                             f"size {list(x.shape)}")
        gmean = (counts * means).sum(axis=0) / total
        gvar = (m2s + counts * (means - gmean) ** 2).sum(axis=0) / total
        invstd = 1.0 / np.sqrt(gvar + eps)
        if running_mean is not None:
            for run, value in ((running_mean, gmean), (running_var, gvar * total / (total - 1))):
                run._data *= 1.0 - momentum
                run._data += (momentum * value).astype(run._data.dtype)
                run._vc[0] += 1
        mean_t = Tensor._make(gmean.astype(x.dtype).reshape(shape))
        invstd_t = Tensor._make(invstd.astype(x.dtype).reshape(shape))
        y = (x - mean_t._data) * invstd_t._data
        if weight is not None:
            y = y * weight._data.reshape(shape) + bias._data.reshape(shape)
        ctx.save_for_backward(input, weight, mean_t, invstd_t)
        ctx.process_group, ctx.total, ctx.dims = process_group, int(total), dims
        return Tensor._make(y.astype(x.dtype, copy=False))

    @staticmethod
    def backward(ctx, grad):
        from ember.distributed import collectives as c

        x, weight, mean, invstd = ctx.saved_tensors
        xmu = x - mean
        sum_dy = grad.sum(ctx.dims, keepdim=True)
        sum_dy_xmu = (grad * xmu).sum(ctx.dims, keepdim=True)
        grad_weight = (sum_dy_xmu * invstd).flatten() if ctx.needs_input_grad[1] else None
        grad_bias = sum_dy.flatten() if ctx.needs_input_grad[2] else None
        grad_input = None
        if ctx.needs_input_grad[0]:
            both = Tensor._make(np.concatenate([sum_dy._data.reshape(-1),
                                                sum_dy_xmu._data.reshape(-1)]))
            c.all_reduce(both, group=ctx.process_group)
            g_dy, g_dy_xmu = (Tensor._make(a.reshape(sum_dy.shape))
                              for a in np.split(both._data, 2))
            scale = invstd if weight is None else invstd * weight.reshape(invstd.shape)
            grad_input = (grad - g_dy / ctx.total
                          - xmu * invstd * invstd * g_dy_xmu / ctx.total) * scale
        return grad_input, grad_weight, grad_bias, None, None, None, None, None, None


def _window_sums(a: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``a[:, lo[c]:hi[c]].sum(1)`` for every channel c at once (prefix sums on dim 1)."""
    prefix = np.concatenate([np.zeros_like(a[:, :1]), np.cumsum(a, axis=1)], axis=1)
    return prefix[:, hi] - prefix[:, lo]


class CrossMapLRN2d(Function):
    """torch's legacy (Lua Torch) cross-channel LRN, ``x * (k + alpha / size * s)^-beta``.

    It keeps torch's arithmetic, quirks included: the running window sum ``s`` never drops
    channel 0 (its loop subtracts ``x[c - pre_pad]`` only for ``c > pre_pad``), and backward is
    the legacy formula, whose window is shifted against forward's, not forward's derivative.
    """

    @staticmethod
    def forward(ctx, input, size, alpha=1e-4, beta=0.75, k=1):
        if input.ndim != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.ndim}D "
                             f"instead.")
        ctx.size, ctx.alpha, ctx.beta, ctx.k = size, alpha, beta, k
        x = input._data
        channels = x.shape[1]
        pre_pad = int((size - 1) / 2 + 1)
        c = np.arange(channels)
        lo = np.maximum(c - pre_pad + 1, 1)
        hi = np.minimum(c + pre_pad, channels)
        sq = x * x
        summed = _window_sums(sq, lo, hi) + sq[:, :1]
        scale = (summed * (alpha / size) + k).astype(x.dtype, copy=False)
        ctx.scale = scale
        output = Tensor._make((scale ** -beta * x).astype(x.dtype, copy=False))
        ctx.save_for_backward(input, output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, output = ctx.saved_tensors
        x, y, g, scale = input._data, output._data, grad_output._data, ctx.scale
        size, channels = ctx.size, x.shape[1]
        shift = int(size - (size - 1) / 2)
        c = np.arange(channels)
        lo = np.clip(c - shift, 0, channels)
        hi = np.clip(c + size - shift, 0, channels)
        accum = _window_sums(g * y / scale, lo, hi)
        coef = 2 * ctx.alpha * ctx.beta / size
        grad = scale ** -ctx.beta * g - coef * x * accum
        return Tensor._make(grad.astype(x.dtype, copy=False)), None, None, None, None
