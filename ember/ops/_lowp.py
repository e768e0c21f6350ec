"""float16 / bfloat16 matrix products as torch's CPU kernels compute them.

torch multiplies half-precision matrices on the CPU with float32 accumulation (oneDNN, or its
fallback GEMM): the result is the float32 product of the inputs, rounded once. NumPy has no such
kernel: its float16 matmul is a slow loop, and ml_dtypes' bfloat16 matmul is slower still and
returns float32. So ember's matrix-product kernels run on the inputs' (exact) float32 upcasts
with float32 BLAS and round the result back: torch's numbers at float32 speed. CuPy arrays keep
CuPy's own float16 GEMMs.
"""

from __future__ import annotations

import contextlib
import functools

import numpy as np

F32 = np.dtype(np.float32)

# id -> (array, its float32 copy) for the arrays ``upcast_once`` shares, while its block runs.
_SHARED: dict[int, tuple] = {}


def lowp_dtype(a) -> np.dtype | None:
    """``a``'s dtype if it is a float16 / bfloat16 NumPy array, else None."""
    dt = a.dtype
    if dt.itemsize == 2 and dt.kind in "fV" and isinstance(a, np.ndarray):
        return dt
    return None


def upcast(x: np.ndarray) -> np.ndarray:
    """``x.astype(float32)``, or the shared copy when ``upcast_once`` shares ``x`` or the
    transpose of ``x`` is asked for."""
    if _SHARED:
        hit = _SHARED.get(id(x))
        if hit is not None and hit[0] is x:
            return hit[1]
        base = x.base
        hit = _SHARED.get(id(base)) if base is not None else None
        # A view of all of the shared (C- or F-contiguous) matrix with its shape and strides
        # reversed starts where it does: its transpose, which x.astype would lay out as the
        # copy's transpose (no length-1 dims), so a GEMM on it makes the same BLAS call.
        if hit is not None and hit[0] is base and x.dtype == base.dtype and x.ndim == 2 \
                and x.shape == base.shape[::-1] and x.strides == base.strides[::-1]:
            return hit[1].T
    return x.astype(F32)


@contextlib.contextmanager
def upcast_once(x):
    """Within the block, ``upcast`` of ``x`` or of ``x.T`` reads one float32 copy of ``x``
    (the gradient that both input gradients of a matrix product multiply): a no-op unless ``x``
    is a C- or F-contiguous half-precision NumPy matrix without length-1 dims that owns its
    memory."""
    if lowp_dtype(x) is None or x.ndim != 2 or x.base is not None or min(x.shape) < 2 \
            or not (x.flags.c_contiguous or x.flags.f_contiguous) or id(x) in _SHARED:
        yield
        return
    _SHARED[id(x)] = (x, x.astype(F32))
    try:
        yield
    finally:
        del _SHARED[id(x)]


def float32_math(fn):
    """Decorate an array kernel made of matrix products: when its first argument is a float16 /
    bfloat16 NumPy array, every array argument of that dtype is upcast to float32, and the
    result (or each result of a tuple) is rounded back to it."""

    @functools.wraps(fn)
    def run(a, *args, **kwargs):
        dt = None if a.dtype is F32 else lowp_dtype(a)
        if dt is None:
            return fn(a, *args, **kwargs)
        up = [upcast(x) if isinstance(x, np.ndarray) and x.dtype == dt else x
              for x in (a, *args)]
        out = fn(*up, **kwargs)
        if isinstance(out, tuple):
            return tuple(o.astype(dt) for o in out)
        return out.astype(dt)

    return run


matmul = float32_math(np.matmul)
dot = float32_math(np.dot)


# Ops whose torch CPU kernels compute float16 / bfloat16 in float32 ("opmath") where NumPy would
# not: sums and statistics accumulate there (ml_dtypes' bfloat16 sum would stall at 256 + 1),
# and their matrix products are float32 GEMMs (NumPy would also turn ``0.5 * bfloat16`` into
# float32). The common activations are listed for speed alone: ml_dtypes' bfloat16 loops run
# 10-30x slower than float32 ones, more than the two casts cost. When its floating inputs are
# all of one half-precision dtype, such an op runs forward and backward on float32 upcasts; its
# outputs are rounded back and its gradients come in the inputs' dtypes (mixed with float32
# inputs, NumPy's promotion gives float32, as torch's).
# ``:1``: a mixed-type norm, as torch's: half input with float32 parameters, and only the first
# output rounded (the others are float32 statistics). Names are relative to ``ember.``.
FLOAT32_OPS = """
    ops.reduction.Sum ops.reduction.Mean ops.reduction.Nansum ops.reduction.Prod
    ops.reduction.Var ops.reduction.Std ops.reduction.VarMean ops.reduction.StdMean
    ops.reduction.Logsumexp ops.reduction_cum.Cumsum ops.reduction_cum.Cumprod
    ops.reduction_cum.Logcumsumexp ops.reduction_norm.LinalgVectorNorm
    ops.reduction_norm.Cdist ops.reduction_norm.Dist ops.activation.Softmax
    ops.activation.LogSoftmax ops.norm._Norm:1 ops.einsum.Einsum ops.loss.NllLoss
    ops.loss.MseLoss ops.loss.SmoothL1Loss ops.loss.HuberLoss ops.loss.BinaryCrossEntropy
    ops.loss.BinaryCrossEntropyWithLogits ops.pool.AvgPool ops.pool.AvgPoolAdjoint
    ops.pool.AdaptiveAvgPool ops.pool.Resample ops.pool.ResampleAdjoint
    ops.pointwise.Relu ops.pointwise.ThresholdBackward ops.pointwise.Tanh
    ops.pointwise.Sigmoid ops.activation.Gelu ops.activation.Silu
    nn.modules._rnn_cells.LSTMCellFused nn.modules._rnn_cells.GRUCellFused
"""


def _upcast_forward(fwd, skip: int, rounded: int | None):
    """``fwd(*skip leading args (cls, ctx), *arrays, **kw)`` on float32 upcasts of its
    half-precision arrays; ``rounded`` outputs (None: all, and no float32 inputs) rounded
    back."""
    from ember import _dtype

    @functools.wraps(fwd)
    def forward(*args, **kw):
        a = args[skip]
        dt = None if a.dtype is F32 else lowp_dtype(a)
        if dt is None:
            return fwd(*args, **kw)
        ctx, arrays = args[skip - 1], args[skip:]
        if any(isinstance(x, np.ndarray) and x.dtype != dt and x.dtype.kind in "fV"
               and (rounded is None or x.dtype != F32) for x in arrays):
            return fwd(*args, **kw)  # mixed dtypes: NumPy's promotion, as torch's
        ctx._lowp_in = tuple(x.dtype if isinstance(x, np.ndarray) else None for x in arrays)
        want = kw.get("dtype")
        if want is not None and want.np != dt:  # sum(dtype=float32): NumPy accumulates there
            return fwd(*args, **kw)
        if want is not None:
            kw["dtype"] = _dtype.float32
        out = fwd(*args[:skip], *(x.astype(F32) if isinstance(x, np.ndarray) and x.dtype == dt
                                  else x for x in arrays), **kw)
        if not isinstance(out, tuple):
            return out.astype(dt) if out.dtype is F32 else out
        n = len(out) if rounded is None else rounded
        return tuple(o.astype(dt) if i < n and o.dtype is F32 else o for i, o in enumerate(out))

    return forward


def _array_up(g):
    from ember._tensor import Tensor

    return g if g._data.dtype == F32 else Tensor._make(g._data.astype(F32))  # as .float()


def _array_down(g, dt: np.dtype):
    from ember._tensor import Tensor

    return Tensor._make(g._data.astype(dt))


def _upcast_backward(bwd, skip: int):
    """Backward of an upcast forward: float32 gradients in, the inputs' dtypes out."""
    from ember import _dtype
    from ember._tensor import Tensor
    from ember.autograd.grad_mode import STATE

    @functools.wraps(bwd)
    def backward(*args):
        dtypes = args[skip - 1].__dict__.get("_lowp_in")
        if dtypes is None:
            return bwd(*args)
        if STATE.enabled:  # create_graph: the casts are part of the graph
            up, down = Tensor.float, lambda g, dt: g.to(_dtype.from_numpy_dtype(dt))
        else:  # a plain backward casts the arrays (what the ops compute, without them)
            up, down = _array_up, _array_down
        grads = [up(g) if g is not None and g._data.dtype in dtypes else g
                 for g in args[skip:]]
        out = bwd(*args[:skip], *grads)
        single = not isinstance(out, tuple)
        res = tuple(g if g is None or dt is None or g._data.dtype == dt else down(g, dt)
                    for g, dt in zip((out,) if single else out, dtypes))
        return res[0] if single else res

    return backward


def _patch(cls, name: str, make) -> None:
    import inspect

    method = inspect.getattr_static(cls, name)
    if isinstance(method, classmethod):
        setattr(cls, name, classmethod(make(method.__func__, 2)))
    else:
        setattr(cls, name, staticmethod(make(method, 1)))


def install() -> None:
    """Give the ``FLOAT32_OPS`` of the loaded modules their float32 computation (once each;
    ember.ops.install and ember.nn call this)."""
    import sys

    for entry in FLOAT32_OPS.split():
        path, _, rounded = entry.partition(":")
        mod, _, name = path.rpartition(".")
        cls = getattr(sys.modules.get(f"ember.{mod}"), name, None)
        if cls is None or "_lowp" in vars(cls):
            continue
        n = int(rounded) if rounded else None
        _patch(cls, "forward", lambda f, skip, n=n: _upcast_forward(f, skip, n))
        _patch(cls, "backward", _upcast_backward)
        cls._lowp = True
