"""grouped_mm: one matrix product per group, torch's ``GroupedMmBackward0``.

The four layouts (``offs[g]`` ends group g; group 0 starts at 0):

- 2d ``a (M, K)`` x 3d ``b (G, K, N)``: rows of ``a`` in groups, ``out (M, N)``;
- 3d ``a (G, M, K)`` x 3d ``b (G, K, N)``: a batched product, ``out (G, M, N)``;
- 3d ``a (G, M, K)`` x 2d ``b (K, N)``: columns of ``b`` in groups, ``out (M, N)``;
- 2d ``a (M, K)`` x 2d ``b (K, N)``: the shared dim in groups, ``out (G, M, N)``.

Each gradient is a grouped product again (of the gradient and the other operand, one of them
transposed, with the same offsets), so backward is differentiable in turn. Rows or columns past
``offs[-1]`` take no part: their outputs are 0 (torch leaves them unwritten).
"""

from __future__ import annotations

import numpy as np

from ember._backend import xp_of
from ember._tensor import Tensor
from ember.autograd.function import Op


def _ranges(offs: np.ndarray, size: int) -> list[tuple[int, int]]:
    ends = np.clip(np.asarray(offs, dtype=np.int64), 0, size)
    starts = np.concatenate([[0], ends[:-1]])
    return [(int(s), int(max(s, e))) for s, e in zip(starts, ends)]


def _blas(m):
    """``m`` in a layout BLAS takes (NumPy multiplies other strides, zero strides of an
    expanded gradient among them, with a loop ~50x slower)."""
    return m if m.flags.c_contiguous or m.flags.f_contiguous else m.copy()


def _forward(a, b, offs):
    xp = xp_of(a)
    if a.dtype.itemsize < 4:  # float16 / bfloat16: float32 products, rounded once (as torch)
        a, b = a.astype(np.float32), b.astype(np.float32)
    if offs is None:
        return xp.matmul(a if a.strides[-1] and a.strides[-2] else a.copy(),
                         b if b.strides[-1] and b.strides[-2] else b.copy())
    if a.ndim == 2 and b.ndim == 3:
        out = xp.zeros((a.shape[0], b.shape[2]), dtype=a.dtype)
        for g, (s, e) in enumerate(_ranges(offs, a.shape[0])):
            out[s:e] = _blas(a[s:e]) @ _blas(b[g])
        return out
    if a.ndim == 3:  # b 2d: its columns in groups
        out = xp.zeros((a.shape[1], b.shape[1]), dtype=a.dtype)
        for g, (s, e) in enumerate(_ranges(offs, b.shape[1])):
            out[:, s:e] = _blas(a[g]) @ _blas(b[:, s:e])
        return out
    out = xp.zeros((len(offs), a.shape[0], b.shape[1]), dtype=a.dtype)
    for g, (s, e) in enumerate(_ranges(offs, a.shape[1])):
        out[g] = a[:, s:e] @ b[s:e]
    return out


class GroupedMm(Op):
    node_name = "GroupedMmBackward0"
    saves = (0, 1)
    save_for = ((1,), (0,))  # a for b's gradient, b for a's

    @staticmethod
    def forward(ctx, a, b, offs=None):
        ctx.offs, ctx.dims = offs, (a.ndim, b.ndim)
        dtype = a.dtype
        if offs is not None:  # torch saves the offsets as a tensor
            ctx.save_extra(offs)
        return _forward(a, b, offs).astype(dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors[:2]  # (each saved only when the other's gradient reads it)
        offs, need, dims = ctx.offs, ctx.needs_input_grad, ctx.dims
        if offs is None:  # batched
            ga = g @ b.transpose(-2, -1) if need[0] else None
            gb = a.transpose(-2, -1) @ g if need[1] else None
            return ga, gb
        bt = None if b is None else b.transpose(-2, -1) if dims[1] == 3 else b.T
        at = None if a is None else a.transpose(-2, -1) if dims[0] == 3 else a.T
        return (grouped(g, bt, offs) if need[0] else None,
                grouped(at, g, offs) if need[1] else None)


def grouped(a: Tensor, b: Tensor, offs) -> Tensor:
    """The grouped product of checked operands (``offs``: an int array or None)."""
    return GroupedMm.apply(a, b, offs=offs)
