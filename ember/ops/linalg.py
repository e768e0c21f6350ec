"""Matrix products. Each lands in one BLAS call; backward is two more."""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor
from ember.autograd.function import Op


def _same_dtype(a: Tensor, b: Tensor, name: str):
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{a.dtype.name} != {b.dtype.name}" if name == "mm" else
                           f"expected both vectors to have same dtype, but found "
                           f"{a.dtype.name.capitalize()} and {b.dtype.name.capitalize()}"
                           if name == "dot" else
                           f"expected scalar type {a.dtype.name.capitalize()} but found "
                           f"{b.dtype.name.capitalize()}")


class Mm(Op):
    node_name = "MmBackward0"
    saves = (0, 1)

    @staticmethod
    def forward(ctx, a, b):
        return a @ b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (g.mm(b.t()) if need[0] else None), (a.t().mm(g) if need[1] else None)


def mm(a: Tensor, b: Tensor) -> Tensor:
    if a.ndim != 2 or b.ndim != 2:
        bad = a if a.ndim != 2 else b
        raise RuntimeError(f"{'self' if bad is a else 'mat2'} must be a matrix")
    if a._data.shape[1] != b._data.shape[0]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x{a.shape[1]} and "
            f"{b.shape[0]}x{b.shape[1]})")
    _same_dtype(a, b, "mm")
    return Mm.apply(a, b)


class Addmm(Op):
    """``beta * c + alpha * (a @ b)``: the fused op behind nn.Linear."""

    node_name = "AddmmBackward0"
    saves = (1, 2)
    broadcasts = True

    @staticmethod
    def forward(ctx, c, a, b, beta=1, alpha=1):
        ctx.beta, ctx.alpha = beta, alpha
        out = a @ b
        if alpha != 1:
            out *= alpha
        if beta == 1:
            out += c
        elif beta != 0:
            out += beta * c
        return out

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        gc = (g if ctx.beta == 1 else g * ctx.beta) if need[0] else None
        if ctx.alpha != 1:
            g = g * ctx.alpha
        return gc, (g.mm(b.t()) if need[1] else None), (a.t().mm(g) if need[2] else None)


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    if mat1.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError("mat1 must be a matrix" if mat1.ndim != 2 else "mat2 must be a matrix")
    if mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({mat1.shape[0]}x{mat1.shape[1]} and "
            f"{mat2.shape[0]}x{mat2.shape[1]})")
    _same_dtype(mat1, mat2, "mm")
    return Addmm.apply(input, mat1, mat2, beta=beta, alpha=alpha)


class Dot(Op):
    node_name = "DotBackward0"
    saves = (0, 1)

    @staticmethod
    def forward(ctx, a, b):
        return np.dot(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (g * b if need[0] else None), (g * a if need[1] else None)


def dot(a: Tensor, b: Tensor) -> Tensor:
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src [{b.shape[0]}] to "
            f"have the same number of elements, but got {a.shape[0]} and {b.shape[0]} elements "
            "respectively")
    _same_dtype(a, b, "dot")
    return Dot.apply(a, b)


class Mv(Op):
    node_name = "MvBackward0"
    saves = (0, 1)

    @staticmethod
    def forward(ctx, a, v):
        return a @ v

    @staticmethod
    def backward(ctx, g):
        a, v = ctx.saved_tensors
        need = ctx.needs_input_grad
        ga = g.unsqueeze(1) * v.unsqueeze(0) if need[0] else None
        return ga, (a.t().mv(g) if need[1] else None)


def mv(a: Tensor, v: Tensor) -> Tensor:
    if a.ndim != 2 or v.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {v.ndim}, {a.ndim}, {v.ndim}")
    if a.shape[1] != v.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({a.shape[0]}), mat ({a.shape[0]}x"
                           f"{a.shape[1]}), vec ({v.shape[0]})")
    _same_dtype(a, v, "mv")
    return Mv.apply(a, v)


class Bmm(Op):
    """Batched (broadcasting) matrix product; the engine sums grads over broadcast batches."""

    node_name = "BmmBackward0"
    saves = (0, 1)
    broadcasts = True

    @staticmethod
    def forward(ctx, a, b):
        return np.matmul(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (g.matmul(b.mT) if need[0] else None), (a.mT.matmul(g) if need[1] else None)


def bmm(a: Tensor, b: Tensor) -> Tensor:
    if a.ndim != 3 or b.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if a.ndim != 3 else
                           "batch2 must be a 3D tensor")
    if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{a.shape[0]}, "
            f"{a.shape[2]}] but got: [{b.shape[0]}, {b.shape[1]}].")
    _same_dtype(a, b, "bmm")
    return Bmm.apply(a, b)


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """torch.matmul: dot, mv, mm, or broadcast batched product by the operands' dims."""
    if not isinstance(b, Tensor) or not isinstance(a, Tensor):
        raise TypeError("matmul(): argument 'other' (position 1) must be Tensor, not "
                        f"{type(b).__name__}")
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{a.ndim}D and {b.ndim}D")
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{a.dtype.name} != {b.dtype.name}")
    if a.ndim == 1 and b.ndim == 1:
        return dot(a, b)
    if a.ndim == 2 and b.ndim == 1:
        return mv(a, b)
    if a.ndim == 1 and b.ndim == 2:
        return mm(a.unsqueeze(0), b).squeeze(0)
    if a.ndim == 2 and b.ndim == 2:
        return mm(a, b)
    k_a = a.shape[-1]
    k_b = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if k_a != k_b:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: "
            f"[{a.shape[0] if a.ndim > 2 else 1}, {k_a}] but got: "
            f"[{b.shape[0] if b.ndim > 2 else 1}, {k_b}].")
    if b.ndim == 1:
        return Bmm.apply(a, b.unsqueeze(1)).squeeze(-1)
    if a.ndim == 1:
        return Bmm.apply(a.unsqueeze(0), b).squeeze(-2)
    try:
        np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise RuntimeError(
            f"The size of tensor a ({a.shape[-3]}) must match the size of tensor b "
            f"({b.shape[-3]}) at non-singleton dimension 0") from None
    return Bmm.apply(a, b)


def rmatmul(a: Tensor, b) -> Tensor:
    return matmul(b, a)


def outer(a: Tensor, b: Tensor) -> Tensor:
    return a.unsqueeze(1) * b.unsqueeze(0)


METHODS = {
    "mm": mm, "matmul": matmul, "dot": dot, "mv": mv, "bmm": bmm, "addmm": addmm,
    "outer": outer, "ger": outer, "__matmul__": matmul, "__rmatmul__": rmatmul,
}
FUNCTIONS = {
    "mm": mm, "matmul": matmul, "dot": dot, "mv": mv, "bmm": bmm, "addmm": addmm,
    "outer": outer, "ger": outer, "inner": dot,
}
