"""``F.ctc_loss``: Connectionist Temporal Classification, as torch's CPU kernel computes it.

The forward (alpha) and backward (beta) recursions run over time in log space, vectorised over
the batch and the extended label sequence (a blank between and around the targets); the
gradient with respect to ``log_probs`` is torch's ``exp(lp) - exp(log(sum alpha beta) + nll
- lp)``, zero past each input length. The loss is once differentiable, as in torch.
"""

from __future__ import annotations

import numpy as np

from ember._creation import legacy_name
from ember._tensor import Tensor
from ember.autograd.function import Function, once_differentiable
from ember.ops.pointwise import where

__all__ = ["ctc_loss"]

_NEG_INF = -np.inf


def _lse(*terms: np.ndarray) -> np.ndarray:
    """log(sum(exp(terms))) elementwise, with torch's guard for all -inf (max taken as 0)."""
    m = np.maximum.reduce(terms)
    m = np.where(m == _NEG_INF, 0, m)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(sum(np.exp(t - m) for t in terms)) + m


def _shift(a: np.ndarray, k: int, fill=_NEG_INF) -> np.ndarray:
    """``a`` moved k places right (k > 0) or left (k < 0) along the last axis."""
    out = np.full_like(a, fill)
    if k > 0:
        out[..., k:] = a[..., :-k]
    else:
        out[..., :k] = a[..., -k:]
    return out


class _Geometry:
    """Extended targets ``l'`` (N, S'), their validity, and the skip transitions."""

    def __init__(self, targets: np.ndarray, target_lengths: np.ndarray, blank: int) -> None:
        n, max_len = targets.shape
        self.width = 2 * max_len + 1
        ext = np.full((n, self.width), blank, dtype=np.int64)
        ext[:, 1::2] = targets
        self.ext = ext
        s = np.arange(self.width)
        self.valid = s[None, :] < 2 * target_lengths[:, None] + 1
        # s-2 -> s is allowed where l'(s) differs from l'(s-2) (never for blanks)
        self.skip = (s[None, :] > 1) & (ext != _shift(ext, 2, fill=-1))
        self.skip_back = _shift(self.skip, -2, fill=False)  # the same transition seen from s


def _emissions(lp: np.ndarray, ext: np.ndarray) -> np.ndarray:
    """log_probs at each time of each extended label: (T, N, S')."""
    n_idx = np.arange(ext.shape[0])[:, None]
    return lp[:, n_idx, ext]


def _alpha(lp_ext, geo: _Geometry, input_lengths) -> np.ndarray:
    t_max = lp_ext.shape[0]
    alpha = np.full(lp_ext.shape, _NEG_INF, dtype=lp_ext.dtype)
    first = np.full(lp_ext.shape[1:], _NEG_INF, dtype=lp_ext.dtype)
    first[:, 0] = lp_ext[0, :, 0]
    first[:, 1] = np.where(geo.valid[:, 1], lp_ext[0, :, 1], _NEG_INF)
    alpha[0] = np.where(input_lengths[:, None] > 0, first, _NEG_INF)
    for t in range(1, t_max):
        prev = alpha[t - 1]
        skip = np.where(geo.skip, _shift(prev, 2), _NEG_INF)
        cur = _lse(prev, _shift(prev, 1), skip) + lp_ext[t]
        alpha[t] = np.where(geo.valid & (t < input_lengths[:, None]), cur, _NEG_INF)
    return alpha


def _beta(lp_ext, geo: _Geometry, input_lengths, target_lengths) -> np.ndarray:
    t_max, n = lp_ext.shape[:2]
    beta = np.full(lp_ext.shape, _NEG_INF, dtype=lp_ext.dtype)
    rows = np.arange(n)
    end = 2 * target_lengths
    nxt = np.full(lp_ext.shape[1:], _NEG_INF, dtype=lp_ext.dtype)
    for t in range(t_max - 1, -1, -1):
        skip = np.where(geo.skip_back, _shift(nxt, -2), _NEG_INF)
        cur = _lse(nxt, _shift(nxt, -1), skip) + lp_ext[t]
        last = t == input_lengths - 1
        init = np.full_like(cur, _NEG_INF)  # beta at each sequence's last step
        init[rows, end] = lp_ext[t, rows, end]
        r = rows[target_lengths > 0]
        init[r, end[r] - 1] = lp_ext[t, r, end[r] - 1]
        cur = np.where(last[:, None], init,
                       np.where((t < input_lengths - 1)[:, None] & geo.valid, cur, _NEG_INF))
        beta[t] = nxt = cur
    return beta


def _nll(alpha, input_lengths, target_lengths) -> np.ndarray:
    n = alpha.shape[1]
    rows = np.arange(n)
    t_last = np.maximum(input_lengths - 1, 0)
    end = 2 * target_lengths
    l1 = alpha[t_last, rows, end]
    l2 = np.where(target_lengths > 0, alpha[t_last, rows, np.maximum(end - 1, 0)], _NEG_INF)
    nll = -_lse(l1, l2)
    empty = input_lengths == 0
    return np.where(empty, np.where(target_lengths == 0, -0.0, np.inf), nll).astype(alpha.dtype)


def _grad(lp, lp_ext, alpha, beta, nll, geo: _Geometry, input_lengths, zero_infinity):
    """torch's gradient of the per-sample losses with respect to log_probs."""
    t_max, n, c = lp.shape
    ab = alpha + beta
    m = ab.max(axis=2, keepdims=True)
    m = np.where(m == _NEG_INF, 0, m)
    onehot = np.zeros((n, geo.width, c), dtype=lp.dtype)
    onehot[np.arange(n)[:, None], np.arange(geo.width)[None, :], geo.ext] = 1
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        lcab = np.log(np.einsum("tns,nsc->tnc", np.exp(ab - m), onehot)) + m
        grad = np.exp(lp) - np.exp(lcab + nll[None, :, None] - lp)
    live = np.arange(t_max)[:, None] < input_lengths[None, :]
    grad = np.where(live[..., None], grad, 0)
    if zero_infinity:
        grad = np.where(np.isinf(nll)[None, :, None], 0, grad)
    return grad.astype(lp.dtype)


class _CtcLoss(Function):
    node_name = "CtcLossBackward0"

    @staticmethod
    def forward(ctx, log_probs, targets, input_lengths, target_lengths, blank, zero_infinity):
        lp = log_probs._data
        geo = _Geometry(targets, target_lengths, blank)
        lp_ext = _emissions(lp, geo.ext)
        alpha = _alpha(lp_ext, geo, input_lengths)
        nll = _nll(alpha, input_lengths, target_lengths)
        ctx.state = (lp, lp_ext, alpha, nll, geo, input_lengths, target_lengths, zero_infinity)
        return Tensor._make(nll)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        lp, lp_ext, alpha, nll, geo, input_lengths, target_lengths, zero_inf = ctx.state
        beta = _beta(lp_ext, geo, input_lengths, target_lengths)
        grad = _grad(lp, lp_ext, alpha, beta, nll, geo, input_lengths, zero_inf)
        g = Tensor._make(grad * grad_out._data.astype(lp.dtype)[None, :, None])
        return g, None, None, None, None, None


def _lengths(values, name: str) -> np.ndarray:
    if isinstance(values, Tensor):
        return values._data.astype(np.int64).reshape(-1)
    if isinstance(values, int):
        raise TypeError("ctc_loss() received an invalid combination of arguments - got "
                        f"{name} of type int, but expected one of: tuple of ints, Tensor")
    return np.asarray(list(values), dtype=np.int64).reshape(-1)


def _checked_targets(targets: Tensor, target_lengths: np.ndarray, n: int) -> np.ndarray:
    """(N, S) padded targets, from the padded form or the concatenated 1-d form."""
    tg = targets._data.astype(np.int64)
    where = " (while checking arguments for ctc_loss_allocate_outputs)"
    if tg.ndim == 1:
        total = int(target_lengths.sum())
        if tg.shape[0] != total:
            raise RuntimeError(f"Expected tensor to have size {total} at dimension 0, but got "
                               f"size {tg.shape[0]} for argument #2 'targets'{where}")
        width = int(target_lengths.max()) if n else 0
        out = np.zeros((n, width), dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(target_lengths)[:-1]])
        for i in range(n):  # one slice per batch element
            out[i, :target_lengths[i]] = tg[offsets[i]:offsets[i] + target_lengths[i]]
        return out
    need = int(target_lengths.max()) if n else 0
    if tg.shape[1] < need:
        raise RuntimeError(f"Expected tensor to have size at least {need} at dimension 1, but "
                           f"got size {tg.shape[1]} for argument #2 'targets'{where}")
    return tg


def _check(lp: Tensor, input_lengths, target_lengths, blank: int) -> None:
    t_max, n, c = lp.shape
    where = " (while checking arguments for ctc_loss_allocate_outputs)"
    if not 0 <= blank < c:
        raise RuntimeError("blank must be in label range")
    if input_lengths.size != n:
        raise RuntimeError("input_lengths must be of size batch_size")
    if target_lengths.size != n:
        raise RuntimeError("target_lengths must be of size batch_size")
    for name, values, hi in (("input_lengths", input_lengths, t_max),
                             ("target_lengths", target_lengths, None)):
        if values.size and values.min() < 0:
            raise RuntimeError(f"Expected {name} to have value at least 0, but got value "
                               f"{int(values.min())}{where}")
        if hi is not None and values.size and values.max() > hi:
            raise RuntimeError(f"Expected {name} to have value at most {hi}, but got value "
                               f"{int(values.max())}{where}")


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """The CTC loss of ``log_probs`` (T, N, C) (or unbatched (T, C)) against ``targets``
    ((N, S) padded, or the 1-d concatenation of the target sequences).

    ``reduction="mean"`` divides each loss by its target length, then averages over the
    batch; ``zero_infinity`` replaces infinite losses (impossible alignments) and their
    gradients by zeros."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_probs.dtype.is_floating_point is False or log_probs._data.dtype.kind != "f":
        raise NotImplementedError(f"\"ctc_loss_cpu\" not implemented for "
                                  f"'{legacy_name(log_probs.dtype)}'")
    batched = log_probs.dim() == 3
    lp = log_probs if batched else log_probs.unsqueeze(1)
    il = _lengths(input_lengths, "input_lengths")
    tl = _lengths(target_lengths, "target_lengths")
    _check(lp, il, tl, blank)
    tg = _checked_targets(targets, tl, lp.shape[1])
    res = _CtcLoss.apply(lp, tg, il, tl, int(blank), bool(zero_infinity))
    if zero_infinity:
        res = where(res == float("inf"), Tensor._make(np.zeros((), res._data.dtype)), res)
    if reduction == "mean":
        return (res / Tensor._make(tl.astype(res._data.dtype)).clamp_min(1)).mean()
    if reduction == "sum":
        return res.sum()
    return res if batched else res.squeeze(0)
