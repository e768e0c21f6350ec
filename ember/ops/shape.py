"""View ops: view, reshape, permute, transpose, squeeze, unsqueeze, expand, flatten, ...

Every op here returns a NumPy view of its input (``view = True``), so, as in torch, writes
through the result show in the base and the two share a version counter.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ember._backend import as_strided
from ember._layout import contiguous_format
from ember._tensor import Size, Tensor, _wrap_dim
from ember.autograd.function import Op
from ember.ops._complex_grad import holomorphic


def _shape_arg(shape) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], list | tuple | Size):
        shape = shape[0]
    for s in shape:
        if type(s) is not int:
            return tuple(int(s) for s in shape)
    return tuple(shape)


def infer_shape(shape: tuple, numel: int) -> tuple:
    """Resolve one -1 in ``shape``; torch's error when the sizes do not match."""
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s}")
            known *= s
    if -1 in shape:
        if known == 0:
            if numel == 0:
                raise RuntimeError(
                    f"cannot reshape tensor of 0 elements into shape {list(shape)} because the "
                    "unspecified dimension size -1 can be any value and is ambiguous")
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        if numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        return tuple(numel // known if s == -1 else s for s in shape)
    if known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


# --- view / reshape -------------------------------------------------------------------------


class View(Op):
    node_name = "ViewBackward0"
    view = True

    @staticmethod
    def forward(ctx, x, shape=None):
        ctx.shape = x.shape
        if x.flags.c_contiguous:
            return x.reshape(shape)  # always a view here, and cheaper than np.reshape
        try:
            return np.reshape(x, shape, copy=False)
        except ValueError:
            raise RuntimeError(
                "view size is not compatible with input tensor's size and stride (at least one "
                "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
            ) from None

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.shape)


class UnsafeView(View):
    node_name = "UnsafeViewBackward0"
    view = False


class Alias(Op):
    """``x[...]``: a new tensor over the same storage (torch's AliasBackward0)."""

    node_name = "AliasBackward0"
    view = True

    @staticmethod
    def forward(ctx, x):
        return x.view()

    @staticmethod
    def backward(ctx, g):
        return g


def view(x: Tensor, *shape) -> Tensor:
    """A view with a new shape (one -1 inferred); the strides must allow it, as in torch."""
    if len(shape) == 1 and not isinstance(shape[0], int | list | tuple | Size):
        return _view_dtype(x, shape[0])
    shape = infer_shape(_shape_arg(shape), x._data.size)
    return View.apply(x, shape=shape)


def _view_dtype(x: Tensor, dtype) -> Tensor:
    """``x.view(dtype)``: the same bytes read as another dtype (not differentiable)."""
    from ember import _dtype
    from ember._creation import legacy_name

    dt = _dtype.to_dtype(dtype)
    a = x._data
    if dt.np.itemsize != a.itemsize:
        what = f"to view {legacy_name(x.dtype)} as {legacy_name(dt)} (different element sizes)"
        if a.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 {what}")
        if a.strides[-1] != a.itemsize and a.shape[-1] != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got "
                               f"{a.strides[-1] // a.itemsize}")
        ratio = max(dt.np.itemsize, a.itemsize) // min(dt.np.itemsize, a.itemsize)
        if dt.np.itemsize > a.itemsize and a.shape[-1] % ratio:
            raise RuntimeError(f"self.size(-1) must be divisible by {ratio} {what}, but got "
                               f"{a.shape[-1]}")
    out = Tensor._make(a.view(dt.np))
    out._set_view_of(x)
    out._vv = None  # not differentiable
    return out


def reshape(x: Tensor, *shape) -> Tensor:
    """A view when the strides allow it, else a copy (CloneBackward0 + UnsafeViewBackward0)."""
    shape = infer_shape(_shape_arg(shape), x._data.size)
    if shape == x._data.shape:
        return View.apply(x, shape=shape) if x._rg else x._alias()
    try:
        np.reshape(x._data, shape, copy=False)
    except ValueError:
        from ember.ops.pointwise import Clone

        return UnsafeView.apply(Clone.apply(x, memory_format=contiguous_format), shape=shape)
    return View.apply(x, shape=shape)


def view_as(x: Tensor, other: Tensor) -> Tensor:
    """``x.view(other.shape)``."""
    return view(x, other.shape)


def reshape_as(x: Tensor, other: Tensor) -> Tensor:
    """``x.reshape(other.shape)``."""
    return reshape(x, other.shape)


def flatten(x: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims ``start_dim..end_dim`` into one (a view when possible)."""
    if x.ndim == 0:
        return reshape(x, (1,))
    s, e = _wrap_dim(start_dim, x.ndim), _wrap_dim(end_dim, x.ndim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return x
    shp = x.shape
    n = math.prod(shp[s:e + 1])  # not -1: it is ambiguous in an empty tensor
    return reshape(x, (*shp[:s], n, *shp[e + 1:]))


def unflatten(x: Tensor, dim: int, sizes) -> Tensor:
    """Split dim ``dim`` into ``sizes`` (one may be -1): a view."""
    if x.ndim == 0:
        raise RuntimeError(f"unflatten got an unexpected error:\nDimension specified as {dim} but "
                           "tensor has no dimensions")
    d = _wrap_dim(dim, x.ndim)
    shp = x.shape
    sizes = tuple(int(s) for s in sizes)
    try:
        sizes = infer_shape(sizes, shp[d])
    except RuntimeError:
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the "
                           f"size of dim {dim} ({shp[d]}) in the input tensor") from None
    return view(x, (*shp[:d], *sizes, *shp[d + 1:]))


# --- permutations ---------------------------------------------------------------------------


class Permute(Op):
    node_name = "PermuteBackward0"
    view = True

    @staticmethod
    def forward(ctx, x, dims=None):
        ctx.dims = dims
        return np.transpose(x, dims)

    @staticmethod
    def backward(ctx, g):
        return g.permute(tuple(int(i) for i in np.argsort(ctx.dims)))


def permute(x: Tensor, *dims) -> Tensor:
    """A view with the dims reordered."""
    dims = _shape_arg(dims)
    if len(dims) != x.ndim:
        raise RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the "
            f"length of the desired ordering of dimensions i.e. input.dim() = {x.ndim} is not "
            f"equal to len(dims) = {len(dims)}")
    dims = tuple(_wrap_dim(d, x.ndim) for d in dims)
    if len(set(dims)) != len(dims):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return Permute.apply(x, dims=dims)


def movedim(x: Tensor, source, destination) -> Tensor:
    """A view with dims ``source`` moved to ``destination`` (ints or sequences)."""
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({list(src)} dims) should "
            f"contain the same number of dims as destination ({list(dst)} dims)")
    n = x.ndim
    src = tuple(_wrap_dim(d, n) for d in src)
    dst = tuple(_wrap_dim(d, n) for d in dst)
    if n == 0:
        return Permute.apply(x, dims=())
    if len(set(src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(source)})")
    if len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({list(destination)})")
    order = [d for d in range(n) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return Permute.apply(x, dims=tuple(order))


class Transpose(Op):
    node_name = "TransposeBackward0"
    view = True

    @staticmethod
    def forward(ctx, x, d0=0, d1=1):
        ctx.d0, ctx.d1 = d0, d1
        return np.swapaxes(x, d0, d1) if x.ndim else x.view()  # 0-d: dims 0 and -1 are fine

    @staticmethod
    def backward(ctx, g):
        return g.transpose(ctx.d0, ctx.d1)


class T(Op):
    node_name = "TBackward0"
    view = True

    @staticmethod
    def forward(ctx, x):
        return x.T

    @staticmethod
    def backward(ctx, g):
        return g.t()


def transpose(x: Tensor, dim0: int, dim1: int) -> Tensor:
    """A view with ``dim0`` and ``dim1`` swapped."""
    n = x.ndim
    return Transpose.apply(x, d0=_wrap_dim(dim0, n), d1=_wrap_dim(dim1, n))


def t(x: Tensor) -> Tensor:
    """Transpose a tensor of at most 2 dims (a view)."""
    if x.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    return T.apply(x)


def _T(x: Tensor) -> Tensor:
    if x.ndim == 0:
        warnings.warn("Tensor.T is deprecated on 0-D tensors. This function is the identity in "
                      "these cases.", UserWarning, stacklevel=2)
    elif x.ndim != 2:
        warnings.warn(
            "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is "
            "deprecated and it will throw an error in a future release. Consider `x.mT` to "
            "transpose batches of matrices or `x.permute(*torch.arange(x.ndim - 1, -1, -1))` to "
            "reverse the dimensions of a tensor.", UserWarning, stacklevel=2)
    return permute(x, tuple(range(x.ndim - 1, -1, -1)))


def _matrix_transpose(x: Tensor, name: str, hint: str, batched: bool) -> Tensor:
    """``x.mT`` / ``x.H`` / ``x.mH`` (real tensors: conjugating is a no-op): the last two dims
    swapped; ``batched`` allows leading batch dims. A 0-d tensor is returned with torch's
    deprecation warning, which points at the caller of the property."""
    if x.ndim == 0:
        warnings.warn(f"Tensor.{name} is deprecated on 0-D tensors. {hint}", UserWarning,
                      stacklevel=3)
        return x
    if batched and x.ndim < 2:
        raise RuntimeError(f"tensor.{name} is only supported on matrices or batches of "
                           f"matrices. Got {x.ndim}-D tensor.")
    if not batched and x.ndim != 2:
        raise RuntimeError(f"tensor.{name} is only supported on matrices (2-D tensors). Got "
                           f"{x.ndim}-D tensor.")
    return transpose(x, -2, -1)


def _mT(x: Tensor) -> Tensor:
    return _matrix_transpose(x, "mT", "This function is the identity in these cases.", True)


def _H(x: Tensor) -> Tensor:
    return _matrix_transpose(x, "H", "Consider using x.conj().", False).conj()


def _mH(x: Tensor) -> Tensor:
    return _matrix_transpose(x, "mH", "Consider using x.conj().", True).conj()


# --- squeeze / unsqueeze --------------------------------------------------------------------


class Unsqueeze(Op):
    node_name = "UnsqueezeBackward0"
    view = True

    @staticmethod
    def forward(ctx, x, dim=0):
        ctx.dim = dim
        return np.expand_dims(x, dim)

    @staticmethod
    def backward(ctx, g):
        return g.squeeze(ctx.dim)


def unsqueeze(x: Tensor, dim: int) -> Tensor:
    """A view with a size-1 dim inserted at ``dim``."""
    return Unsqueeze.apply(x, dim=_wrap_dim(dim, x.ndim + 1))


class Squeeze(Op):
    node_name = "SqueezeBackward0"
    view = True

    @staticmethod
    def forward(ctx, x, dims=None):
        ctx.shape = x.shape
        return np.squeeze(x, axis=dims)

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.shape)


class SqueezeDim(Squeeze):
    node_name = "SqueezeBackward1"


class SqueezeDims(Squeeze):
    node_name = "SqueezeBackward2"


def squeeze(x: Tensor, dim=None) -> Tensor:
    """A view without size-1 dims (all, one ``dim``, or a tuple of dims)."""
    if dim is None:
        return Squeeze.apply(x, dims=None)
    op = SqueezeDim if isinstance(dim, int) else SqueezeDims
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    dims = tuple(_wrap_dim(d, x.ndim) for d in dims)
    if x.ndim == 0:
        return op.apply(x, dims=())
    return op.apply(x, dims=tuple(d for d in dims if x._data.shape[d] == 1))


# --- broadcasting ---------------------------------------------------------------------------


class Expand(Op):
    node_name = "ExpandBackward0"
    view = True

    @staticmethod
    def forward(ctx, x, shape=None):
        ctx.shape = x.shape
        # Writeable, unlike np.broadcast_to: torch lets fill_, index_put_, masked_fill_ write
        # an expanded tensor; the ops that must not refuse it (ember/ops/memory_overlap.py).
        lead = len(shape) - x.ndim
        strides = (0,) * lead + tuple(0 if n == 1 and m != 1 else st for n, m, st in
                                      zip(x.shape, shape[lead:], x.strides))
        return as_strided(x, shape, strides, writeable=True)

    @staticmethod
    def backward(ctx, g):
        return sum_to_size(g, ctx.shape)


def expand(x: Tensor, *sizes) -> Tensor:
    """A broadcast view with ``sizes`` (-1 keeps a dim); no data is copied."""
    sizes = _shape_arg(sizes)
    lead = len(sizes) - x.ndim
    if lead < 0:
        raise RuntimeError(
            f"expand({x.type()}{{{list(x.shape)}}}, size={list(sizes)}): the number of sizes "
            f"provided ({len(sizes)}) must be greater or equal to the number of dimensions in "
            f"the tensor ({x.ndim})")
    shape = []
    for i, s in enumerate(sizes):
        cur = x._data.shape[i - lead] if i >= lead else 1
        if s == -1:
            if i < lead:
                raise RuntimeError(f"expand: the expanded size of the tensor (-1) isn't allowed "
                                   f"in a leading, non-existing dimension {i}")
            s = cur
        elif cur != 1 and cur != s:
            raise RuntimeError(
                f"The expanded size of the tensor ({s}) must match the existing size ({cur}) at "
                f"non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
                f"{list(x.shape)}")
        shape.append(s)
    shape = tuple(shape)
    if shape == x._data.shape and not x._rg:
        return x._alias()
    return Expand.apply(x, shape=shape)


def expand_as(x: Tensor, other: Tensor) -> Tensor:
    """``x.expand(other.shape)``."""
    return expand(x, other.shape)


def broadcast_shapes(*shapes) -> Size:
    """The shape all ``shapes`` broadcast to (torch's error when they do not)."""
    out: list = []
    for shp in shapes:
        shp = (shp,) if isinstance(shp, int) else tuple(shp)
        if len(shp) > len(out):
            out = [1] * (len(shp) - len(out)) + out
        for i in range(1, len(shp) + 1):
            a, b = out[-i], shp[-i]
            if a != b and a != 1 and b != 1:
                raise RuntimeError(f"The size of tensor a ({a}) must match the size of tensor b "
                                   f"({b}) at non-singleton dimension {len(out) - i}")
            if a == 1:
                out[-i] = b
    return Size(out)


def broadcast_to(x: Tensor, size) -> Tensor:
    """``x.expand(size)``."""
    return expand(x, tuple(size))


def broadcast_tensors(*tensors) -> tuple:
    """Expand all tensors to their common broadcast shape (views)."""
    if len(tensors) == 1 and isinstance(tensors[0], list | tuple):
        tensors = tuple(tensors[0])
    shape = tuple(broadcast_shapes(*(t._data.shape for t in tensors)))
    # as torch: a tensor already of the common shape comes back itself, not a view
    return tuple(t if t._data.shape == shape else Expand.apply(t, shape=shape)
                 for t in tensors)


def sum_to_size(g: Tensor, *shape) -> Tensor:
    """Sum ``g`` down to ``shape`` (the inverse of broadcasting)."""
    shape = _shape_arg(shape)
    lead = g.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(
        lead + k for k, s in enumerate(shape) if s == 1 and g._data.shape[lead + k] != 1)
    if dims:
        g = g.sum(dims, keepdim=True)
    return g.reshape(shape) if lead else g


def contiguous(x: Tensor, memory_format=None) -> Tensor:
    """``x`` itself if C-contiguous, else a contiguous copy (CloneBackward0)."""
    from ember.ops.pointwise import clone

    if memory_format is not None:
        from ember import _layout

        _layout.check_format(memory_format, "contiguous")
        if memory_format is not _layout.contiguous_format:
            if memory_format is not _layout.preserve_format:
                _layout.channels_last_rank(memory_format, x.ndim)
            if x.is_contiguous(memory_format):
                return x
            if memory_format is _layout.preserve_format:
                raise RuntimeError("preserve memory format is unsupported by the contiguous "
                                   "operator")
            return clone(x, memory_format=memory_format)
    if x._data.flags.c_contiguous:
        return x
    from ember.ops.pointwise import Clone

    return Clone.apply(x, memory_format=contiguous_format)


# Complex gradients are these formulas conjugated (ember/ops/_complex_grad.py).
holomorphic(View, Alias, Permute, Transpose, T, Unsqueeze, Squeeze, Expand)

METHODS = {
    "view": view, "reshape": reshape, "view_as": view_as, "reshape_as": reshape_as,
    "flatten": flatten, "unflatten": unflatten, "permute": permute, "transpose": transpose,
    "swapaxes": transpose, "swapdims": transpose, "t": t, "unsqueeze": unsqueeze,
    "squeeze": squeeze, "expand": expand, "expand_as": expand_as, "sum_to_size": sum_to_size,
    "broadcast_to": broadcast_to, "movedim": movedim, "moveaxis": movedim,
    "contiguous": contiguous,
    "T": property(_T), "mT": property(_mT), "H": property(_H), "mH": property(_mH),
}
FUNCTIONS = {
    "reshape": reshape, "flatten": flatten, "unflatten": unflatten, "permute": permute,
    "transpose": transpose, "swapaxes": transpose, "swapdims": transpose, "t": t,
    "unsqueeze": unsqueeze, "squeeze": squeeze, "broadcast_to": broadcast_to,
    "broadcast_tensors": broadcast_tensors, "broadcast_shapes": broadcast_shapes,
    "movedim": movedim, "moveaxis": movedim,
}
