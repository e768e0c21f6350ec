"""Shape ops that copy: repeat, tile, repeat_interleave, flip, roll, tril/triu, diag, trace."""

from __future__ import annotations

import numpy as np

from ember._tensor import Size, Tensor, _wrap_dim
from ember.autograd.function import Op
from ember.ops._complex_grad import holomorphic
from ember.ops.shape_strided import DiagonalGrad, _diag_view


def _sizes(sizes) -> tuple:
    if len(sizes) == 1 and isinstance(sizes[0], list | tuple | Size):
        sizes = sizes[0]
    return tuple(int(s) for s in sizes)


class Repeat(Op):
    node_name = "RepeatBackward0"

    @staticmethod
    def forward(ctx, x, reps=()):
        ctx.shape, ctx.reps = x.shape, reps
        return np.tile(x, reps)

    @staticmethod
    def backward(ctx, g):
        lead = len(ctx.reps) - len(ctx.shape)
        shape = (1,) * lead + tuple(ctx.shape)
        inter = tuple(v for r, s in zip(ctx.reps, shape) for v in (r, s))
        return g.reshape(inter).sum(tuple(range(0, len(inter), 2))).reshape(ctx.shape)


def repeat(x: Tensor, *sizes) -> Tensor:
    """Tile ``x`` ``sizes`` times along each dim (leading dims added as needed)."""
    reps = _sizes(sizes)
    if len(reps) < x.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    if any(r < 0 for r in reps):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(reps)}: "
                           f"{list(reps)}")
    return Repeat.apply(x, reps=reps)


def tile(x: Tensor, dims) -> Tensor:
    """``repeat`` with ``dims`` padded with leading 1s to ``x.ndim``."""
    dims = _sizes((dims,) if isinstance(dims, int) else tuple(dims))
    return repeat(x, (1,) * (x.ndim - len(dims)) + dims)


def repeat_interleave(x: Tensor, repeats=None, dim: int | None = None, *,
                      output_size: int | None = None) -> Tensor:
    """Repeat each element ``repeats`` times (an int, or one count per element along dim)."""
    if repeats is None:  # torch.repeat_interleave(counts): indices repeated by their count
        counts = x._data.astype(np.int64)
        return Tensor._make(np.repeat(np.arange(counts.size, dtype=np.int64), counts))
    if dim is None:
        x, d = x.reshape(-1), 0
    else:
        d = _wrap_dim(dim, x.ndim)
    n = x._data.shape[d]
    if isinstance(repeats, Tensor):
        counts = repeats._data.astype(np.int64)
        if counts.size == 1:
            counts = np.broadcast_to(counts.reshape(-1), (n,))
        if counts.ndim != 1 or counts.size != n:
            raise RuntimeError("repeats must have the same size as input along dim, but got "
                               f"repeats.size(0) = {counts.size} and input.size({d}) = {n}")
        if (counts < 0).any():
            raise RuntimeError("repeats can not be negative")
        idx = Tensor._make(np.repeat(np.arange(n, dtype=np.int64), counts))
        return x.index_select(d, idx)
    r = int(repeats)
    if r < 0:
        raise RuntimeError("repeats can not be negative")
    shape = list(x.shape)
    exp = x.unsqueeze(d + 1).expand(*shape[:d + 1], r, *shape[d + 1:])
    shape[d] *= r
    from ember.ops.pointwise import clone

    return clone(exp).view(shape)  # torch's node chain: Unsqueeze, Expand, Clone, View


class Flip(Op):
    node_name = "FlipBackward0"

    @staticmethod
    def forward(ctx, x, dims=()):
        ctx.dims = dims
        # torch's flip copies (writes must not reach the input), laid out like the input
        return np.flip(x, dims).copy(order="K")

    @staticmethod
    def backward(ctx, g):
        return Flip.apply(g, dims=ctx.dims)


def flip(x: Tensor, *dims) -> Tensor:
    """A copy with the order of elements reversed along ``dims``."""
    dims = _sizes(dims)
    dims = tuple(_wrap_dim(d, x.ndim) for d in dims)
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"dim {dims[0]} appears multiple times in the list of dims")
    return Flip.apply(x, dims=dims) if x.ndim else Flip.apply(x, dims=())


def fliplr(x: Tensor) -> Tensor:
    """``flip(x, 1)``."""
    if x.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(x, 1)


def flipud(x: Tensor) -> Tensor:
    """``flip(x, 0)``."""
    if x.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(x, 0)


class Roll(Op):
    node_name = "RollBackward0"

    @staticmethod
    def forward(ctx, x, shifts=(), dims=()):
        ctx.shifts, ctx.dims = shifts, dims
        if not dims:
            return np.roll(x.reshape(-1), shifts[0]).reshape(x.shape)
        return np.roll(x, shifts, dims)

    @staticmethod
    def backward(ctx, g):
        return Roll.apply(g, shifts=tuple(-s for s in ctx.shifts), dims=ctx.dims)


def roll(x: Tensor, shifts, dims=None) -> Tensor:
    """Shift elements cyclically along ``dims`` (the flattened tensor if None)."""
    shifts = (shifts,) if isinstance(shifts, int) else tuple(int(s) for s in shifts)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                               "dims:0")
        return Roll.apply(x, shifts=shifts, dims=())
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if x.ndim == 0 and dims:
        raise IndexError(f"Dimension specified as {dims[0]} but tensor has no dimensions")
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                           f"dims:{len(dims)}")
    return Roll.apply(x, shifts=shifts, dims=tuple(_wrap_dim(d, x.ndim) for d in dims))


class Rot90(Op):
    node_name = "Rot90Backward0"

    @staticmethod
    def forward(ctx, x, k=1, dims=(0, 1)):
        ctx.k, ctx.dims = k, dims
        return np.rot90(x, k, dims).copy()

    @staticmethod
    def backward(ctx, g):
        return Rot90.apply(g, k=-ctx.k, dims=ctx.dims)


def rot90(x: Tensor, k: int = 1, dims=(0, 1)) -> Tensor:
    """Rotate by 90 degrees ``k`` times in the plane of ``dims``."""
    dims = tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if x.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {x.ndim}")
    d0, d1 = (_wrap_dim(d, x.ndim) for d in dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    return Rot90.apply(x, k=int(k) % 4, dims=(d0, d1))


class Tril(Op):
    """Keep one triangle of the last two dims (``Triu``: the other), zeroing the rest; the
    gradient is masked the same way."""

    node_name = "TrilBackward0"
    fn = staticmethod(np.tril)

    @classmethod
    def forward(cls, ctx, x, k=0):
        ctx.k = k
        return cls.fn(x, k)

    @classmethod
    def backward(cls, ctx, g):
        return cls.apply(g, k=ctx.k)


class Triu(Tril):
    node_name = "TriuBackward0"
    fn = staticmethod(np.triu)


def tril(x: Tensor, diagonal: int = 0) -> Tensor:
    """Zero the elements above diagonal ``diagonal`` of the last two dims."""
    if x.ndim < 2:
        raise RuntimeError("tril: input tensor must have at least 2 dimensions")
    return Tril.apply(x, k=int(diagonal))


def triu(x: Tensor, diagonal: int = 0) -> Tensor:
    """Zero the elements below diagonal ``diagonal`` of the last two dims."""
    if x.ndim < 2:
        raise RuntimeError("triu: input tensor must have at least 2 dimensions")
    return Triu.apply(x, k=int(diagonal))


class DiagEmbed(Op):
    """Put the last dim of ``x`` on a diagonal of a new zero matrix (dims d1, d2)."""

    node_name = "DiagEmbedBackward0"

    @staticmethod
    def forward(ctx, x, offset=0, d1=0, d2=1):
        ctx.args = (offset, d1, d2)
        n = x.shape[-1] + abs(offset)
        shape = list(x.shape[:-1])
        for d in sorted((d1, d2)):
            shape.insert(d, n)
        out = np.zeros(shape, x.dtype, like=x)
        _diag_view(out, offset, d1, d2)[...] = x
        return out

    @staticmethod
    def backward(ctx, g):
        return g.diagonal(*ctx.args)


class DiagonalCopy(Op):
    node_name = "DiagonalBackward0_copy"

    @staticmethod
    def forward(ctx, x, offset=0):
        ctx.shape, ctx.offset = x.shape, offset
        return _diag_view(x, offset, 0, 1).copy()

    @staticmethod
    def backward(ctx, g):
        return DiagonalGrad.apply(g, shape=ctx.shape, args=(ctx.offset, 0, 1))


def diag_embed(x: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Matrices with the last dim of ``x`` on diagonal ``offset`` of dims (dim1, dim2)."""
    n = x.ndim + 1
    d1, d2 = _wrap_dim(dim1, n), _wrap_dim(dim2, n)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return DiagEmbed.apply(x, offset=int(offset), d1=d1, d2=d2)


def diag(x: Tensor, diagonal: int = 0) -> Tensor:
    """1-D: a matrix with ``x`` on a diagonal; 2-D: that diagonal, as a copy."""
    if x.ndim == 1:
        return DiagEmbed.apply(x, offset=int(diagonal), d1=0, d2=1)
    if x.ndim == 2:
        return DiagonalCopy.apply(x, offset=int(diagonal))
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {x.ndim}D")


class Trace(Op):
    node_name = "TraceBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.shape = x.shape
        return np.trace(x, dtype=np.int64 if x.dtype.kind in "biu" else x.dtype)

    @staticmethod
    def backward(ctx, g):
        k = min(ctx.shape)
        return DiagonalGrad.apply(g.expand(k), shape=ctx.shape, args=(0, 0, 1))


def trace(x: Tensor) -> Tensor:
    """Sum of the main diagonal of a matrix."""
    if x.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {x.ndim}")
    return Trace.apply(x)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None,
                 layout=None) -> Tensor:
    """The (2, N) coordinates of the lower triangle of a row x col matrix, row-major."""
    return _tri_indices(np.tril_indices(row, offset, col), dtype)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None,
                 layout=None) -> Tensor:
    """The (2, N) coordinates of the upper triangle of a row x col matrix, row-major."""
    return _tri_indices(np.triu_indices(row, offset, col), dtype)


def _tri_indices(idx: tuple, dtype) -> Tensor:
    from ember import _dtype

    dt = _dtype.to_dtype(dtype) if dtype is not None else _dtype.int64
    return Tensor._make(np.stack(idx).astype(dt.np).reshape(2, -1))


class BlockDiag(Op):
    node_name = "BlockDiagBackward0"

    @staticmethod
    def forward(ctx, *arrays):
        ctx.shapes = [a.shape for a in arrays]
        mats = [a.reshape(1, -1) if a.ndim < 2 else a for a in arrays]
        out = np.zeros((sum(m.shape[0] for m in mats), sum(m.shape[1] for m in mats)),
                       arrays[0].dtype, like=arrays[0])
        r = c = 0
        for m in mats:
            out[r:r + m.shape[0], c:c + m.shape[1]] = m
            r, c = r + m.shape[0], c + m.shape[1]
        return out

    @staticmethod
    def backward(ctx, g):
        out, r, c = [], 0, 0
        for shape, need in zip(ctx.shapes, ctx.needs_input_grad):
            h, w = shape if len(shape) == 2 else (1, int(np.prod(shape)))
            out.append(g[r:r + h, c:c + w].reshape(shape) if need else None)
            r, c = r + h, c + w
        return tuple(out)


def block_diag(*tensors) -> Tensor:
    """A block-diagonal matrix of 0-, 1- and 2-D tensors (1-D ones as rows)."""
    from ember import _dtype
    from ember.ops._promote import cast

    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. "
                               f"Input {i} has {t.ndim} dimensions")
    if not tensors:
        return Tensor._make(np.zeros((1, 0), _dtype.get_default_dtype().np))
    dt = tensors[0].dtype
    for t in tensors[1:]:
        dt = _dtype.promote_types(dt, t.dtype)
    return BlockDiag.apply(*[cast(t, dt) for t in tensors])


def cartesian_prod(*tensors) -> Tensor:
    """All combinations of the elements of 1-D tensors, one per row."""
    from ember.ops.joining import meshgrid, stack

    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    return stack([g.flatten() for g in meshgrid(*tensors, indexing="ij")], 1)


# Complex gradients are these formulas conjugated (ember/ops/_complex_grad.py).
holomorphic(Repeat, Flip, Roll, Tril, Trace)

METHODS = {
    "repeat": repeat, "tile": tile, "repeat_interleave": repeat_interleave, "flip": flip,
    "fliplr": fliplr, "flipud": flipud, "roll": roll, "tril": tril, "triu": triu,
    "diag": diag, "diag_embed": diag_embed, "trace": trace, "rot90": rot90,
}
FUNCTIONS = dict(METHODS, tril_indices=tril_indices, triu_indices=triu_indices,
                 block_diag=block_diag, cartesian_prod=cartesian_prod)
