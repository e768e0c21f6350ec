"""linear and bilinear: ``F.linear`` lands in one fused addmm (AddmmBackward0), as in torch."""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.ops.linalg import addmm, matmul, mm
from ember.ops.pointwise_more import _CNAME

_CPP_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
              "bfloat16": "c10::BFloat16"}


def _check_dtypes(input: Tensor, weight: Tensor, bias: Tensor | None) -> None:
    """torch's messages for mixed dtypes (they differ by which operand is off)."""
    a, w = input.dtype.name, weight.dtype.name
    if a != w:
        if input.dtype.is_floating_point and weight.dtype.is_floating_point:
            raise RuntimeError("expected m1 and m2 to have the same dtype, but got: "
                               f"{_CPP_NAMES.get(a, a)} != {_CPP_NAMES.get(w, w)}")
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {_CNAME[a]} and "
                           f"{_CNAME[w]}")
    if bias is not None and bias.dtype.name != w:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                           f"{_CNAME[bias.dtype.name]} and {_CNAME[w]}")


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias``; 2-D input with bias is a single ``addmm``."""
    dt = weight._data.dtype
    if input._data.dtype != dt or (bias is not None and bias._data.dtype != dt):
        _check_dtypes(input, weight, bias)
    wt = weight.t()
    if input.ndim == 2:
        return addmm(bias, input, wt) if bias is not None else mm(input, wt)
    if bias is None or input.ndim == 0:
        return matmul(input, wt)
    # N-D input: fold the batch dims into one, as torch's linear does (View over Addmm).
    lead = input.shape[:-1]
    out = addmm(bias, input.reshape(-1, input.shape[-1]), wt)
    return out.view(*lead, out.shape[-1])


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor,
             bias: Tensor | None = None) -> Tensor:
    """``y[..., o] = x1[..., i] W[o, i, j] x2[..., j] + b[o]``."""
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(f"bilinear(): input batch dimensions do not match: got "
                           f"{list(input1.shape[:-1])} and {list(input2.shape[:-1])}")
    out_f, in1, in2 = weight.shape
    if input1.shape[-1] != in1:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {in1}")
    if input2.shape[-1] != in2:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {in2}")
    lead = input1.shape[:-1]
    y = Trilinear.apply(input1.reshape(-1, in1), weight, input2.reshape(-1, in2))
    if bias is not None:
        y = y + bias
    return y.view(*lead, out_f)


class Trilinear(Op):
    """``y[n, o] = x1[n, i] W[o, i, j] x2[n, j]``: torch's one node for bilinear, saving each
    operand for the other two's gradients."""

    node_name = "TrilinearBackward0"
    saves = (0, 1, 2)
    save_for = ((1, 2), (0, 2), (0, 1))

    @staticmethod
    def forward(ctx, x1, w, x2):
        out_f, in1, in2 = w.shape
        # (N, in1) @ (in1, out*in2) -> (N, out, in2), then contract in2 with x2.
        t = (x1 @ w.transpose(1, 0, 2).reshape(in1, out_f * in2)).reshape(-1, out_f, in2)
        return np.einsum("noj,nj->no", t, x2)

    @staticmethod
    def backward(ctx, g):
        from ember.ops.einsum import einsum

        x1, w, x2 = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (einsum("no,oij,nj->ni", g, w, x2) if need[0] else None,
                einsum("no,ni,nj->oij", g, x1, x2) if need[1] else None,
                einsum("no,oij,ni->nj", g, w, x1) if need[2] else None)


__all__ = ["linear", "bilinear"]
