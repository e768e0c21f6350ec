"""Pooling over strided windows: max, average and their adaptive forms.

Every primitive works on (N, C, *spatial) arrays with any number of spatial dims and loops
over kernel positions only (one strided step each, vectorized over batch, channels and
pixels). Max pooling is a gather at argmax indices (torch's flat per-plane indices); its
backward is the matching scatter, whose backward is the gather again, so double backward
works. Average pooling and its adjoint are a pair of primitives in the same way. One primitive
serves every dim: ``variant`` gives it torch's node name for 1-D, 2-D or 3-D.
"""

from __future__ import annotations

import math

import numpy as np

from ember._backend import add_at, on_device_of, xp_of
from ember.autograd.function import Op
from ember.compiler.traced import capturing, record_function
from ember.ops._common import UINT_OF_SIZE, keep_where, variant
from ember.ops._complex_grad import holomorphic
from ember.ops._promote import scalar


def for_dims(op: type, nd: int) -> type:
    """The variant of a pooling primitive named for ``nd`` spatial dims."""
    return variant(op, op.node_name.format(nd))


def _grad_name(ctx) -> str:
    """torch's name for the node of a gradient computed by node ``ctx``:
    ``AvgPool3DBackward0`` -> ``AvgPool3DBackwardBackward0``."""
    return type(ctx).__name__.removesuffix("0") + "Backward0"


def _out_len(n: int, k: int, s: int, p: int, d: int, ceil: bool) -> int:
    out = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    if ceil and (out - 1) * s >= n + p:
        out -= 1  # the last window must start inside the input or its left padding
    return out


def _padded(x: np.ndarray, pad, osize, ksize, stride, dil, fill) -> np.ndarray:
    """``x`` padded with ``fill``: ``pad`` before, and after as far as the last window reaches."""
    hi = [max((o - 1) * s + d * (k - 1) + 1 - n - p, 0)
          for o, s, d, k, n, p in zip(osize, stride, dil, ksize, x.shape[2:], pad)]
    if not any(pad) and not any(hi):
        return x
    return np.pad(x, [(0, 0), (0, 0), *zip(pad, hi)], constant_values=fill)


def _tap(pos: tuple, osize, stride, dil) -> tuple:
    """Index of the strided view of the padded input that kernel position ``pos`` sees."""
    return (slice(None), slice(None),
            *(slice(p * d, p * d + s * (o - 1) + 1, s)
              for p, d, s, o in zip(pos, dil, stride, osize)))


def _ravel(coords: list, size) -> np.ndarray:
    """Flat per-plane indices from per-dim coordinate arrays that broadcast together."""
    flat = coords[0]
    for c, n in zip(coords[1:], size[1:]):
        flat = flat * n + c
    return flat


def _unravel(arg: np.ndarray, ksize) -> list:
    """Per-dim offsets of flat kernel positions ``arg``, kept in ``arg``'s small int dtype
    (cheaper than ``np.unravel_index``'s int64 on a full-size array)."""
    offs, step = [], 1
    for d in reversed(range(len(ksize))):
        off = arg // step if step > 1 else arg
        offs.append(off % ksize[d] if d else off)
        step *= ksize[d]
    return offs[::-1]


def _axis(v: np.ndarray, d: int, nd: int) -> np.ndarray:
    """A 1-D array along spatial dim ``d`` of ``nd``, broadcastable against (..., *osize)."""
    return v.reshape((-1,) + (1,) * (nd - 1 - d))


# --- max pooling ---------------------------------------------------------------------------


def _first_argmax(views: list, best: np.ndarray, small: type, nan: bool) -> np.ndarray:
    """Index of the first view equal to ``best`` at each output position (torch keeps the
    first maximum): the count of leading views that differ, from cheap boolean passes."""
    differs = views[0] != best
    arg = differs.astype(small)
    for v in views[1:-1]:
        differs &= v != best
        arg += differs
    if nan:
        for k, v in enumerate(views):  # torch: NaN wins, the last one in the window
            np.copyto(arg, k, where=v != v)
    return arg


def _signed_zero(x: np.ndarray) -> bool:
    """Whether floating ``x`` holds a -0.0 (one integer compare over its bits)."""
    bits = UINT_OF_SIZE[x.itemsize]
    return bool((x.view(bits) == bits(1 << (8 * x.itemsize - 1))).any())


def _select(views: list, arg: np.ndarray) -> np.ndarray:
    """``views[arg]`` elementwise, bit for bit (-0.0 stays -0.0): the OR of each view's bits
    kept where it wins (fast passes, where a masked copy is slow on a random mask)."""
    out = keep_where(arg == 0, views[0])
    bits = out.view(UINT_OF_SIZE[out.itemsize])
    for k, v in enumerate(views[1:], 1):
        bits |= keep_where(arg == k, v).view(bits.dtype)
    return out


def _max_pool(x, ksize, stride, pad, dil, osize):
    """Values and torch's indices of max pooling. It looks at the data to skip work that only
    NaNs, -0.0 or windows of padding need, so ember.compile records it as one call that each
    replay runs on its own data."""
    fill = -np.inf if x.dtype.kind in "fV" else np.iinfo(x.dtype).min  # "V": bfloat16
    xp = _padded(x, pad, osize, ksize, stride, dil, fill)
    views = [xp[_tap(pos, osize, stride, dil)] for pos in np.ndindex(*ksize)]
    if len(views) == 1:
        return views[0].copy(), _ravel_window(np.zeros(views[0].shape, np.int8, like=x), x.shape,
                                              ksize, stride, pad, dil, osize)
    best = np.maximum(views[0], views[1])  # NaN propagates, as torch's NaN wins
    for v in views[2:]:
        np.maximum(best, v, out=best)
    floating = best.dtype.kind in "fV"
    nan = floating and bool(np.isnan(best).any())
    arg = _first_argmax(views, best, np.int8 if len(views) < 128 else np.int64, nan)
    if xp is not x and (best == fill).any():
        # A window whose input values all equal the padding's fill: torch's index is its first
        # tap inside the input, never the padding.
        taps = list(np.ndindex(*ksize))
        for k in reversed(range(len(views))):
            inside = _inside(taps[k], x.shape, stride, pad, dil, osize)
            np.copyto(arg, k, where=(best == fill) & on_device_of(arg, inside))
    # The maximum is torch's value bit for bit, unless a window's first maximum is a -0.0
    # tied with a +0.0 or a NaN (whose payload torch takes from the winning tap): only then
    # are the values selected at ``arg`` (16 passes for a 2x2 window, a third of the work).
    if floating and (nan or _signed_zero(x)):
        best = _select(views, arg)
    return best, _ravel_window(arg, x.shape, ksize, stride, pad, dil, osize)


def _inside(pos, shape, stride, pad, dil, osize) -> np.ndarray:
    """Where kernel position ``pos`` reads the input itself, not padding (broadcastable)."""
    nd, inside = len(osize), np.True_
    for d, (q, o, s, p, dl, n) in enumerate(zip(pos, osize, stride, pad, dil, shape[2:])):
        c = np.arange(o) * s - p + q * dl
        inside = inside & _axis((c >= 0) & (c < n), d, nd)
    return inside


def _ravel_window(arg, shape, ksize, stride, pad, dil, osize) -> np.ndarray:
    """torch's flat per-plane input index of kernel position ``arg`` in each window: the
    window's corner (a broadcast sum of per-dim terms) plus a lookup of the tap's offset."""
    size, nd = shape[2:], len(osize)
    plane = [math.prod(size[d + 1:]) for d in range(nd)]  # flat step of each spatial dim
    taps = np.array([sum(q * dl * ps for q, dl, ps in zip(pos, dil, plane))
                     for pos in np.ndindex(*ksize)], dtype=np.int64)
    corner = sum(_axis((np.arange(o) * s - p) * ps, d, nd)
                 for d, (o, s, p, ps) in enumerate(zip(osize, stride, pad, plane)))
    idx = on_device_of(arg, taps)[arg]
    idx += on_device_of(arg, corner)  # in place: one int64 array fewer
    return idx


def _planes(a: np.ndarray) -> np.ndarray:
    """(N, C, *spatial) as (N * C, pixels)."""
    return a.reshape(a.shape[0] * a.shape[1], math.prod(a.shape[2:]))


def _scatter(g: np.ndarray, idx: np.ndarray, shape: tuple, unique: bool) -> np.ndarray:
    # One flat index per value (the plane's offset added): a 1-D scatter is ~1.3x faster than
    # put_along_axis, which builds an index per axis.
    planes, size = shape[0] * shape[1], math.prod(shape[2:])
    flat = _planes(idx) + on_device_of(g, np.arange(0, planes * size, size))[:, None]
    out = np.zeros(planes * size, dtype=g.dtype, like=g)
    if unique:
        out[flat.reshape(-1)] = g.reshape(-1)
    else:
        add_at(out, flat.reshape(-1), g.reshape(-1))
    return out.reshape(shape)


def _gather(x: np.ndarray, idx: np.ndarray) -> np.ndarray:
    return np.take_along_axis(_planes(x), _planes(idx), axis=1).reshape(idx.shape)


def _scatter_back(ctx, g, idx, unique: bool):
    """``g`` scattered back into the input's shape at indices ``idx`` (a saved tensor) of
    node ``ctx``, under torch's name for the gradient of that node."""
    return variant(IndexScatter, _grad_name(ctx)).apply(g, idx=idx._data, shape=ctx.shape,
                                                        unique=unique)


# Saved as torch: max pooling keeps its input and indices, the scatter of its gradient (and
# max unpooling) the indices, average pooling its input.


class MaxPool(Op):
    node_name = "MaxPool{}DWithIndicesBackward0"
    saves = (0,)
    saves_output = (1,)

    @staticmethod
    def forward(ctx, x, ksize=(), stride=(), pad=(), dil=(), osize=()):
        geom = (ksize, stride, pad, dil, osize)
        out, idx = record_function(_max_pool, x, *geom) if capturing() else _max_pool(x, *geom)
        ctx.shape = x.shape
        ctx.unique = all(s >= d * (k - 1) + 1 for s, d, k in zip(stride, dil, ksize))
        return out, idx

    @staticmethod
    def backward(ctx, g, _gidx=None):
        return _scatter_back(ctx, g, ctx.saved_tensors[1], ctx.unique)


class IndexScatter(Op):
    """grad_input of max pooling, and max unpooling: ``g`` written (or summed) at per-plane
    flat indices."""

    node_name = "MaxUnpool{}DBackward0"

    @staticmethod
    def forward(ctx, g, idx=None, shape=None, unique=False):
        ctx.save_extra(idx)
        return _scatter(g, idx, shape, unique)

    @staticmethod
    def backward(ctx, gg):
        return IndexGather.apply(gg, idx=ctx.saved_tensors[0]._data)


class IndexGather(Op):
    """The gather of a gradient at pooling indices; saves its input and the indices, as
    torch's gather."""

    node_name = "IndexGatherBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x, idx=None):
        ctx.shape = x.shape
        ctx.save_extra(idx)
        return _gather(x, idx)

    @staticmethod
    def backward(ctx, g):
        return _scatter_back(ctx, g, ctx.saved_tensors[1], False)


def _adaptive_bounds(n: int, o: int) -> tuple:
    i = np.arange(o)
    return (i * n) // o, -((-(i + 1) * n) // o)


def _adaptive_index(n: int, o: int) -> np.ndarray:
    """(o, kmax) input positions of each adaptive window, padded by repeating its last one."""
    start, end = _adaptive_bounds(n, o)
    kmax = int((end - start).max()) if o else 0
    return np.minimum(start[:, None] + np.arange(kmax), end[:, None] - 1)


class AdaptiveMaxPool(Op):
    node_name = "AdaptiveMaxPool{}DBackward0"
    saves = (0,)
    saves_output = (1,)

    @staticmethod
    def forward(ctx, x, osize=()):
        n, c, *size = x.shape
        ctx.shape = x.shape
        if 0 in osize:  # no windows: nothing to take a maximum of
            return np.zeros((n, c, *osize), dtype=x.dtype, like=x), \
                np.zeros((n, c, *osize), dtype=np.int64, like=x)
        nd = len(size)
        pos = [on_device_of(x, _adaptive_index(s, o)) for s, o in zip(size, osize)]
        # Dim d's (o_d, k_d) positions index axes (2d, 2d + 1) of an (o1, k1, o2, k2, ...) grid.
        grid = [p.reshape((1,) * 2 * d + p.shape + (1,) * 2 * (nd - 1 - d))
                for d, p in enumerate(pos)]
        win = x[(slice(None), slice(None), *grid)]
        win = win.transpose(0, 1, *range(2, 2 + 2 * nd, 2), *range(3, 2 + 2 * nd, 2))
        kmax = tuple(p.shape[1] for p in pos)
        arg = win.reshape(n, c, *osize, math.prod(kmax)).argmax(-1)  # first max (or NaN) wins
        coords = [p[_axis(np.arange(o, like=p), d, nd), off]
                  for d, (p, o, off) in enumerate(zip(pos, osize, _unravel(arg, kmax)))]
        idx = _ravel(coords, size)
        return _gather(x, idx), idx

    @staticmethod
    def backward(ctx, g, _gidx=None):
        return _scatter_back(ctx, g, ctx.saved_tensors[1], False)


# --- average pooling -----------------------------------------------------------------------


def _avg_divisor(n, o, k, s, p, include_pad) -> np.ndarray:
    start = np.arange(o) * s - p
    end = np.minimum(start + k, n + p)
    if not include_pad:
        return np.minimum(end, n) - np.maximum(start, 0)
    return end - start


def _avg_scale(geom, shape, dtype) -> np.ndarray:
    ksize, stride, pad, osize, include_pad, divisor = geom
    if divisor:
        return scalar(1.0 / divisor, dtype)
    nd = len(osize)
    count = 1
    for d, (n, o, k, s, p) in enumerate(zip(shape[2:], osize, ksize, stride, pad)):
        count = count * _axis(_avg_divisor(n, o, k, s, p, include_pad), d, nd)
    return (1.0 / count).astype(dtype)


class AvgPool(Op):
    node_name = "AvgPool{}DBackward0"
    saves = (0,)  # torch saves the input (backward needs only its shape)

    @staticmethod
    def forward(ctx, x, geom=None):
        ksize, stride, pad, osize = geom[:4]
        ctx.geom, ctx.shape = geom, x.shape
        ones = (1,) * len(ksize)
        xp = _padded(x, pad, osize, ksize, stride, ones, 0)
        taps = list(np.ndindex(*ksize))
        out = xp[_tap(taps[0], osize, stride, ones)].copy()
        for pos in taps[1:]:
            out += xp[_tap(pos, osize, stride, ones)]
        out *= on_device_of(out, _avg_scale(geom, x.shape, x.dtype))
        return out

    @staticmethod
    def backward(ctx, g):
        return variant(AvgPoolAdjoint, _grad_name(ctx)).apply(g, geom=ctx.geom, shape=ctx.shape)


class AvgPoolAdjoint(Op):
    """grad_input of average pooling: each output's share spread back over its window."""

    node_name = "AvgPool{}DBackwardBackward0"

    @staticmethod
    def forward(ctx, g, geom=None, shape=None):
        ksize, stride, pad, osize = geom[:4]
        ctx.geom = geom
        ones = (1,) * len(ksize)
        gs = g * on_device_of(g, _avg_scale(geom, shape, g.dtype))
        xp = _padded(np.zeros(shape, dtype=g.dtype, like=g), pad, osize, ksize, stride, ones, 0)
        for pos in np.ndindex(*ksize):
            xp[_tap(pos, osize, stride, ones)] += gs
        inside = tuple(slice(p, p + n) for p, n in zip(pad, shape[2:]))
        return xp[(slice(None), slice(None), *inside)].copy()

    @staticmethod
    def backward(ctx, gg):
        name = type(ctx).__name__.replace("BackwardBackward0", "Backward0")
        return variant(AvgPool, name).apply(gg, geom=ctx.geom)


def _adaptive_matrix(n: int, o: int) -> np.ndarray:
    """(o, n) matrix whose rows average each adaptive window."""
    start, end = _adaptive_bounds(n, o)
    pos = np.arange(n)
    m = (pos >= start[:, None]) & (pos < end[:, None])
    return m / (end - start)[:, None]


class AdaptiveAvgPool(Op):
    """Adaptive average pooling is linear and separable: one averaging matrix per dim."""

    node_name = "AdaptiveAvgPool{}DBackward0"
    saves = (0,)  # torch saves the input (backward needs only its shape)

    @staticmethod
    def forward(ctx, x, osize=()):
        ctx.mats = tuple(_adaptive_matrix(n, o).astype(x.dtype)
                         for n, o in zip(x.shape[2:], osize))
        return _apply_mats(x, ctx.mats)

    @staticmethod
    def backward(ctx, g):
        return variant(ResampleAdjoint, _grad_name(ctx)).apply(
            g, mats=tuple(m.T for m in ctx.mats))


# --- separable linear resampling: interpolation and non-constant padding -----------------


def _apply_mats(x: np.ndarray, mats: tuple) -> np.ndarray:
    """Multiply each of the trailing ``len(mats)`` dims of ``x`` by its (out, in) matrix."""
    k = len(mats)
    for i, m in enumerate(mats):
        d = x.ndim - k + i
        if m is None:
            continue
        m = on_device_of(x, m)
        if d == x.ndim - 1:
            x = np.matmul(x, m.T)
        elif d == x.ndim - 2:
            x = np.matmul(m, x)
        else:
            x = np.moveaxis(np.tensordot(m, x, axes=(1, d)), 0, d)
    return xp_of(x).ascontiguousarray(x)


class Resample(Op):
    """A linear map applied along trailing dims by (out, in) matrices (gathers, blends)."""

    node_name = "ResampleBackward0"

    @staticmethod
    def forward(ctx, x, mats=()):
        ctx.mats = mats
        return _apply_mats(x, tuple(m.astype(x.dtype, copy=False) if m is not None else None
                                    for m in mats))

    @staticmethod
    def backward(ctx, g):
        return ResampleAdjoint.apply(g, mats=tuple(None if m is None else m.T
                                                   for m in ctx.mats))


class ResampleAdjoint(Resample):
    node_name = "ResampleBackwardBackward0"


class PadResample(Resample):
    """Reflection and replication padding: torch saves their input (interpolation saves
    nothing)."""

    node_name = "PadResampleBackward0"
    saves = (0,)


def gather_matrix(idx: np.ndarray, n: int) -> np.ndarray:
    """The 0/1 (len(idx), n) matrix that picks ``idx`` out of a length-``n`` dim."""
    m = np.zeros((len(idx), n))
    m[np.arange(len(idx)), idx] = 1.0
    return m


class ConstantPadNd(Op):
    """Constant padding; negative amounts crop. Backward crops (pads by the negation)."""

    node_name = "ConstantPadNdBackward0"

    @staticmethod
    def forward(ctx, x, pads=(), value=0):
        ctx.pads = pads
        crop = tuple(slice(max(-lo, 0), n - max(-hi, 0)) for (lo, hi), n in zip(pads, x.shape))
        grow = [(max(lo, 0), max(hi, 0)) for lo, hi in pads]
        x = x[crop]
        if not any(a or b for a, b in grow):
            return x.copy()
        return np.pad(x, grow, constant_values=scalar(value, x.dtype))

    @staticmethod
    def backward(ctx, g):
        return ConstantPadNd.apply(g, pads=tuple((-lo, -hi) for lo, hi in ctx.pads))


# Complex gradients are this formula conjugated (ember/ops/_complex_grad.py).
holomorphic(ConstantPadNd)
