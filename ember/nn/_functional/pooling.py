"""F.max_pool1d/2d, F.avg_pool1d/2d and the adaptive pools (primitives in ember/ops/pool.py)."""

from __future__ import annotations

from ember._tensor import Tensor
from ember.ops import pool as _pool


def _pair(v) -> tuple:
    if isinstance(v, int):
        return (v, v)
    v = tuple(v)
    return v * 2 if len(v) == 1 else v


def _geometry(x: Tensor, kernel_size, stride, padding, dilation, ceil_mode: bool) -> tuple:
    """Check pooling arguments torch's way; return (ksize, stride, pad, dil, osize)."""
    k = _pair(kernel_size)
    s = k if stride is None or (not isinstance(stride, int) and len(stride) == 0) else _pair(
        stride)
    p, d = _pair(padding), _pair(dilation)
    if any(v == 0 for v in s):
        raise RuntimeError("stride should not be zero")
    if any(v <= 0 for v in k):
        raise RuntimeError("kernel_size must be greater than zero")
    if any(v <= 0 for v in d):
        raise RuntimeError("dilation should be greater than zero, but got dilationH: "
                           f"{d[0]} dilationW: {d[1]}")
    for pi, ki, di in zip(p, k, d):
        if pi < 0 or pi > (di * (ki - 1) + 1) // 2:
            raise RuntimeError("pad should be at most half of effective kernel size, but got "
                               f"pad={pi}, kernel_size={ki} and dilation={di}")
    h, w = x.shape[-2:]
    o = tuple(_pool._out_len(n, ki, si, pi, di, ceil_mode)
              for n, ki, si, pi, di in zip((h, w), k, s, p, d))
    if o[0] < 1 or o[1] < 1:
        c = x.shape[-3]
        raise RuntimeError(f"Given input size: ({c}x{h}x{w}). Calculated output size: "
                           f"({c}x{o[0]}x{o[1]}). Output size is too small")
    return k, s, p, d, o


def _batched(x: Tensor, fn):
    """Run a 4-D pool on a 3-D (unbatched) input too."""
    if x.ndim == 3:
        out = fn(x.unsqueeze(0))
        return tuple(o.squeeze(0) for o in out) if isinstance(out, tuple) else out.squeeze(0)
    return fn(x)


def _check_2d(x: Tensor, name: str) -> None:
    if name == "avg_pool2d" and x.ndim < 3:  # torch fails on the channel dim lookup
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-max(x.ndim, 1)}, {max(x.ndim, 1) - 1}], but got -3)")
    if x.ndim not in (3, 4):
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input" if
                           name.startswith(("max", "avg")) else
                           f"{name}(): Expected 3D or 4D tensor, but got {list(x.shape)}")


def _check_1d(x: Tensor, name: str) -> None:
    if x.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {x.ndim}-dimensional tensor for "
                           f"argument #1 'self' (while checking arguments for {name})")


def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """2-D max pooling; with ``return_indices`` also the flat per-plane argmax indices."""
    _check_2d(input, "max_pool2d")
    k, s, p, d, o = _geometry(input, kernel_size, stride, padding, dilation, ceil_mode)
    out, idx = _batched(input, lambda x: _pool.MaxPool2d.apply(
        x, ksize=k, stride=s, pad=p, dil=d, osize=o))
    return (out, idx) if return_indices else out


def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """1-D max pooling over (N, C, L) or (C, L)."""
    if input.ndim not in (2, 3):
        raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 "
                           f"dim batch size for input, but got:{list(input.shape)}")
    k = kernel_size if isinstance(kernel_size, int) else kernel_size[0]
    pd = padding if isinstance(padding, int) else padding[0]
    if pd > k // 2:
        raise RuntimeError("max_pool1d() padding should be at most half of kernel size, but got "
                           f"padding={pd} and kernel_size={k}")
    s = None if stride is None or not isinstance(stride, int) and not len(stride) else (
        1, stride if isinstance(stride, int) else stride[0])
    dl = dilation if isinstance(dilation, int) else dilation[0]
    out = max_pool2d(input.unsqueeze(-2), (1, k), s or (1, k), (0, pd), (1, dl), ceil_mode,
                     True)
    out, idx = out[0].squeeze(-2), out[1].squeeze(-2)
    return (out, idx) if return_indices else out


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """2-D average pooling."""
    _check_2d(input, "avg_pool2d")
    if divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    k, s, p, _, o = _geometry(input, kernel_size, stride, padding, 1, ceil_mode)
    geom = (k, s, p, o, count_include_pad, divisor_override)
    return _batched(input, lambda x: _pool.AvgPool2d.apply(x, geom=geom))


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """1-D average pooling over (N, C, L) or (C, L)."""
    _check_1d(input, "avg_pool1d")

    def first(v):
        return v if isinstance(v, int) else v[0]

    s = None if stride is None or not isinstance(stride, int) and not len(stride) else (
        1, first(stride))
    k = first(kernel_size)
    out = avg_pool2d(input.unsqueeze(-2), (1, k), s or (1, k), (0, first(padding)), ceil_mode,
                     count_include_pad)
    return out.squeeze(-2)


def _adaptive_size(x: Tensor, output_size, name: str) -> tuple:
    o = (output_size, output_size) if isinstance(output_size, int) or output_size is None \
        else tuple(output_size)
    if len(o) != 2:
        raise RuntimeError(f"{name}: output_size must be 2")
    o = tuple(x.shape[-2 + i] if v is None else int(v) for i, v in enumerate(o))
    if any(v < 0 for v in o):
        raise RuntimeError(f"{name}: elements of output_size must be greater than or equal to 0 "
                           f"but received {{{o[0]}, {o[1]}}}")
    return o


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """Average over ``output_size`` windows that tile the input as evenly as possible."""
    _check_2d(input, "adaptive_avg_pool2d")
    o = _adaptive_size(input, output_size, "adaptive_avg_pool2d")
    if o == (1, 1):
        return input.mean((-2, -1), keepdim=True)  # torch takes this shortcut too
    return _batched(input, lambda x: _pool.AdaptiveAvgPool2d.apply(x, osize=o))


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    _check_1d(input, "adaptive_avg_pool1d")
    o = output_size if isinstance(output_size, int) else output_size[0]
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1, o)).squeeze(-2)


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """Max over adaptive windows; with ``return_indices`` also the argmax indices."""
    _check_2d(input, "adaptive_max_pool2d")
    o = _adaptive_size(input, output_size, "adaptive_max_pool2d")
    out, idx = _batched(input, lambda x: _pool.AdaptiveMaxPool2d.apply(x, osize=o))
    return (out, idx) if return_indices else out


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    _check_1d(input, "adaptive_max_pool1d")
    o = output_size if isinstance(output_size, int) else output_size[0]
    out, idx = adaptive_max_pool2d(input.unsqueeze(-2), (1, o), True)
    out, idx = out.squeeze(-2), idx.squeeze(-2)
    return (out, idx) if return_indices else out


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """Partial inverse of max_pool2d: values written (not summed: repeated indices keep one)
    at their argmax ``indices``, zeros elsewhere."""
    k = _pair(kernel_size)
    s = k if stride is None else _pair(stride)
    p = _pair(padding)
    default = [(n - 1) * si - 2 * pi + ki
               for n, si, pi, ki in zip(input.shape[-2:], s, p, k)]
    size = default if output_size is None else list(output_size)[-2:]
    for d, (o, lo) in enumerate(zip(size, default)):
        if not lo - s[d] < o < lo + s[d]:
            raise ValueError(f'invalid output_size "{tuple(output_size)}" (dim {d} must be '
                             f"between {lo - s[d] + 1} and {lo + s[d] - 1})")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError("Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: "
                           f"{list(indices.shape)}")
    idx = indices._data
    if idx.size and (idx.min() < 0 or idx.max() >= size[0] * size[1]):
        bad = idx.max() if idx.max() >= size[0] * size[1] else idx.min()
        raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                           f"{size[0]}x{size[1]})")
    return _batched(input, lambda x: _pool.MaxUnpool2d.apply(
        x, idx=idx.reshape(x.shape), shape=(*x.shape[:2], *size), unique=True))


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """Partial inverse of max_pool1d."""

    def first(v):
        return v if isinstance(v, int) else v[0]

    k = first(kernel_size)
    s = k if stride is None else first(stride)
    size = None if output_size is None else (1, list(output_size)[-1])
    return max_unpool2d(input.unsqueeze(-2), indices.unsqueeze(-2), (1, k), (1, s),
                        (0, first(padding)), size).squeeze(-2)


__all__ = ["adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d",
           "adaptive_max_pool2d", "avg_pool1d", "avg_pool2d", "max_pool1d", "max_pool2d",
           "max_unpool1d", "max_unpool2d"]
