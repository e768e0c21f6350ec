"""F.scaled_dot_product_attention and F.multi_head_attention_forward, from ember ops."""

from __future__ import annotations

import math
import warnings

import numpy as np

from ember._backend import on_device_of
from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.autograd.grad_mode import STATE
from ember.nn._functional.dropout import dropout
from ember.nn._functional.linear import linear
from ember.ops._promote import scalar
from ember.ops.activation import softmax
from ember.ops.joining import cat


def _additive(mask: Tensor, dtype, true_means_keep: bool) -> Tensor:
    """A bool mask as a float tensor of 0 / -inf (float masks pass through)."""
    if mask.dtype.is_floating_point:
        return mask
    keep = mask._data if true_means_keep else ~mask._data
    return Tensor._make(np.where(keep, 0.0, -np.inf).astype(dtype.np))


def _scores(q: np.ndarray, k: np.ndarray, bias, scale: float) -> np.ndarray:
    s = np.matmul(q, np.swapaxes(k, -1, -2))
    s *= scalar(scale, s.dtype)
    return s + bias if bias is not None else s


def _softmax_rows(s: np.ndarray):
    """Softmax over the last dim and its log-sum-exp; rows that are all -inf give zeros (as
    torch's CPU kernel) and a log-sum-exp of -inf."""
    m = s.max(-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    p = np.exp(s - m)
    total = p.sum(-1, keepdims=True)
    with np.errstate(divide="ignore"):
        lse = np.log(total) + m
    np.divide(p, np.where(total > 0, total, 1), out=p)  # CuPy's divide takes no where=
    return p, lse


class ScaledDotProductAttention(Op):
    """Fused attention (4-D inputs with one head size, no dropout), as torch's CPU flash
    kernel: one node saving the inputs, the output, the rows' log-sum-exp (and the mask);
    backward recomputes the weights from them."""

    node_name = "ScaledDotProductFlashAttentionForCpuBackward0"
    saves = (0, 1, 2)
    saves_output = True

    @staticmethod
    def forward(ctx, q, k, v, bias=None, scale=1.0):
        p, lse = _softmax_rows(_scores(q, k, bias, scale))
        ctx.scale = scale
        ctx.save_extra(lse, *(() if bias is None else (bias,)))
        return np.matmul(p, v)

    @staticmethod
    def backward(ctx, g):
        q, k, v, out, lse, *bias = ctx.saved_tensors
        need = ctx.needs_input_grad
        if STATE.enabled:  # create_graph: the weights as a differentiable function of q, k
            s = q.matmul(k.transpose(-2, -1)) * ctx.scale
            if bias:
                s = s + bias[0]
            p = softmax(s, -1)
            d = (g.matmul(v.transpose(-2, -1)) * p).sum(-1, keepdim=True)
        else:
            s = _scores(q._data, k._data, bias[0]._data if bias else None, ctx.scale)
            with np.errstate(invalid="ignore"):
                p = np.exp(s - lse._data)
            p = Tensor._make(np.where(np.isfinite(lse._data), p, 0).astype(p.dtype, copy=False))
            d = (g * out).sum(-1, keepdim=True)  # = rowsum(dP * P), as flash's backward
        gv = p.transpose(-2, -1).matmul(g) if need[2] else None
        gs = p * (g.matmul(v.transpose(-2, -1)) - d) * ctx.scale
        gq = gs.matmul(k) if need[0] else None
        gk = gs.transpose(-2, -1).matmul(q) if need[1] else None
        return gq, gk, gv


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask=None,
                                 dropout_p: float = 0.0, is_causal: bool = False,
                                 scale: float | None = None, enable_gqa: bool = False) -> Tensor:
    """``softmax(q @ k^T * scale + mask) @ v``; a bool ``attn_mask`` is True where allowed."""
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"{list(key.shape[:-2]) + [query.shape[-1]]} but got: "
                           f"{list(key.shape[:-2]) + [key.shape[-1]]}.")
    s = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    if is_causal:
        n_q, n_k = query.shape[-2], key.shape[-2]
        attn_mask = Tensor._make(on_device_of(query._data, np.tril(np.ones((n_q, n_k), bool))))
    bias = None if attn_mask is None else _additive(attn_mask, query.dtype, True)
    if _flash(query, key, value, bias, dropout_p):
        return ScaledDotProductAttention.apply(
            query, key, value, bias=None if bias is None else bias._data, scale=s)
    # Otherwise the composite, as torch's math path (and its graph).
    scores = query.matmul(key.transpose(-2, -1)) * s
    if bias is not None:
        scores = scores + bias
    weights = softmax(scores, -1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    return weights.matmul(value)


def _flash(q: Tensor, k: Tensor, v: Tensor, bias, dropout_p: float) -> bool:
    """Whether torch's CPU dispatch picks the fused (flash) kernel: 4-D inputs of one dtype,
    batch and heads alike, one head size, no dropout, no mask needing a gradient."""
    return dropout_p == 0.0 and q.ndim == k.ndim == v.ndim == 4 and \
        q.dtype is k.dtype is v.dtype and q.shape[:2] == k.shape[:2] == v.shape[:2] and \
        q.shape[-1] == k.shape[-1] == v.shape[-1] and (bias is None or not bias.requires_grad)


def _in_projection(query, key, value, num_heads, in_proj_weight, in_proj_bias,
                   use_separate, q_w, k_w, v_w):
    e = query.shape[-1]
    b = in_proj_bias.chunk(3) if in_proj_bias is not None else (None, None, None)
    if use_separate:
        return linear(query, q_w, b[0]), linear(key, k_w, b[1]), linear(value, v_w, b[2])
    if query is key and key is value:  # self-attention: one GEMM for q, k and v
        return linear(query, in_proj_weight, in_proj_bias).chunk(3, -1)
    w = in_proj_weight.chunk(3)
    if key is value:
        q = linear(query, w[0], b[0])
        kv = linear(key, in_proj_weight[e:], None if in_proj_bias is None else in_proj_bias[e:])
        return (q, *kv.chunk(2, -1))
    return linear(query, w[0], b[0]), linear(key, w[1], b[1]), linear(value, w[2], b[2])


def multi_head_attention_forward(
        query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
        in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn: bool, dropout_p: float,
        out_proj_weight: Tensor, out_proj_bias, training: bool = True, key_padding_mask=None,
        need_weights: bool = True, attn_mask=None, use_separate_proj_weight: bool = False,
        q_proj_weight=None, k_proj_weight=None, v_proj_weight=None, static_k=None,
        static_v=None, average_attn_weights: bool = True, is_causal: bool = False):
    """torch's multi-head attention on (L, N, E) inputs (or unbatched (L, E)).

    Masks: a bool ``attn_mask`` / ``key_padding_mask`` is True where attention is NOT allowed;
    float masks are added to the scores. Returns (output, weights or None).
    """
    if static_k is not None or static_v is not None:
        raise NotImplementedError("ember's multi_head_attention_forward does not support "
                                  "static_k / static_v")
    if key_padding_mask is not None and attn_mask is not None and \
            key_padding_mask.dtype.is_floating_point != attn_mask.dtype.is_floating_point:
        warnings.warn("Support for mismatched key_padding_mask and attn_mask is deprecated. Use "
                      "same type for both instead.", stacklevel=2)
    batched = query.ndim == 3
    if not batched:
        # Keep the identities (q is k is v, k is v) that pick the packed projections.
        same_kv, same_qk = key is value, query is key
        query = query.unsqueeze(1)
        key = query if same_qk else key.unsqueeze(1)
        value = key if same_kv else value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    q, k, v = _in_projection(query, key, value, num_heads, in_proj_weight, in_proj_bias,
                             use_separate_proj_weight, q_proj_weight, k_proj_weight,
                             v_proj_weight)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    mask = None if attn_mask is None else _additive(attn_mask, q.dtype, False)
    if mask is not None and mask.ndim == 2:
        if tuple(mask.shape) != (tgt_len, key.shape[0]):
            raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(mask.shape)}, but "
                               f"should be {(tgt_len, key.shape[0])}.")
        mask = mask.unsqueeze(0)
    if bias_k is not None:
        k = cat([k, bias_k.expand(1, bsz, embed_dim)])
        v = cat([v, bias_v.expand(1, bsz, embed_dim)])
        mask = None if mask is None else _pad_last(mask)
        key_padding_mask = None if key_padding_mask is None else _pad_last(key_padding_mask)
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    v = v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    if add_zero_attn:
        from ember._creation import zeros

        z = zeros(bsz * num_heads, 1, head_dim, dtype=q.dtype)
        k, v = cat([k, z], 1), cat([v, z], 1)
        mask = None if mask is None else _pad_last(mask)
        key_padding_mask = None if key_padding_mask is None else _pad_last(key_padding_mask)
    src_len = k.shape[1]
    if key_padding_mask is not None:
        kpm = _additive(key_padding_mask, q.dtype, False).reshape(bsz, 1, 1, src_len)
        kpm = kpm.expand(bsz, num_heads, 1, src_len).reshape(bsz * num_heads, 1, src_len)
        mask = kpm if mask is None else mask + kpm
    p = dropout_p if training else 0.0
    if need_weights:
        scores = (q * math.sqrt(1.0 / head_dim)).bmm(k.transpose(1, 2))
        if mask is not None:
            scores = scores + mask
        weights = softmax(scores, -1)
        if p > 0.0:
            weights = dropout(weights, p, True)
        out = weights.bmm(v)
        out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    else:  # as torch: the fused attention (the weights are never materialized for the user)
        if mask is not None:
            mask = mask.unsqueeze(0) if mask.shape[0] == 1 and mask.ndim == 3 else \
                mask.view(bsz, num_heads, -1, src_len)
        out = scaled_dot_product_attention(q.view(bsz, num_heads, tgt_len, head_dim),
                                           k.view(bsz, num_heads, src_len, head_dim),
                                           v.view(bsz, num_heads, src_len, head_dim),
                                           attn_mask=mask, dropout_p=p)
        out = out.permute(2, 0, 1, 3).reshape(tgt_len * bsz, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
    if not batched:
        out = out.squeeze(1)
    if not need_weights:
        return out, None
    weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
    if average_attn_weights:
        weights = weights.mean(1)
    return out, (weights if batched else weights.squeeze(0))


def _pad_last(mask: Tensor) -> Tensor:
    """Append one always-allowed key column (for bias_k / zero attention)."""
    from ember.nn._functional.vision import pad

    if mask.dtype.is_floating_point:
        return pad(mask, (0, 1))
    return Tensor._make(np.pad(mask._data, [(0, 0)] * (mask.ndim - 1) + [(0, 1)]))


__all__ = ["multi_head_attention_forward", "scaled_dot_product_attention"]
