"""multilabel_margin_loss: torch's ``MultilabelMarginLossBackward0``, one fused node.

Each row's target lists class indices up to the first -1; the loss of a row is
``sum_{j in targets} sum_{i not in targets} max(0, 1 - (x[j] - x[i])) / C`` (a class listed
twice counts twice, as in ATen's loop). Saves the input, the target and ``is_target``.
"""

from __future__ import annotations

import numpy as np

from ember._backend import xp_of
from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.ops._promote import scalar
from ember.ops.loss import _reduce, _scaled


def _counts(target: np.ndarray, c: int) -> tuple[np.ndarray, np.ndarray]:
    """How often each class is listed before a row's first -1, and the 0/1 ``is_target``."""
    n = target.shape[0]
    listed = np.cumprod(target != -1, axis=1).astype(bool)
    counts = np.zeros((n, c), dtype=np.int64)
    rows = np.broadcast_to(np.arange(n)[:, None], target.shape)
    np.add.at(counts, (rows[listed], target[listed]), 1)
    return counts, counts > 0


class MultilabelMarginLoss(Op):
    node_name = "MultilabelMarginLossBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x, target=None, reduction="mean"):
        xp = xp_of(x)
        c = x.shape[-1] if x.ndim else 1
        x2 = x.reshape(-1, c)
        counts, is_target = _counts(np.asarray(target).reshape(-1, c), c)
        ctx.reduction, ctx.n = reduction, x2.shape[0]
        ctx.save_extra(target, is_target.reshape(x.shape).astype(x.dtype))
        margins = xp.maximum(scalar(1, x.dtype) - x2[:, :, None] + x2[:, None, :], 0)
        pairs = xp.asarray(counts[:, :, None] * ~is_target[:, None, :], dtype=x.dtype)
        loss = (margins * pairs).sum((1, 2)) / scalar(c, x.dtype)
        return _reduce(loss.reshape(x.shape[:-1]) if x.ndim else loss.reshape(()), reduction)

    @staticmethod
    def backward(ctx, g):
        x, target, is_target = ctx.saved_tensors
        c = x.shape[-1] if x.ndim else 1
        x2 = x.reshape(-1, c)
        counts, mask = _counts(target._data.reshape(-1, c), c)
        active = (1 - x2._data[:, :, None] + x2._data[:, None, :]) > 0
        coef = Tensor._make(np.asarray(counts[:, :, None] * ~mask[:, None, :] * active,
                                       dtype=x._data.dtype) / c)
        g = _scaled(g, ctx)
        g = g.reshape(-1, 1, 1) if ctx.reduction == "none" else g
        coef = coef * g
        return (coef.sum(1) - coef.sum(2)).reshape(x.shape)
