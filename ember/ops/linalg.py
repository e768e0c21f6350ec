"""Matrix products. Each lands in one BLAS call; backward is two more, on transposed views.

``matmul`` follows torch's dispatch: dot / mv / mm by rank, a batch of matrices times a matrix
or vector is folded into one mm / mv, and only batch @ batch goes through bmm.
"""

from __future__ import annotations

import contextlib

import numpy as np

from ember._tensor import Tensor
from ember.autograd.function import PROFILER, Op
from ember.autograd.grad_mode import STATE
from ember.ops import _lowp
from ember.ops._complex_grad import holomorphic
from ember.ops.shape import Squeeze, UnsafeView

_C_NAMES = {"float32": "float", "float64": "double", "int64": "long int", "int32": "int",
            "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
            "float16": "c10::Half", "bfloat16": "c10::BFloat16", "bool": "bool",
            "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}


def _cap(t: Tensor) -> str:
    from ember._dtype import TYPE_NAMES

    return TYPE_NAMES[t.dtype][6:-6]


def _same_dtype(a: Tensor, b: Tensor, name: str) -> None:
    if a._data.dtype == b._data.dtype:
        return
    if name == "mm":
        msg = (f"expected m1 and m2 to have the same dtype, but got: {_C_NAMES[a.dtype.name]} "
               f"!= {_C_NAMES[b.dtype.name]}")
    elif name == "dot":
        msg = (f"dot : expected both vectors to have same dtype, but found {_cap(a)} and "
               f"{_cap(b)}")
    else:
        msg = f"expected scalar type {_cap(a)} but found {_cap(b)}"
    raise RuntimeError(msg)


def _mm_shapes(a: Tensor, b: Tensor) -> None:
    if a._data.shape[1] != b._data.shape[0]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x{a.shape[1]} and "
            f"{b.shape[0]}x{b.shape[1]})")


def _check_input(t: Tensor, shape: tuple) -> None:
    """The added ``input`` of addmm-style ops must expand to the product's shape."""
    if t._data.shape == shape:
        return
    lead = len(shape) - t.ndim
    for i, s in enumerate(shape):
        cur = t._data.shape[i - lead] if i >= lead else 1
        if lead < 0 or cur != 1 and cur != s:
            raise RuntimeError(
                f"The expanded size of the tensor ({s}) must match the existing size ({cur}) at "
                f"non-singleton dimension {i}.  Target sizes: {list(shape)}.  Tensor sizes: "
                f"{list(t.shape)}")


class Mm(Op):
    node_name = "MmBackward0"
    saves = (0, 1)
    save_for = ((1,), (0,))

    @staticmethod
    def forward(ctx, a, b):
        ctx.layout = _column_major(a), _column_major(b)
        return _lowp.matmul(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        return _mm_grads(g, a, b, need[0], need[1], ctx.layout)


def _column_major(a) -> bool:
    f = a.flags
    return f.f_contiguous and not f.c_contiguous


def _mm_grads(g: Tensor, a: Tensor, b: Tensor, need_a: bool, need_b: bool,
              layout: tuple = (False, False)) -> tuple:
    """``g @ b.T`` and ``a.T @ g``, each laid out like its input (``layout``: whether a and b
    were column-major), as torch's mm_mat1_backward / mm_mat2_backward do. For nn.Linear's
    ``weight.t()`` (column-major) this makes the weight's gradient C-contiguous after
    TBackward, so AccumulateGrad can keep it without a copy. Each input is saved only for the
    other's gradient, so ``a`` may be None when only ``a`` needs one. A plain backward (no
    create_graph) does the same products on the arrays: two GEMMs, no graph ops around them;
    under the profiler it runs the ops, so the trace shows torch's ``aten::mm``."""
    ga = gb = None
    if not STATE.enabled and PROFILER[0] is None:
        gd = g._data
        with _lowp.upcast_once(gd) if need_a and need_b else _NOTHING:
            if need_a:
                bd = b._data
                ga = (_transposed(_lowp.matmul(bd, gd.T)) if layout[0]
                      else Tensor._make(_lowp.matmul(gd, bd.T)))
            if need_b:
                ad = a._data
                gb = (_transposed(_lowp.matmul(gd.T, ad)) if layout[1]
                      else Tensor._make(_lowp.matmul(ad.T, gd)))
        return ga, gb
    if need_a:
        ga = b.mm(g.t()).t() if layout[0] else g.mm(b.t())
    if need_b:
        gb = g.t().mm(a).t() if layout[1] else a.t().mm(g)
    return ga, gb


_NOTHING = contextlib.nullcontext()


def _transposed(product) -> Tensor:
    """A fresh product's transpose as a view of it, as ``.t()`` makes (AccumulateGrad steals
    a TBackward gradient that spans its base)."""
    base = Tensor._make(product)
    out = Tensor._make(product.T)
    out._set_view_of(base)
    return out


def mm(a: Tensor, b: Tensor) -> Tensor:
    if a.ndim != 2 or b.ndim != 2:
        raise RuntimeError("self must be a matrix" if a.ndim != 2 else "mat2 must be a matrix")
    _mm_shapes(a, b)
    _same_dtype(a, b, "mm")
    return Mm.apply(a, b)


class _AddProduct(Op):
    """``beta * c + alpha * (a ⊗ b)`` for a matrix product ⊗ (addmm, addmv, baddbmm, addbmm):
    a subclass gives the product on arrays (``_product``, a fresh array) and its two input
    gradients on tensors (``_grads``); the beta/alpha scaling lives here once."""

    saves = (1, 2)
    save_for = ((2,), (1,))
    broadcasts = True
    _layout = False  # whether backward needs the operands' layouts (``_mm_grads``)

    @classmethod
    def forward(cls, ctx, c, a, b, beta=1, alpha=1):
        ctx.beta, ctx.alpha = beta, alpha
        if cls._layout:
            ctx.layout = _column_major(a), _column_major(b)
        return _add_product(a, b, c, beta, alpha, cls._product)

    @classmethod
    def backward(cls, ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        gc = (g if ctx.beta == 1 else g * ctx.beta) if need[0] else None
        if ctx.alpha != 1:
            g = g * ctx.alpha
        extra = (ctx.layout,) if cls._layout else ()
        return (gc, *cls._grads(g, a, b, need[1], need[2], *extra))


@_lowp.float32_math
def _add_product(a, b, c, beta, alpha, product):
    out = product(a, b)
    if alpha != 1:
        out *= alpha
    if beta == 1:
        out += c
    elif beta != 0:  # beta == 0 ignores c entirely (even NaN), as torch
        out += beta * c
    return out


class Addmm(_AddProduct):
    """``beta * c + alpha * (a @ b)``: the fused op behind nn.Linear."""

    node_name = "AddmmBackward0"
    _product = staticmethod(np.matmul)
    _grads = staticmethod(_mm_grads)
    _layout = True


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)`` in one GEMM."""
    if mat1.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError("mat1 must be a matrix" if mat1.ndim != 2 else "mat2 must be a matrix")
    _mm_shapes(mat1, mat2)
    _same_dtype(mat1, mat2, "mm")
    _check_input(input, (mat1.shape[0], mat2.shape[1]))
    return Addmm.apply(input, mat1, mat2, beta=beta, alpha=alpha)


class Dot(Op):
    node_name = "DotBackward0"
    saves = (0, 1)
    save_for = ((1,), (0,))

    @staticmethod
    def forward(ctx, a, b):
        return _lowp.dot(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (g * b if need[0] else None), (g * a if need[1] else None)


class Vdot(Dot):
    node_name = "VdotBackward0"


def _vec_args(a: Tensor, b: Tensor) -> None:
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src [{b.shape[0]}] to "
            f"have the same number of elements, but got {a.shape[0]} and {b.shape[0]} elements "
            "respectively")
    _same_dtype(a, b, "dot")


def dot(a: Tensor, b: Tensor) -> Tensor:
    _vec_args(a, b)
    return Dot.apply(a, b)


def vdot(a: Tensor, b: Tensor) -> Tensor:
    """Dot product conjugating the first argument (a plain dot for real tensors)."""
    _vec_args(a, b)
    return Vdot.apply(a.conj(), b)


def _mv_grads(g: Tensor, a: Tensor, v: Tensor, need_a: bool, need_v: bool) -> tuple:
    return (g.unsqueeze(1) * v.unsqueeze(0) if need_a else None), (a.t().mv(g) if need_v else None)


class Mv(Op):
    node_name = "MvBackward0"
    saves = (0, 1)
    save_for = ((1,), (0,))

    @staticmethod
    def forward(ctx, a, v):
        return _lowp.matmul(a, v)

    @staticmethod
    def backward(ctx, g):
        return _mv_grads(g, *ctx.saved_tensors, *ctx.needs_input_grad)


def _mv_args(a: Tensor, v: Tensor, inp: Tensor | None = None) -> None:
    n_in = 1 if inp is None else inp.ndim
    if a.ndim != 2 or v.ndim != 1 or n_in > 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {n_in}, {a.ndim}, {v.ndim}")
    n = a.shape[0] if inp is None or inp.ndim == 0 else inp.shape[0]
    if a.shape[1] != v.shape[0] or n not in (1, a.shape[0]):
        raise RuntimeError(f"size mismatch, got input ({n}), mat ({a.shape[0]}x{a.shape[1]}), "
                           f"vec ({v.shape[0]})")
    if a._data.dtype != v._data.dtype:
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {_cap(v)}, "
                           f"{_cap(a)}, and {_cap(v)}")


def mv(a: Tensor, v: Tensor) -> Tensor:
    _mv_args(a, v)
    return Mv.apply(a, v)


class Addmv(_AddProduct):
    node_name = "AddmvBackward0"
    _product = staticmethod(np.matmul)
    _grads = staticmethod(_mv_grads)


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``."""
    _mv_args(mat, vec, input)
    return Addmv.apply(input, mat, vec, beta=beta, alpha=alpha)


def _bmm_grads(g: Tensor, a: Tensor, b: Tensor, need_a: bool, need_b: bool) -> tuple:
    return (g.bmm(b.mT) if need_a else None), (a.mT.bmm(g) if need_b else None)


class Bmm(Op):
    node_name = "BmmBackward0"
    saves = (0, 1)
    save_for = ((1,), (0,))

    @staticmethod
    def forward(ctx, a, b):
        return _lowp.matmul(a, b)

    @staticmethod
    def backward(ctx, g):
        return _bmm_grads(g, *ctx.saved_tensors, *ctx.needs_input_grad)


def bmm(a: Tensor, b: Tensor) -> Tensor:
    _bmm_args(a, b)
    return Bmm.apply(a, b)


def _bmm_args(a: Tensor, b: Tensor) -> None:
    if a.ndim != 3 or b.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if a.ndim != 3 else
                           "batch2 must be a 3D tensor")
    if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{a.shape[0]}, "
            f"{a.shape[2]}] but got: [{b.shape[0]}, {b.shape[1]}].")
    _same_dtype(a, b, "bmm")


class Baddbmm(_AddProduct):
    node_name = "BaddbmmBackward0"
    _product = staticmethod(np.matmul)
    _grads = staticmethod(_bmm_grads)


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * bmm(batch1, batch2)``."""
    _bmm_args(batch1, batch2)
    _check_input(input, (batch1.shape[0], batch1.shape[1], batch2.shape[2]))
    return Baddbmm.apply(input, batch1, batch2, beta=beta, alpha=alpha)


def _summed_bmm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # sum_b a[b] @ b[b] is one GEMM of (n, B*k) @ (B*k, m).
    n, k = a.shape[1], a.shape[0] * a.shape[2]
    return np.swapaxes(a, 0, 1).reshape(n, k) @ b.reshape(k, b.shape[2])


def _summed_bmm_grads(g: Tensor, a: Tensor, b: Tensor, need_a: bool, need_b: bool) -> tuple:
    return (matmul(g, b.mT) if need_a else None), (matmul(a.mT, g) if need_b else None)


class Addbmm(_AddProduct):
    node_name = "AddbmmBackward0"
    _product = staticmethod(_summed_bmm)
    _grads = staticmethod(_summed_bmm_grads)


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * sum_b batch1[b] @ batch2[b]``."""
    _bmm_args(batch1, batch2)
    _check_input(input, (batch1.shape[1], batch2.shape[2]))
    return Addbmm.apply(input, batch1, batch2, beta=beta, alpha=alpha)


class _SqueezeInplace(Squeeze):
    """torch's matmul squeezes its vector @ matrix result in place (SqueezeBackward4): the
    result is not a view."""

    node_name = "SqueezeBackward4"
    view = False


def _unsafe_view(t: Tensor, shape: tuple) -> Tensor:
    return UnsafeView.apply(t, shape=tuple(shape))


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """torch.matmul: dot, mv, mm, a folded mm for batch @ matrix, or bmm over broadcast batches."""
    if not isinstance(b, Tensor) or not isinstance(a, Tensor):
        raise TypeError("matmul(): argument 'other' (position 1) must be Tensor, not "
                        f"{type(b).__name__}")
    da, db = a.ndim, b.ndim
    if da == 0 or db == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{da}D and {db}D")
    if da == 1 and db == 1:
        return dot(a, b)
    if da == 2 and db == 1:
        return mv(a, b)
    if da == 1 and db == 2:
        return _SqueezeInplace.apply(mm(a.unsqueeze(0), b), dims=(0,))
    if da == 2 and db == 2:
        return mm(a, b)
    if da >= 3 and db <= 2:
        # Fold the batch into the rows: one GEMM (or GEMV) instead of a batch of small ones.
        folded = a.reshape(int(np.prod(a.shape[:-1], dtype=np.int64)), a.shape[-1])
        out = mm(folded, b) if db == 2 else mv(folded, b)
        return _unsafe_view(out, a.shape[:-1] + ((b.shape[-1],) if db == 2 else ()))
    if da == 3 and db >= 3 and a.shape[0] == 1 and (db > 3 or b.shape[0] != 1):
        return matmul(a.squeeze(0), b)  # torch treats a single-matrix batch as a matrix
    if db == 3 and da >= 3 and b.shape[0] == 1 and (da > 3 or a.shape[0] != 1):
        return matmul(a, b.squeeze(0))
    if da <= 2 and db >= 3:
        # (b^T @ a^T)^T: the same fold, on the transposed problem, as torch does.
        if da == 1:
            return matmul(b.mT, a)
        out = matmul(b.mT, a.t()).mT.contiguous()
        # a view of the transposed product only when recorded (torch's no-grad path has none)
        return out if out._grad_fn is not None else Tensor._make(out._data)
    return _batched(a, b)


def _batched(a: Tensor, b: Tensor) -> Tensor:
    n, k = a.shape[-2:]
    k2, m = b.shape[-2:]
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        sa, sb = a.shape[:-2], b.shape[:-2]
        i = next(i for i in range(1, min(len(sa), len(sb)) + 1)
                 if sa[-i] != sb[-i] and sa[-i] != 1 and sb[-i] != 1)
        raise RuntimeError(f"The size of tensor a ({sa[-i]}) must match the size of tensor b "
                           f"({sb[-i]}) at non-singleton dimension "
                           f"{max(len(sa), len(sb)) - i}") from None
    nb = int(np.prod(batch, dtype=np.int64))
    if k != k2:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{nb}, {k}] but got: [{nb}, {k2}].")
    _same_dtype(a, b, "mm")
    a3 = a.expand(*batch, n, k).reshape(nb, n, k)
    b3 = b.expand(*batch, k, m).reshape(nb, k, m)
    return _unsafe_view(Bmm.apply(a3, b3), (*batch, n, m))


def rmatmul(a: Tensor, b) -> Tensor:
    return matmul(b, a)


def outer(a: Tensor, b: Tensor) -> Tensor:
    """Outer product of two vectors (MulBackward0, as in torch)."""
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument self, but got {a.ndim}-D"
                           if a.ndim != 1 else
                           f"outer: Expected 1-D argument vec2, but got {b.ndim}-D")
    return a.unsqueeze(1) * b.unsqueeze(0)


def inner(a: Tensor, b: Tensor) -> Tensor:
    """Contraction over the last dim of both (a scalar product for scalars)."""
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return tensordot(a, b, ([-1], [-1]))


def tensordot(a: Tensor, b: Tensor, dims=2) -> Tensor:
    """Contract ``dims`` (a count, or two lists of dims) of ``a`` with those of ``b``."""
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        da, db = list(range(-dims, 0)), list(range(dims))
    elif isinstance(dims[0], Tensor):
        da, db = dims[0].tolist(), dims[1].tolist()
    else:
        da, db = ([d] if isinstance(d, int) else list(d) for d in dims)
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    for x, y in zip(da, db):
        if a.shape[x] != b.shape[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a.shape[x]} in dim {x} and second has size {b.shape[y]} in "
                               f"dim {y}")
    da = [d % a.ndim for d in da]
    db = [d % b.ndim for d in db]
    free_a = [d for d in range(a.ndim) if d not in da]
    free_b = [d for d in range(b.ndim) if d not in db]
    size = lambda t, ds: int(np.prod([t.shape[d] for d in ds], dtype=np.int64))  # noqa: E731
    out_shape = [a.shape[d] for d in free_a] + [b.shape[d] for d in free_b]
    ma = a.permute(free_a + da).reshape(size(a, free_a), size(a, da))
    mb = b.permute(db + free_b).reshape(size(b, db), size(b, free_b))
    return mm(ma, mb).reshape(out_shape)


# Complex gradients are these formulas conjugated (ember/ops/_complex_grad.py).
holomorphic(Mm, Addmm, Dot, Mv, Addmv, Bmm, Baddbmm, Addbmm)

METHODS = {
    "mm": mm, "matmul": matmul, "dot": dot, "vdot": vdot, "mv": mv, "bmm": bmm, "addmm": addmm,
    "addmv": addmv, "baddbmm": baddbmm, "addbmm": addbmm, "outer": outer, "ger": outer,
    "inner": inner, "__matmul__": matmul, "__rmatmul__": rmatmul,
}
FUNCTIONS = {
    "mm": mm, "matmul": matmul, "dot": dot, "vdot": vdot, "mv": mv, "bmm": bmm, "addmm": addmm,
    "addmv": addmv, "baddbmm": baddbmm, "addbmm": addbmm, "outer": outer, "ger": outer,
    "inner": inner, "tensordot": tensordot,
}
