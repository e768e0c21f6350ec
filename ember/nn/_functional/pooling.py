"""F.max_pool*, F.avg_pool*, the adaptive pools, max_unpool*, lp_pool* (1-D, 2-D, 3-D).

The primitives in ember/ops/pool.py take any number of spatial dims; the 2-D and 3-D functions
here check arguments torch's way and call them. The 1-D functions run the 2-D ones on a height
of 1, as torch does.
"""

from __future__ import annotations

import math

from ember._creation import legacy_name
from ember._dtype import int64
from ember._tensor import Tensor
from ember.ops import pool as _pool

_WORDS = {1: "one", 2: "two", 3: "three"}
_LABELS = ("T", "H", "W")  # torch's names of the spatial dims in pooling messages


def _ntuple(v, nd: int, name: str, what: str) -> tuple:
    """An int, 1-tuple or ``nd``-tuple option as an ``nd``-tuple."""
    if isinstance(v, int):
        return (v,) * nd
    v = tuple(v)
    if len(v) == 1:
        return v * nd
    if len(v) != nd:
        omitted = " omitted," if what == "stride" else ""
        raise RuntimeError(f"{name}: {what} must either be{omitted} a single int, or a tuple of "
                           f"{_WORDS[nd]} ints")
    return v


def _labelled(prefix: str, values) -> str:
    return " ".join(f"{prefix}{label}: {v}" for label, v in zip(_LABELS[-len(values):], values))


def _geometry(x: Tensor, nd: int, name: str, kernel_size, stride, padding, dilation,
              ceil_mode: bool, whole_kernel: bool = False) -> tuple:
    """Check pooling arguments torch's way; return (ksize, stride, pad, dil, osize).

    ``whole_kernel``: every input dim must hold a whole kernel, padding aside (avg_pool3d).
    """
    k = _ntuple(kernel_size, nd, name, "kernel_size")
    omitted = stride is None or not isinstance(stride, int) and len(stride) == 0
    s = k if omitted else _ntuple(stride, nd, name, "stride")
    p, d = _ntuple(padding, nd, name, "padding"), _ntuple(dilation, nd, name, "dilation")
    if any(v == 0 for v in s):
        raise RuntimeError("stride should not be zero")
    if any(v <= 0 for v in k):
        raise RuntimeError(f"kernel size should be greater than zero, but got {_labelled('k', k)}")
    if any(v <= 0 for v in d):
        raise RuntimeError("dilation should be greater than zero, but got "
                           f"{_labelled('dilation', d)}")
    size = tuple(x.shape[-nd:])
    if whole_kernel and any(n < ki for n, ki in zip(size, k)):
        raise RuntimeError(f"input image ({_labelled('', size)}) smaller than kernel size "
                           f"({_labelled('k', k)})")
    if any(v < 0 for v in p):
        raise RuntimeError(f"pad must be non-negative, but got pad: {min(p)}")
    for pi, ki, di in zip(p, k, d):
        if pi > (di * (ki - 1) + 1) // 2:
            raise RuntimeError("pad should be at most half of effective kernel size, but got "
                               f"pad={pi}, kernel_size={ki} and dilation={di}")
    o = tuple(_pool._out_len(*args, ceil_mode) for args in zip(size, k, s, p, d))
    if any(v < 1 for v in o):
        c = x.shape[-nd - 1]
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, (c, *size)))}). Calculated "
                           f"output size: ({'x'.join(map(str, (c, *o)))}). Output size is too "
                           "small")
    return k, s, p, d, o


def _batched(x: Tensor, nd: int, fn):
    """Run a batched pool on an unbatched (C, *spatial) input too."""
    if x.ndim == nd + 1:
        out = fn(x.unsqueeze(0))
        return tuple(o.squeeze(0) for o in out) if isinstance(out, tuple) else out.squeeze(0)
    return fn(x)


def _check_dims(x: Tensor, nd: int, name: str) -> None:
    if name == "avg_pool2d" and x.ndim < 3:  # torch fails on the channel dim lookup
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-max(x.ndim, 1)}, {max(x.ndim, 1) - 1}], but got -3)")
    adaptive = name.startswith("adaptive")
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got {list(x.shape)}"
            if adaptive else
            f"non-empty {nd + 1}D or {nd + 2}D (batch mode) tensor expected for input")
    # Only a batch may be empty (adaptive pools take any dim 0 for one).
    first = 1 if adaptive else x.ndim - nd - 1
    empty = [d for d in range(first, x.ndim) if x.shape[d] == 0]
    if not empty or name.startswith("adaptive_avg"):
        return
    if adaptive:
        raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch "
                           f"dimensions, but input has sizes {list(x.shape)} with dimension "
                           f"{empty[0]} being empty")
    if nd == 2:
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size "
                           f"for input, but got:{list(x.shape)}")
    raise RuntimeError(f"{name}(): Expected input's non-batch dimensions to have positive length, "
                       f"but input has a shape of {list(x.shape)} and non-batch dimension "
                       f"{empty[0] - first} has length zero!")


def _check_1d(x: Tensor, name: str) -> None:
    if x.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {x.ndim}-dimensional tensor for "
                           f"argument #1 'self' (while checking arguments for {name})")


def _first(v):
    return v if isinstance(v, int) else v[0]


def _stride_1d(stride):
    """A 1-D pool's stride as the 2-D one (None when omitted: it defaults to the kernel)."""
    if stride is None or not isinstance(stride, int) and not len(stride):
        return None
    return 1, _first(stride)


# --- max pooling ---------------------------------------------------------------------------


def _max_pool(nd: int, input: Tensor, kernel_size, stride, padding, dilation, ceil_mode,
              return_indices):
    name = f"max_pool{nd}d"
    _check_dims(input, nd, name)
    k, s, p, d, o = _geometry(input, nd, name, kernel_size, stride, padding, dilation,
                              ceil_mode)
    op = _pool.for_dims(_pool.MaxPool, nd)
    out, idx = _batched(input, nd, lambda x: op.apply(x, ksize=k, stride=s, pad=p, dil=d,
                                                      osize=o))
    return (out, idx) if return_indices else out


def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """2-D max pooling; with ``return_indices`` also the flat per-plane argmax indices."""
    return _max_pool(2, input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def max_pool3d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """3-D max pooling over (N, C, D, H, W) or (C, D, H, W)."""
    return _max_pool(3, input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """1-D max pooling over (N, C, L) or (C, L)."""
    if input.ndim not in (2, 3):
        raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 "
                           f"dim batch size for input, but got:{list(input.shape)}")
    k, pd = _first(kernel_size), _first(padding)
    if pd > k // 2:
        raise RuntimeError("max_pool1d() padding should be at most half of kernel size, but got "
                           f"padding={pd} and kernel_size={k}")
    out, idx = max_pool2d(input.unsqueeze(-2), (1, k), _stride_1d(stride) or (1, k), (0, pd),
                          (1, _first(dilation)), ceil_mode, True)
    out, idx = out.squeeze(-2), idx.squeeze(-2)
    return (out, idx) if return_indices else out


# --- average pooling -----------------------------------------------------------------------


def _avg_pool(nd: int, input: Tensor, kernel_size, stride, padding, ceil_mode,
              count_include_pad, divisor_override) -> Tensor:
    name = f"avg_pool{nd}d"
    _check_dims(input, nd, name)
    if divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    k, s, p, _, o = _geometry(input, nd, name, kernel_size, stride, padding, 1, ceil_mode,
                              whole_kernel=nd == 3)
    geom = (k, s, p, o, count_include_pad, divisor_override)
    op = _pool.for_dims(_pool.AvgPool, nd)
    return _batched(input, nd, lambda x: op.apply(x, geom=geom))


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """2-D average pooling."""
    return _avg_pool(2, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def avg_pool3d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """3-D average pooling over (N, C, D, H, W) or (C, D, H, W)."""
    return _avg_pool(3, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """1-D average pooling over (N, C, L) or (C, L)."""
    _check_1d(input, "avg_pool1d")
    k = _first(kernel_size)
    out = avg_pool2d(input.unsqueeze(-2), (1, k), _stride_1d(stride) or (1, k),
                     (0, _first(padding)), ceil_mode, count_include_pad)
    return out.squeeze(-2)


# --- adaptive pooling ----------------------------------------------------------------------


def _adaptive_size(x: Tensor, nd: int, output_size, name: str) -> tuple:
    o = (output_size,) * nd if isinstance(output_size, int) or output_size is None \
        else tuple(output_size)
    if len(o) != nd:
        raise RuntimeError(f"{name}: output_size must be {nd}")
    o = tuple(x.shape[-nd + i] if v is None else int(v) for i, v in enumerate(o))
    if any(v < 0 for v in o):
        raise RuntimeError(f"{name}: elements of output_size must be greater than or equal to 0 "
                           f"but received {{{', '.join(map(str, o))}}}")
    return o


def _adaptive_avg_pool(nd: int, input: Tensor, output_size) -> Tensor:
    name = f"adaptive_avg_pool{nd}d"
    _check_dims(input, nd, name)
    o = _adaptive_size(input, nd, output_size, name)
    if o == (1,) * nd:
        return input.mean(tuple(range(-nd, 0)), keepdim=True)  # torch takes this shortcut too
    op = _pool.for_dims(_pool.AdaptiveAvgPool, nd)
    return _batched(input, nd, lambda x: op.apply(x, osize=o))


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """Average over ``output_size`` windows that tile the input as evenly as possible."""
    return _adaptive_avg_pool(2, input, output_size)


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:
    """Average over (D, H, W) ``output_size`` windows that tile the input evenly."""
    return _adaptive_avg_pool(3, input, output_size)


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    _check_1d(input, "adaptive_avg_pool1d")
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1, _first(output_size))).squeeze(-2)


def _adaptive_max_pool(nd: int, input: Tensor, output_size, return_indices: bool):
    name = f"adaptive_max_pool{nd}d"
    _check_dims(input, nd, name)
    o = _adaptive_size(input, nd, output_size, name)
    op = _pool.for_dims(_pool.AdaptiveMaxPool, nd)
    out, idx = _batched(input, nd, lambda x: op.apply(x, osize=o))
    return (out, idx) if return_indices else out


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """Max over adaptive windows; with ``return_indices`` also the argmax indices."""
    return _adaptive_max_pool(2, input, output_size, return_indices)


def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False):
    """Max over adaptive (D, H, W) windows; with ``return_indices`` also the indices."""
    return _adaptive_max_pool(3, input, output_size, return_indices)


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    _check_1d(input, "adaptive_max_pool1d")
    out, idx = adaptive_max_pool2d(input.unsqueeze(-2), (1, _first(output_size)), True)
    out, idx = out.squeeze(-2), idx.squeeze(-2)
    return (out, idx) if return_indices else out


# --- max unpooling -------------------------------------------------------------------------


def _max_unpool(nd: int, input: Tensor, indices: Tensor, kernel_size, stride, padding,
                output_size) -> Tensor:
    """Values written (not summed: repeated indices keep one) at their argmax ``indices``,
    zeros elsewhere."""
    name = f"max_unpool{nd}d"
    k = _ntuple(kernel_size, nd, name, "kernel_size")
    s = k if stride is None else _ntuple(stride, nd, name, "stride")
    p = _ntuple(padding, nd, name, "padding")
    default = [(n - 1) * si - 2 * pi + ki
               for n, si, pi, ki in zip(input.shape[-nd:], s, p, k)]
    size = default if output_size is None else list(output_size)[-nd:]
    for d, (o, lo) in enumerate(zip(size, default)):
        if not lo - s[d] < o < lo + s[d]:
            raise ValueError(f'invalid output_size "{tuple(output_size)}" (dim {d} must be '
                             f"between {lo - s[d]} and {lo + s[d]})")
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Input to max_unpooling{nd}d should be a {nd + 1}d or {nd + 2}d "
                           f"Tensor, but got a tensor with {input.ndim} dimensions.")
    if indices.dtype is not int64:
        raise RuntimeError("elements in indices should be type int64 but got: "
                           f"{legacy_name(indices.dtype)}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError("Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: "
                           f"{list(indices.shape)}")
    idx, volume = indices._data, math.prod(size)
    if idx.size and (idx.min() < 0 or idx.max() >= volume):
        bad = idx.max() if idx.max() >= volume else idx.min()
        raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                           f"{'x'.join(map(str, size))})")
    op = _pool.for_dims(_pool.IndexScatter, nd)
    return _batched(input, nd, lambda x: op.apply(
        x, idx=idx.reshape(x.shape), shape=(*x.shape[:2], *size), unique=True))


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """Partial inverse of max_pool2d."""
    return _max_unpool(2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """Partial inverse of max_pool3d."""
    return _max_unpool(3, input, indices, kernel_size, stride, padding, output_size)


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """Partial inverse of max_pool1d."""
    k = _first(kernel_size)
    s = k if stride is None else _first(stride)
    size = None if output_size is None else (1, list(output_size)[-1])
    return max_unpool2d(input.unsqueeze(-2), indices.unsqueeze(-2), (1, k), (1, s),
                        (0, _first(padding)), size).squeeze(-2)


# --- power-average pooling -----------------------------------------------------------------


def _lp_pool(nd: int, input: Tensor, norm_type: float, kernel_size, stride,
             ceil_mode: bool) -> Tensor:
    """``(sum over each window of x ** p) ** (1 / p)``, through average pooling."""
    k = _ntuple(kernel_size, nd, f"lp_pool{nd}d", "kernel_size")
    avg = (avg_pool1d, avg_pool2d, avg_pool3d)[nd - 1]
    out = avg(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    # torch's composition: an all-zero window gets a zero gradient through relu's select.
    return (out.sign() * out.abs().relu()).mul(math.prod(k)).pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size, stride=None,
              ceil_mode: bool = False) -> Tensor:
    """1-D power-average pooling: the ``norm_type``-norm of each window."""
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size, stride=None,
              ceil_mode: bool = False) -> Tensor:
    """2-D power-average pooling: the ``norm_type``-norm of each window."""
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size, stride=None,
              ceil_mode: bool = False) -> Tensor:
    """3-D power-average pooling: the ``norm_type``-norm of each window."""
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)


__all__ = ["adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d", "avg_pool1d",
           "avg_pool2d", "avg_pool3d", "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_pool1d",
           "max_pool2d", "max_pool3d", "max_unpool1d", "max_unpool2d", "max_unpool3d"]
