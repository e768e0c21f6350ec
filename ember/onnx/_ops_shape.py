"""Converters of the shape, indexing and joining ops.

A shape written into the graph (Reshape's target, Expand's) must not freeze a dynamic dim:
Reshape copies it (0) or infers it (-1); Expand leaves it at 1 (broadcast keeps the input's).
"""

from __future__ import annotations

import numpy as np

from ember.onnx._graph import Call, converts

_END = np.iinfo(np.int64).max


@converts("View")  # UnsafeView too
def _view(c: Call):
    x, y = c.ins[0], c.outs[0]
    target = list(y.shape)
    infer = []
    for d in sorted(c.dyn_out[0]):
        if d in c.dyn_in[0] and d < x.ndim and x.shape[d] == y.shape[d]:
            target[d] = 0  # copied from the input: same position, same dynamic size
        else:
            infer.append(d)
    if len(infer) > 1:
        return c.node("Reshape", [c.x[0], _symbolic_shape(c, target, infer)])
    for d in infer:
        target[d] = -1
    return c.node("Reshape", [c.x[0], c.ints(target)])


def _symbolic_shape(c: Call, target: list, dims: list) -> str:
    """The shape ``target`` with ``dims`` computed at run time."""
    pieces = [_symbolic_dim(c, d) if d in dims else c.ints([n]) for d, n in enumerate(target)]
    return c.node("Concat", pieces, axis=0)


def _symbolic_dim(c: Call, d: int) -> str:
    """The size of the output's dim ``d`` computed at run time from the dynamic symbols'
    sizes (``const * prod(symbol ** k)``, as the recordings showed), as a 1-element tensor."""
    exps = c.exps_out[0][d]
    if not exps:
        c.fail(f"dim {d} of the output {tuple(c.outs[0].shape)} does not follow the dynamic "
               "axes as a multiple of their sizes")
    size, piece = c.outs[0].shape[d], None
    for sym, k in exps.items():
        for _ in range(k):
            size //= c.g.sym_src[sym][2]
            s = c.g.symbol(sym)
            piece = s if piece is None else c.node("Mul", [piece, s])
    return piece if size == 1 else c.node("Mul", [piece, c.ints([size])])


@converts("Permute")
def _permute(c):
    nd = c.ins[0].ndim
    return c.node("Transpose", c.x[:1], perm=[d % nd for d in c.kw["dims"]])


@converts("Transpose")
def _transpose(c):
    nd = c.ins[0].ndim
    perm = list(range(nd))
    d0, d1 = c.kw.get("d0", 0) % max(nd, 1), c.kw.get("d1", 1) % max(nd, 1)
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return c.node("Transpose", c.x[:1], perm=perm)


@converts("T")
def _t(c):
    if c.ins[0].ndim < 2:
        return c.node("Identity", c.x[:1])
    return c.node("Transpose", c.x[:1], perm=[1, 0])


@converts("Unsqueeze")
def _unsqueeze(c):
    return c.node("Unsqueeze", [c.x[0], c.ints([c.kw.get("dim", 0) % c.outs[0].ndim])])


@converts("Squeeze")  # SqueezeDim, SqueezeDims
def _squeeze(c):
    x = c.ins[0]
    dims = c.kw.get("dims")
    dims = range(x.ndim) if dims is None else [d % max(x.ndim, 1) for d in dims]
    axes = [d for d in dims if x.ndim and x.shape[d] == 1 and d not in c.dyn_in[0]]
    if not axes:
        return c.node("Identity", c.x[:1])
    return c.node("Squeeze", [c.x[0], c.ints(axes)])


@converts("Expand")
def _expand(c):
    x, y = c.ins[0], c.outs[0]
    lead = y.ndim - x.ndim
    shape = list(y.shape)
    for d in c.dyn_out[0]:
        if d < lead or d - lead not in c.dyn_in[0]:
            c.fail("expanding a dim to a size that follows the dynamic axes")
        shape[d] = 1
    return c.node("Expand", [c.x[0], c.ints(shape)])


@converts("Repeat")
def _repeat(c):
    reps = list(c.kw["reps"])
    x = c.x[0]
    extra = len(reps) - c.ins[0].ndim
    if extra > 0:
        x = c.node("Unsqueeze", [x, c.ints(range(extra))])
    return c.node("Tile", [x, c.ints(reps)])


@converts("Select")
def _select(c):
    return c.node("Gather", [c.x[0], c.const(c.kw.get("index", 0), np.int64)],
                  axis=c.kw.get("dim", 0))


@converts("Slice")
def _slice(c):
    sl, dim = c.kw["sl"], c.kw.get("dim", 0)
    start = 0 if sl.start is None else sl.start
    ends = c.ints([_END if sl.stop is None else sl.stop])
    if dim in c.dyn_out[0] and dim not in c.dyn_in[0]:  # x[:n] with n an input's size
        if (sl.step or 1) != 1 or start < 0:
            c.fail("a strided slice whose length follows the dynamic axes")
        ends = c.node("Add", [_symbolic_dim(c, dim), c.ints([start])])
    return c.node("Slice", [c.x[0], c.ints([start]), ends, c.ints([dim]),
                            c.ints([sl.step or 1])])


@converts("Cat")
def _cat(c):
    skip = c.kw.get("skip") or (False,) * len(c.x)
    kept = [n for n, s in zip(c.x, skip) if not s]
    return c.node("Concat", kept, axis=c.kw.get("dim", 0))


@converts("Stack")
def _stack(c):
    dim = c.kw.get("dim", 0) % c.outs[0].ndim
    axes = c.ints([dim])
    return c.node("Concat", [c.node("Unsqueeze", [n, axes]) for n in c.x], axis=dim)


def _split(c: Call, sizes: list, dim: int) -> list:
    if dim in c.dyn_in[0]:
        c.fail("splitting along a dynamic axis")
    outs = c.node("Split", [c.x[0], c.ints(sizes)], len(sizes), axis=dim)
    return [outs] if len(sizes) == 1 else outs


@converts("SplitWithSizes")  # Split
def _split_with_sizes(c):
    dim = c.kw.get("dim", 0) % c.ins[0].ndim
    return _split(c, list(c.kw["sizes"]), dim)


@converts("Unbind")
def _unbind(c):
    dim = c.kw.get("dim", 0) % c.ins[0].ndim
    parts = _split(c, [1] * c.ins[0].shape[dim], dim)
    axes = c.ints([dim])
    return [c.node("Squeeze", [p, axes]) for p in parts]
