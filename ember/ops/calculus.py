"""Numerical calculus on samples: ``trapezoid`` / ``trapz``, ``cumulative_trapezoid`` and
``gradient`` (central differences inside, one-sided at the edges), composed of ember ops as ATen
composes them, so their graphs and grad_fn names are torch's.
"""

from __future__ import annotations

from ember import _dtype
from ember._tensor import Tensor, _wrap_dim
from ember.ops.joining import cat
from ember.ops.view_copies import rename_node


def _scalar_node(out: Tensor, name: str) -> Tensor:
    """ATen multiplies and divides by a C++ double here: torch's node for that overload."""
    rename_node(out, name)
    return out


def _slice(t: Tensor, dim: int, start=None, stop=None) -> Tensor:
    return t[(slice(None),) * dim + (slice(start, stop),)]


def _zeros_except(y: Tensor, dim: int) -> Tensor:
    from ember._creation import zeros

    shape = list(y.shape)
    del shape[dim]
    return zeros(shape, dtype=y.dtype)


def _no_bool(y: Tensor, name: str) -> None:
    if y.dtype is _dtype.bool_:
        raise RuntimeError(f"{name}: received a bool input for `y`, but bool is not supported")


def _spacing(y: Tensor, x: Tensor, dim: int, name: str) -> Tensor:
    """``diff(x)`` along ``dim``, shaped to broadcast against ``y``'s slices."""
    if x.ndim == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        shape = [1] * y.ndim
        shape[dim] = x.shape[0]
        x = x.view(shape)
    elif x.ndim < y.ndim:
        x = x.view((1,) * (y.ndim - x.ndim) + tuple(x.shape))
    return _slice(x, dim, 1) - _slice(x, dim, 0, -1)


def trapezoid(y: Tensor, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """The integral of the samples ``y`` along ``dim`` by the trapezoidal rule, at points
    ``x`` (a tensor) or spaced ``dx`` apart (default 1)."""
    d = _wrap_dim(dim, y.ndim)
    if isinstance(x, Tensor):
        if dx is not None:
            raise TypeError("trapezoid() received an invalid combination of arguments")
        if y.shape[d] == 0:
            return _zeros_except(y, d)
        if y.dtype is _dtype.bool_ or x.dtype is _dtype.bool_:
            raise RuntimeError("trapezoid: received a bool input for `x` or `y`, but bool is "
                               "not supported")
        step = _spacing(y, x, d, "trapezoid")
        return _scalar_node(((_slice(y, d, 0, -1) + _slice(y, d, 1)) * step).sum(d) / 2.0,
                            "DivBackward1")
    step = x if x is not None else (1 if dx is None else dx)
    if y.shape[d] == 0:
        return _zeros_except(y, d)
    _no_bool(y, "trapezoid")
    if isinstance(step, complex | bool):
        raise RuntimeError("trapezoid: Currently, we only support dx as a real number.")
    return _scalar_node((y.sum(d) - (y.select(d, 0) + y.select(d, -1)) * 0.5) * float(step),
                        "MulBackward1")


def trapz(y: Tensor, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """An alias of ``trapezoid``."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y: Tensor, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """The running trapezoidal integral of ``y`` along ``dim`` (one value per interval)."""
    d = _wrap_dim(dim, y.ndim)
    if isinstance(x, Tensor):
        if y.dtype is _dtype.bool_ or x.dtype is _dtype.bool_:
            raise RuntimeError("cumulative_trapezoid: received a bool input for `x` or `y`, but "
                               "bool is not supported")
        step = _spacing(y, x, d, "cumulative_trapezoid")
        return _scalar_node(((_slice(y, d, 0, -1) + _slice(y, d, 1)) * step).cumsum(d) / 2.0,
                            "DivBackward1")
    step = x if x is not None else (1 if dx is None else dx)
    _no_bool(y, "cumulative_trapezoid")
    return (float(step) / 2.0 * (_slice(y, d, 0, -1) + _slice(y, d, 1))).cumsum(d)


# --- gradient ------------------------------------------------------------------------------


def _gradient_dims(input: Tensor, spacing, dim, edge_order: int) -> tuple:
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    if dim is None:
        dims = list(range(input.ndim))
    elif isinstance(dim, int):
        dims = [dim]
    else:
        dims = list(dim)
    dims = [_wrap_dim(d, input.ndim) for d in dims]
    if len(set(dims)) != len(dims):
        raise RuntimeError("dim " + str(dims[0]) + " appears multiple times in the list of dims")
    if isinstance(spacing, list | tuple):
        if len(spacing) != len(dims):
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or "
                               f"it's spacing and dim arguments to have the same length, but "
                               f"got a spacing argument of length {len(spacing)} and a dim "
                               f"argument of length {len(dims)}.")
        steps = list(spacing)
    else:
        steps = [1 if spacing is None else spacing] * len(dims)
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")
    return dims, steps


def _uniform(f: Tensor, d: int, h, order: int) -> Tensor:
    center = (_slice(f, d, 2) - _slice(f, d, 0, -2)) / h
    if order == 1:
        first = (_slice(f, d, 1, 2) - _slice(f, d, 0, 1)) / h
        last = (_slice(f, d, -1) - _slice(f, d, -2, -1)) / h
    else:
        first = (-1.5 * _slice(f, d, 0, 1) + 2 * _slice(f, d, 1, 2)
                 - 0.5 * _slice(f, d, 2, 3)) / h
        last = (0.5 * _slice(f, d, -3, -2) - 2 * _slice(f, d, -2, -1)
                + 1.5 * _slice(f, d, -1)) / h
    return cat([first, center / 2, last], d)


def _coordinates(f: Tensor, d: int, coords: Tensor, order: int) -> Tensor:
    h = coords.diff()
    shape = [1] * f.ndim
    shape[d] = -1
    h1, h2 = h[:-1], h[1:]
    a = (-h2 / (h1 * (h1 + h2))).reshape(shape)
    b = ((h2 - h1) / (h1 * h2)).reshape(shape)
    c = (h1 / (h2 * (h1 + h2))).reshape(shape)
    center = a * _slice(f, d, 0, -2) + b * _slice(f, d, 1, -1) + c * _slice(f, d, 2)
    if order == 1:
        first = (_slice(f, d, 1, 2) - _slice(f, d, 0, 1)) / h[0]
        last = (_slice(f, d, -1) - _slice(f, d, -2, -1)) / h[-1]
    else:
        a = -(2.0 * h[0] + h[1]) / (h[0] * (h[0] + h[1]))
        b = (h[0] + h[1]) / (h[0] * h[1])
        c = -h[0] / (h[1] * (h[0] + h[1]))
        first = a * _slice(f, d, 0, 1) + b * _slice(f, d, 1, 2) + c * _slice(f, d, 2, 3)
        a = h[-1] / (h[-2] * (h[-1] + h[-2]))
        b = -(h[-1] + h[-2]) / (h[-1] * h[-2])
        c = (2 * h[-1] + h[-2]) / (h[-1] * (h[-1] + h[-2]))
        last = a * _slice(f, d, -3, -2) + b * _slice(f, d, -2, -1) + c * _slice(f, d, -1)
    return cat([first, center, last], d)


def gradient(input: Tensor, *, spacing=1, dim=None, edge_order: int = 1) -> tuple:
    """The derivative estimated along each of ``dim`` (all dims by default): second-order
    central differences inside, one-sided differences of order ``edge_order`` at the edges;
    ``spacing`` is a step (or one per dim) or the coordinates of the samples (tensors)."""
    dims, steps = _gradient_dims(input, spacing, dim, edge_order)
    out = []
    for d, h in zip(dims, steps):
        if isinstance(h, Tensor):
            if h.ndim != 1 or h.shape[0] != input.shape[d]:
                raise RuntimeError("torch.gradient expected each tensor to be on the same device "
                                   "and to have as many elements as the input's dimension")
            out.append(_coordinates(input, d, h, edge_order))
        else:
            out.append(_uniform(input, d, h, edge_order))
    return tuple(out)


FUNCTIONS = {"trapezoid": trapezoid, "trapz": trapz, "cumulative_trapezoid":
             cumulative_trapezoid, "gradient": gradient}
