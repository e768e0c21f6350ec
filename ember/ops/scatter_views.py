"""The out-of-place writes through a view: ``diagonal_scatter``, ``select_scatter``,
``slice_scatter``, ``as_strided_scatter`` (a copy of ``input`` with ``src`` embedded where the
view would be), each one node with torch's formulas: the gradient of ``input`` is the incoming
gradient with that region zeroed, the gradient of ``src`` is the region itself.
"""

from __future__ import annotations

from ember._tensor import Tensor, _wrap_dim
from ember.autograd.function import Op


def _region(t: Tensor, kind: str, args: tuple) -> Tensor:
    """The view ``kind`` of ``t`` (a NumPy view underneath, writable when ``t`` is)."""
    if kind == "diagonal":
        return t.diagonal(*args)
    if kind == "select":
        return t.select(*args)
    if kind == "slice":
        dim, start, end, step = args
        return t[(slice(None),) * dim + (slice(start, end, step),)]
    return t.contiguous().as_strided(*args)


class _ScatterView(Op):
    kind = ""

    @classmethod
    def forward(cls, ctx, x, src, args=()):
        ctx.args, ctx.src_dtype = args, src.dtype
        out = x.copy()
        view = _region(Tensor._make(out), cls.kind, args)._data
        if view.shape != src.shape:
            raise RuntimeError(f"expected src to have a size equal to the slice of self. src "
                               f"size = {list(src.shape)}, slice size = {list(view.shape)}")
        view[...] = src
        return out

    @classmethod
    def backward(cls, ctx, g):
        need = ctx.needs_input_grad
        region = _region(g, cls.kind, ctx.args)
        gx = _OPS[cls.kind].apply(g, region.new_zeros(region.shape), args=ctx.args) \
            if need[0] else None
        gs = None
        if need[1]:
            from ember import _dtype

            gs = region.to(_dtype.from_numpy_dtype(ctx.src_dtype))
        return gx, gs


def _op(kind: str, node: str) -> type:
    return type(node.removesuffix("Backward0"), (_ScatterView,),
                {"kind": kind, "node_name": node, "__module__": __name__})


_OPS = {k: _op(k, n) for k, n in (
    ("diagonal", "DiagonalScatterBackward0"), ("select", "SelectScatterBackward0"),
    ("slice", "SliceScatterBackward0"), ("as_strided", "AsStridedScatterBackward0"))}


def _apply(kind: str, input: Tensor, src: Tensor, args: tuple) -> Tensor:
    for name, t in (("input", input), ("src", src)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{kind}_scatter(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    src = src if src.dtype is input.dtype else src.to(input.dtype)
    return _OPS[kind].apply(input, src, args=args)


def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0,
                     dim2: int = 1) -> Tensor:
    """``input`` with diagonal ``offset`` of dims (dim1, dim2) replaced by ``src``."""
    d1, d2 = _wrap_dim(dim1, input.ndim), _wrap_dim(dim2, input.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return _apply("diagonal", input, src, (int(offset), d1, d2))


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """``input`` with the slice at ``index`` along ``dim`` replaced by ``src``."""
    if not isinstance(index, int) or isinstance(index, bool):
        raise TypeError(f"select_scatter(): argument 'index' (position 4) must be int, not "
                        f"{type(index).__name__}")
    if input.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, input.ndim)
    size = input.shape[d]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(input.shape)} at dimension {d}")
    return _apply("select", input, src, (d, index % size))


def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None,
                  end: int | None = None, step: int = 1) -> Tensor:
    """``input`` with ``input[..., start:end:step, ...]`` (along ``dim``) replaced by ``src``."""
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    return _apply("slice", input, src, (_wrap_dim(dim, input.ndim), start, end, step))


def as_strided_scatter(input: Tensor, src: Tensor, size, stride,
                       storage_offset: int | None = None) -> Tensor:
    """``input`` with the elements of ``as_strided(size, stride, storage_offset)`` replaced by
    ``src``."""
    return _apply("as_strided", input.contiguous(), src,
                  (tuple(size), tuple(stride), storage_offset))


FUNCTIONS = {"diagonal_scatter": diagonal_scatter, "select_scatter": select_scatter,
             "slice_scatter": slice_scatter, "as_strided_scatter": as_strided_scatter}
METHODS = dict(FUNCTIONS)
