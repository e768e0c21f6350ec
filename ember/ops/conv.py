"""Convolutions as im2col (a strided view, one copy) plus one batched GEMM.

Three primitives cover forward, backward and every higher derivative: ``Convolution`` (conv),
``ConvTranspose`` (its adjoint in the input: col2im) and ``ConvWeight`` (its adjoint in the
weight). Each one's backward is written with the other two, so double backward works.
Everything runs on any number of spatial dims (1-D, 2-D, 3-D alike): arrays are
(N, C, *spatial). Geometry kwargs are per-dim tuples: ``stride``, ``dil``, ``pads`` (per dim
``(lo, hi)``, negative crops), ``groups``; ``ConvTranspose`` also takes ``out_size``,
``ConvWeight`` ``ksize``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ember._backend import as_strided, xp_of
from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.autograd.grad_mode import STATE
from ember.ops._common import variant
from ember.ops._lowp import float32_math
from ember.ops.norm import channel_sum

_GRAD_NAME = "ConvolutionBackwardBackward0"  # torch's node for any gradient of a convolution
# The forward keeps its columns for the weight's gradient up to this size (bytes): small
# layers, where making them again is a large share of the backward, without holding k^2 times
# every large activation until backward.
_KEEP_COLS = 16 << 20


def _pad_arr(x: np.ndarray, pads: tuple) -> np.ndarray:
    """Zero-pad (positive) or crop (negative) the trailing ``len(pads)`` dims of ``x``."""
    if not any(lo or hi for lo, hi in pads):
        return x
    k = len(pads)
    crop = tuple(slice(max(-lo, 0), n - max(-hi, 0)) for (lo, hi), n in zip(pads, x.shape[-k:]))
    x = x[(..., *crop)]
    grow = [(max(lo, 0), max(hi, 0)) for lo, hi in pads]
    if not any(a or b for a, b in grow):
        return x
    # Zeros and one strided write: about twice as fast as np.pad, which fills each border.
    out = np.zeros((*x.shape[:-k], *(n + a + b for n, (a, b) in zip(x.shape[-k:], grow))),
                   dtype=x.dtype, like=x)
    out[(..., *(slice(a, a + n) for n, (a, _) in zip(x.shape[-k:], grow)))] = x
    return out


def _out_len(n: int, k: int, s: int, d: int) -> int:
    return (n - d * (k - 1) - 1) // s + 1


def _windows(xp: np.ndarray, ksize, stride, dil, osize) -> np.ndarray:
    """A view (N, C, *ksize, *osize) of every kernel window of padded input ``xp``."""
    sp = xp.strides[2:]
    return as_strided(xp, (*xp.shape[:2], *ksize, *osize),
                      (*xp.strides[:2], *(s * d for s, d in zip(sp, dil)),
                       *(s * t for s, t in zip(sp, stride))))


def _im2col(x, ksize, stride, dil, pads, groups) -> np.ndarray:
    """Every kernel window of ``x`` as a column: (N, groups, C / groups * k, pixels), one
    copy (none for an unpadded 1x1 kernel)."""
    xp = _pad_arr(x, pads)
    osize = tuple(_out_len(n, k, s, d) for n, k, s, d in zip(xp.shape[2:], ksize, stride, dil))
    return _windows(xp, ksize, stride, dil, osize).reshape(
        x.shape[0], groups, x.shape[1] // groups * math.prod(ksize), math.prod(osize))


def _conv_osize(x, ksize, stride, dil, pads) -> tuple:
    return tuple(_out_len(n + lo + hi, k, s, d)
                 for n, (lo, hi), k, s, d in zip(x.shape[2:], pads, ksize, stride, dil))


@float32_math
def _conv(x, w, b, stride, dil, pads, groups, cols=None) -> np.ndarray:
    o, _, *ksize = w.shape
    if cols is None:
        cols = _im2col(x, ksize, stride, dil, pads, groups)
    out = np.matmul(w.reshape(groups, o // groups, cols.shape[2]), cols)
    osize = _conv_osize(x, ksize, stride, dil, pads)
    out = out.reshape(x.shape[0], o, *osize)
    if b is not None:
        out += b.reshape(-1, *(1,) * len(osize))
    return out


def _col2im(cols: np.ndarray, full: tuple, stride, dil) -> np.ndarray:
    """Sum each kernel position's columns (N, *ksize, C, *isize) into an (N, C, *full) image."""
    nd = len(full)
    ksize, isize = cols.shape[1:1 + nd], cols.shape[2 + nd:]
    out = np.zeros((cols.shape[0], cols.shape[1 + nd], *full), dtype=cols.dtype, like=cols)
    # A loop over kernel positions only; each step is one strided add.
    for pos in np.ndindex(*ksize):
        spots = tuple(slice(p * d, p * d + s * (n - 1) + 1, s)
                      for p, d, s, n in zip(pos, dil, stride, isize))
        out[(slice(None), slice(None), *spots)] += cols[(slice(None), *pos)]
    return out


@float32_math
def _conv_t(g, w, b, stride, dil, pads, groups, out_size) -> np.ndarray:
    n, cin, *isize = g.shape
    _, cog, *ksize = w.shape
    nd, cig = len(ksize), cin // groups
    # Rows ordered (kernel position, group, cog) so each position's columns are one block.
    wt = w.reshape(groups, cig, cog, math.prod(ksize)).transpose(3, 0, 2, 1)
    cols = np.matmul(wt[:, None], g.reshape(1, n, groups, cig, math.prod(isize)))
    cols = np.moveaxis(cols.reshape(*ksize, n, groups * cog, *isize), nd, 0)
    full = tuple((i - 1) * s + d * (k - 1) + 1 for i, s, d, k in zip(isize, stride, dil, ksize))
    out = _col2im(cols, full, stride, dil)
    out = _pad_arr(out, tuple((-lo, size + lo - f) for (lo, _), size, f in
                              zip(pads, out_size, full)))
    if b is not None:
        out += b.reshape(-1, *(1,) * nd)
    return out


@float32_math
def _conv_weight(x, g, stride, dil, pads, groups, ksize, cols=None) -> np.ndarray:
    n, c = x.shape[:2]
    o, *osize = g.shape[1:]
    cg, og, opix = c // groups, o // groups, math.prod(osize)
    rows = cg * math.prod(ksize)
    if cols is not None or opix >= 64:
        # Per-image GEMMs (rows, pixels) @ (pixels, o) on the forward's column layout (kept
        # by the forward, or made again), summed over the images.
        if cols is None:
            cols = _im2col(x, ksize, stride, dil, pads, groups)
        gn = g.reshape(n, groups, og, opix).transpose(0, 1, 3, 2)
        if rows > 32:  # OpenBLAS runs these ~1.5x faster with g copied in (pixels, o) order
            gn = xp_of(gn).ascontiguousarray(gn)
        gw = np.matmul(cols, gn).sum(0).transpose(0, 2, 1)
        return xp_of(gw).ascontiguousarray(gw).reshape(o, cg, *ksize)
    # Few pixels per image: one GEMM with a long inner dimension (images x pixels).
    win = np.moveaxis(_windows(_pad_arr(x, pads), ksize, stride, dil, osize), 0, 1 + len(ksize))
    cols = win.reshape(groups, rows, n * opix)
    # (rows, n * opix) @ (n * opix, o): OpenBLAS runs this product with a long inner
    # dimension ~1.5x faster than its transpose, g (o, n * opix) @ cols.T.
    gn = np.moveaxis(g, 1, -1).reshape(n * opix, groups, og).transpose(1, 0, 2)
    gw = np.matmul(cols, gn).transpose(0, 2, 1)
    return xp_of(gw).ascontiguousarray(gw).reshape(o, cg, *ksize)


def _bias_grad(g: Tensor) -> Tensor:
    gd = g._data
    if not STATE.enabled and gd.dtype.kind == "f" and gd.itemsize >= 4 and gd.size:
        return Tensor._make(channel_sum(gd))  # a plain backward: one read, on arrays
    return g.sum((0, *range(2, g.ndim)))


def _adjoint_pads(pads, out_size, g_size, ksize, stride, dil) -> tuple:
    """Pads making conv(., pads') the adjoint of conv_transpose(., pads, out_size)."""
    res = []
    for (lo, _), size, gi, k, s, d in zip(pads, out_size, g_size, ksize, stride, dil):
        full = (gi - 1) * s + d * (k - 1) + 1
        res.append((lo, full - lo - size))
    return tuple(res)


class Convolution(Op):
    node_name = "ConvolutionBackward0"
    saves = (0, 1)

    @staticmethod
    def forward(ctx, x, w, b=None, *, stride, dil, pads, groups):
        ctx.geom = (stride, dil, pads, groups)
        cols = None
        need = getattr(ctx, "needs_input_grad", None)  # None: not recorded
        if need and need[1] and x.dtype.itemsize >= 4:
            # The weight's gradient reuses the columns (a copy k times the input's size)
            # when they are small; half-precision inputs compute in float32 copies instead.
            cols = _im2col(x, w.shape[2:], stride, dil, pads, groups)
            if cols.nbytes <= _KEEP_COLS:
                ctx.cols = cols
        return _conv(x, w, b, stride, dil, pads, groups, cols=cols)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        need = ctx.needs_input_grad
        stride, dil, pads, groups = ctx.geom
        cols, ctx.cols = getattr(ctx, "cols", None), None  # freed once used
        kw = {"stride": stride, "dil": dil, "pads": pads, "groups": groups}
        grad_input = variant(ConvTranspose, _GRAD_NAME)
        gx = grad_input.apply(g, w, out_size=x.shape[2:], **kw) if need[0] else None
        gw = ConvWeight.apply(x, g, ksize=w.shape[2:], cols=cols, **kw) if need[1] else None
        if len(need) == 2:
            return gx, gw
        return gx, gw, (_bias_grad(g) if need[2] else None)


class ConvTranspose(Op):
    node_name = "ConvolutionBackward0"
    saves = (0, 1)

    @staticmethod
    def forward(ctx, g, w, b=None, *, stride, dil, pads, groups, out_size):
        ctx.geom = (stride, dil, pads, groups, out_size)
        return _conv_t(g, w, b, stride, dil, pads, groups, out_size)

    @staticmethod
    def backward(ctx, gy):
        g, w = ctx.saved_tensors
        need = ctx.needs_input_grad
        stride, dil, pads, groups, out_size = ctx.geom
        adj = _adjoint_pads(pads, out_size, g.shape[2:], w.shape[2:], stride, dil)
        kw = {"stride": stride, "dil": dil, "pads": adj, "groups": groups}
        gg = variant(Convolution, _GRAD_NAME).apply(gy, w, **kw) if need[0] else None
        gw = ConvWeight.apply(gy, g, ksize=w.shape[2:], **kw) if need[1] else None
        if len(need) == 2:
            return gg, gw
        return gg, gw, (_bias_grad(gy) if need[2] else None)


class ConvWeight(Op):
    """The weight gradient of a convolution, as a differentiable op of (input, grad_output)."""

    node_name = _GRAD_NAME
    saves = (0, 1)

    @staticmethod
    def forward(ctx, x, g, *, stride, dil, pads, groups, ksize, cols=None):
        ctx.geom = (stride, dil, pads, groups)
        return _conv_weight(x, g, stride, dil, pads, groups, ksize, cols=cols)

    @staticmethod
    def backward(ctx, gw):
        x, g = ctx.saved_tensors
        need = ctx.needs_input_grad
        stride, dil, pads, groups = ctx.geom
        kw = {"stride": stride, "dil": dil, "pads": pads, "groups": groups}
        gx = ConvTranspose.apply(g, gw, out_size=x.shape[2:], **kw) if need[0] else None
        gg = Convolution.apply(x, gw, **kw) if need[1] else None
        return gx, gg


class Im2Col(Op):
    """F.unfold: every kernel window as a column, (N, C * kh * kw, L)."""

    node_name = "Im2ColBackward0"

    @staticmethod
    def forward(ctx, x, ksize=(1, 1), dil=(1, 1), pad=(0, 0), stride=(1, 1)):
        ctx.geom, ctx.size = (ksize, dil, pad, stride), x.shape[2:]
        xp = _pad_arr(x, ((pad[0], pad[0]), (pad[1], pad[1])))
        osize = tuple(_out_len(xp.shape[2 + i], ksize[i], stride[i], dil[i]) for i in (0, 1))
        n, c = x.shape[:2]
        return _windows(xp, ksize, stride, dil, osize).reshape(
            n, c * ksize[0] * ksize[1], osize[0] * osize[1])

    @staticmethod
    def backward(ctx, g):
        return Col2Im.apply(g, out_size=ctx.size, geom=ctx.geom)


class Col2Im(Op):
    """F.fold: sum columns (N, C * kh * kw, L) back into an (N, C, H, W) image."""

    node_name = "Col2ImBackward0"

    @staticmethod
    def forward(ctx, cols, out_size=(1, 1), geom=None):
        (kh, kw), dil, pad, stride = geom
        ctx.geom = geom
        n = cols.shape[0]
        c = cols.shape[1] // (kh * kw)
        osize = tuple(_out_len(out_size[i] + 2 * pad[i], geom[0][i], stride[i], dil[i])
                      for i in (0, 1))
        blocks = cols.reshape(n, c, kh, kw, *osize).transpose(0, 2, 3, 1, 4, 5)
        full = tuple((o - 1) * s + d * (k - 1) + 1 for o, s, d, k in
                     zip(osize, stride, dil, (kh, kw)))
        img = _col2im(blocks, full, stride, dil)
        return _pad_arr(img, tuple((-p, size + p - f) for p, size, f in
                                   zip(pad, out_size, full)))

    @staticmethod
    def backward(ctx, g):
        ksize, dil, pad, stride = ctx.geom
        return Im2Col.apply(g, ksize=ksize, dil=dil, pad=pad, stride=stride)


# --- public functions (torch.conv2d, F.conv2d, ...) ----------------------------------------


def _tuple(v, n: int) -> tuple:
    if isinstance(v, int):
        return (v,) * n
    v = tuple(int(a) for a in v)
    return v * n if len(v) == 1 else v


def _check_common(name, x: Tensor, w: Tensor, b, nd: int, stride, dil, groups) -> None:
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                           f"{name}, but got input of size: {list(x.shape)}")
    if w.ndim != nd + 2:
        raise RuntimeError("weight should have at least three dimensions")
    if x.dtype is not w.dtype:
        raise RuntimeError(f"Input type ({x.type()}) and weight type ({w.type()}) should be the "
                           "same or input should be a MKLDNN tensor and weight is a dense tensor")
    if b is not None and b.dtype is not w.dtype:
        raise RuntimeError(f"Input type ({x.type()}) and bias type ({b.type()}) should be the "
                           "same")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dil):
        raise RuntimeError("dilation should be greater than zero")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if w.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size {list(w.shape)} instead")


def _conv_padding(padding, nd: int, stride, dil, ksize) -> tuple:
    """``padding`` (int, tuple, 'same', 'valid') as per-dim ``(lo, hi)`` pairs."""
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * nd
        if padding != "same":
            raise RuntimeError(f"Invalid padding string: '{padding}'")
        if any(s != 1 for s in stride):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        # An odd total pads one more on the right, as torch does (and warns).
        if any(d * (k - 1) % 2 for d, k in zip(dil, ksize)):
            warnings.warn("Using padding='same' with even kernel lengths and odd dilation may "
                          "require a zero-padded copy of the input be created", stacklevel=4)
        return tuple((d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2)
                     for d, k in zip(dil, ksize))
    p = _tuple(padding, nd)
    if any(v < 0 for v in p):
        raise RuntimeError("negative padding is not supported")
    return tuple((v, v) for v in p)


def _convnd(name: str, nd: int, input: Tensor, weight: Tensor, bias, stride, padding,
            dilation, groups) -> Tensor:
    stride, dil = _tuple(stride, nd), _tuple(dilation, nd)
    _check_common(name, input, weight, bias, nd, stride, dil, groups)
    if input.ndim == nd + 1:
        out = _convnd(name, nd, input.unsqueeze(0), weight, bias, stride, padding, dil, groups)
        return out.squeeze(0)
    ksize = tuple(weight.shape[2:])
    pads = _conv_padding(padding, nd, stride, dil, ksize)
    if input.shape[1] != weight.shape[1] * groups:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {list(weight.shape)}, expected "
            f"input{list(input.shape)} to have {weight.shape[1] * groups} channels, but got "
            f"{input.shape[1]} channels instead")
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != weight.shape[0]):
        raise RuntimeError(
            f"Given weight of size {list(weight.shape)}, expected bias to be 1-dimensional with "
            f"{weight.shape[0]} elements, but got bias of size {list(bias.shape)} instead")
    padded = [n + lo + hi for n, (lo, hi) in zip(input.shape[2:], pads)]
    eff = [d * (k - 1) + 1 for d, k in zip(dil, ksize)]
    if any(p < k for p, k in zip(padded, eff)):
        raise RuntimeError(
            f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
            f"Kernel size: ({' x '.join(map(str, eff))}). Kernel size can't be greater than "
            "actual input size")
    args = (input, weight) if bias is None else (input, weight, bias)
    return Convolution.apply(*args, stride=stride, dil=dil, pads=pads, groups=groups)


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """1-D convolution over (N, C, L) or unbatched (C, L) input."""
    return _convnd("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """2-D convolution over (N, C, H, W) or unbatched (C, H, W) input."""
    return _convnd("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """3-D convolution over (N, C, D, H, W) or unbatched (C, D, H, W) input."""
    return _convnd("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def _conv_transposend(name: str, nd: int, input: Tensor, weight: Tensor, bias, stride, padding,
                      output_padding, groups, dilation) -> Tensor:
    stride, dil = _tuple(stride, nd), _tuple(dilation, nd)
    _check_common(name, input, weight, bias, nd, stride, dil, groups)
    if input.ndim == nd + 1:
        return _conv_transposend(name, nd, input.unsqueeze(0), weight, bias, stride, padding,
                                 output_padding, groups, dil).squeeze(0)
    if isinstance(padding, str):
        raise RuntimeError(f"{name}(): argument 'padding' must be tuple of ints, not str")
    pad, opad = _tuple(padding, nd), _tuple(output_padding, nd)
    if any(v < 0 for v in pad):
        raise RuntimeError("negative padding is not supported")
    if any(o >= s and o >= d for o, s, d in zip(opad, stride, dil)):
        if nd == 1:  # torch reports a 1-D transposed conv as the 2-D one it runs
            opad, stride, dil = (0, *opad), (1, *stride), (1, *dil)
        dims = ("depth", "height", "width")[-len(opad):]
        parts = [f"output_padding_{n}: {o}" for n, o in zip(dims, opad)]
        parts += [f"stride_{n}: {s}" for n, s in zip(dims, stride)]
        parts += [f"dilation_{n}: {d}" for n, d in zip(dims, dil)]
        raise RuntimeError("output padding must be smaller than either stride or dilation, but "
                           f"got {' '.join(parts)}")
    if input.shape[1] != weight.shape[0]:
        raise RuntimeError(
            f"Given transposed=1, weight of size {list(weight.shape)}, expected "
            f"input{list(input.shape)} to have {weight.shape[0]} channels, but got "
            f"{input.shape[1]} channels instead")
    cout = weight.shape[1] * groups
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != cout):
        raise RuntimeError(
            f"Given transposed=1, weight of size {list(weight.shape)}, expected bias to be "
            f"1-dimensional with {cout} elements, but got bias of size {list(bias.shape)} "
            "instead")
    out_size = tuple((n - 1) * s - 2 * p + d * (k - 1) + o + 1 for n, s, p, d, k, o in
                     zip(input.shape[2:], stride, pad, dil, weight.shape[2:], opad))
    if any(n <= 0 for n in out_size):
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, input.shape[2:]))}"
                           f"). Calculated output size per channel: "
                           f"({' x '.join(map(str, out_size))}). Output size is too small")
    args = (input, weight) if bias is None else (input, weight, bias)
    return ConvTranspose.apply(*args, stride=stride, dil=dil, pads=tuple((p, p) for p in pad),
                               groups=groups, out_size=out_size)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """1-D transposed convolution; ``weight`` is (in_channels, out_channels / groups, k)."""
    return _conv_transposend("conv_transpose1d", 1, input, weight, bias, stride, padding,
                             output_padding, groups, dilation)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """2-D transposed convolution; ``weight`` is (in_channels, out_channels / groups, kh, kw)."""
    return _conv_transposend("conv_transpose2d", 2, input, weight, bias, stride, padding,
                             output_padding, groups, dilation)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """3-D transposed convolution; ``weight`` is (in_channels, out_channels / groups, kd, kh,
    kw)."""
    return _conv_transposend("conv_transpose3d", 3, input, weight, bias, stride, padding,
                             output_padding, groups, dilation)


def _blocks(size, k, d, p, s) -> tuple:
    return tuple((n + 2 * pi - di * (ki - 1) - 1) // si + 1
                 for n, ki, di, pi, si in zip(size, k, d, p, s))


def _check_blocks(size, k, d, p, s) -> tuple:
    blocks = _blocks(size, k, d, p, s)
    if any(b < 1 for b in blocks):
        raise RuntimeError(f"Given input with spatial size {tuple(size)}, kernel_size={k}, "
                           f"dilation={d}, padding={p}, calculated shape of the array of "
                           f"sliding blocks as {blocks}, but its components must be at least "
                           "one.")
    return blocks


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Extract sliding local blocks: (N, C, H, W) -> (N, C * kh * kw, L) (im2col)."""
    if input.ndim not in (3, 4):
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-max(input.ndim, 1)}, {max(input.ndim, 1) - 1}], but got 2)")
    k, d, p, s = (_tuple(v, 2) for v in (kernel_size, dilation, padding, stride))
    if input.ndim == 3:
        return unfold(input.unsqueeze(0), k, d, p, s).squeeze(0)
    _check_blocks(input.shape[2:], k, d, p, s)
    return Im2Col.apply(input, ksize=k, dil=d, pad=p, stride=s)


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0,
         stride=1) -> Tensor:
    """Sum sliding blocks (N, C * kh * kw, L) into an (N, C, *output_size) image (col2im)."""
    if input.ndim not in (2, 3):
        raise RuntimeError("Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
                           "batch size and non-zero dimensions for input, but got: "
                           f"{list(input.shape)}")
    o, k, d, p, s = (_tuple(v, 2) for v in (output_size, kernel_size, dilation, padding,
                                            stride))
    if input.ndim == 2:
        return fold(input.unsqueeze(0), o, k, d, p, s).squeeze(0)
    if input.shape[1] % (k[0] * k[1]):
        raise RuntimeError("Expected size of input's dimension 1 to be divisible by the product "
                           f"of kernel_size, but got input.size(1)={input.shape[1]} and "
                           f"kernel_size={k}.")
    blocks = _check_blocks(o, k, d, p, s)
    if input.shape[2] != blocks[0] * blocks[1]:
        raise RuntimeError(f"Given output_size={o}, kernel_size={k}, dilation={d}, padding={p}, "
                           f"stride={s}, expected size of input's dimension 2 to match the "
                           f"calculated number of sliding blocks {blocks[0]} * {blocks[1]} = "
                           f"{blocks[0] * blocks[1]}, but got input.size(2)={input.shape[2]}.")
    return Col2Im.apply(input, out_size=o, geom=(k, d, p, s))


METHODS: dict = {}
FUNCTIONS = {"conv1d": conv1d, "conv2d": conv2d, "conv3d": conv3d,
             "conv_transpose1d": conv_transpose1d, "conv_transpose2d": conv_transpose2d,
             "conv_transpose3d": conv_transpose3d}
