"""Converters of the less common ops: cumulative sums, flips and rolls, triangles, sorting,
einsum, norms, integer-array indexing."""

from __future__ import annotations

import numpy as np

from ember.onnx._graph import Call, converts
from ember.onnx._ops import _reduce

_BIG = np.iinfo(np.int64).max


@converts("Cumsum")
def _cumsum(c):
    return c.node("CumSum", [c.x[0], c.const(c.kw["dim"], np.int64)])


@converts("Flip")
def _flip(c):
    dims = list(c.kw["dims"])
    return c.node("Slice", [c.x[0], c.ints([-1] * len(dims)), c.ints([-_BIG] * len(dims)),
                            c.ints(dims), c.ints([-1] * len(dims))])


@converts("Roll")
def _roll(c):
    x, shape = c.x[0], c.ins[0].shape
    shifts, dims = c.kw["shifts"], c.kw["dims"]
    if not dims:
        c.fail("a roll of the flattened tensor")
    for s, d in zip(shifts, dims):
        if d in c.dyn_in[0]:
            c.fail("rolling a dynamic dim")
        s %= shape[d]
        if s:
            cut = shape[d] - s
            a = c.node("Slice", [x, c.ints([cut]), c.ints([_BIG]), c.ints([d])])
            b = c.node("Slice", [x, c.ints([0]), c.ints([cut]), c.ints([d])])
            x = c.node("Concat", [a, b], axis=d)
    return x


@converts("Tril", "Triu")
def _triangle(c):
    upper = int(c.entry.name.startswith("Triu"))
    return c.node("Trilu", [c.x[0], c.const(c.kw.get("k", 0), np.int64)], upper=upper)


@converts("Topk")
def _topk(c):
    dim = c.kw["dim"] % c.ins[0].ndim
    return c.node("TopK", [c.x[0], c.ints([c.kw["k"]])], 2, axis=dim,
                  largest=int(c.kw.get("largest", True)), sorted=1)


@converts("Sort")
def _sort(c):
    dim = c.kw["dim"] % c.ins[0].ndim
    if dim in c.dyn_in[0]:
        c.fail("sorting along a dynamic dim")
    return c.node("TopK", [c.x[0], c.ints([c.ins[0].shape[dim]])], 2, axis=dim,
                  largest=int(c.kw.get("descending", False)), sorted=1)


@converts("EinsumPair")
def _einsum_pair(c):
    a, b = c.kw["subs"]
    return c.node("Einsum", c.x[:2], equation=f"{a},{b}->{c.kw['out']}")


@converts("LinalgVectorNorm")
def _vector_norm(c):
    ord_, dims, keep = c.kw["ord"], c.kw.get("dims"), c.kw.get("keepdim", False)
    if ord_ == 2:
        return _reduce(c, "ReduceL2", dims, keep)
    if ord_ == 1:
        return _reduce(c, "ReduceL1", dims, keep)
    if ord_ == float("inf"):
        return _reduce(c, "ReduceMax", dims, keep, c.node("Abs", c.x[:1]))
    c.fail(f"ord={ord_}")


@converts("Index")
def _index(c: Call):
    """``x[:, ..., idx]`` with one integer index array: a Gather."""
    steps, adv = c.kw["key"][:2]
    arrays = [i for i, k in enumerate(adv or ()) if isinstance(k, np.ndarray)]
    if steps or len(arrays) != 1 or any(k != slice(None) for i, k in enumerate(adv)
                                        if i != arrays[0]) or adv[arrays[0]].dtype == bool:
        c.fail("only indexing by one integer array exports")
    idx = adv[arrays[0]]
    return c.node("Gather", [c.x[0], c.g.value(idx)], axis=arrays[0])
