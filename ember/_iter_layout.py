"""The memory layout torch gives a new result: TensorIterator's dimension order.

torch allocates the output of an iterator op (elementwise ops, advanced indexing, ...) in the
order of its operands' strides, so that a result of a transposed input is laid out like it.
Strides are user-visible (``stride()``, ``is_contiguous()``, whether ``view`` works), so ops whose
NumPy result is laid out differently lay it out this way.
"""

from __future__ import annotations

import numpy as np


def broadcast_strides(shape: tuple, shp: tuple, strides: tuple) -> tuple:
    """An operand's element strides in the iterator's ``shape`` (0 where it is broadcast)."""
    lead = len(shape) - len(shp)
    return (0,) * lead + tuple(0 if n == 1 and m != 1 else st
                               for n, m, st in zip(shp, shape[lead:], strides))


def iterator_order(shape: tuple, operands: list) -> list:
    """TensorIterator's reorder_dimensions: the dims from fastest to slowest varying, for
    operands given as (shape, element strides) in the order torch adds them."""
    ops = [broadcast_strides(shape, shp, st) for shp, st in operands]

    def should_swap(d0: int, d1: int) -> int:
        for st in ops:
            s0, s1 = st[d0], st[d1]
            if s0 == 0 or s1 == 0:  # broadcast in one of them: the next operand decides
                continue
            if s0 != s1:
                return -1 if s0 < s1 else 1
            if shape[d0] > shape[d1]:  # equal strides: the smaller dim goes first
                return 1
        return 0

    perm = list(range(len(shape) - 1, -1, -1))
    for i in range(1, len(shape)):  # insertion sort that tolerates ambiguous comparisons
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    return perm


def laid_out(a: np.ndarray, order: list) -> np.ndarray:
    """``a``'s values in a new array whose dims vary fastest to slowest in ``order`` (``a``
    itself if it already is C-ordered and so is ``order``)."""
    slow_first = order[::-1]
    if slow_first == sorted(slow_first) and a.flags.c_contiguous:
        return a
    buf = np.empty([a.shape[d] for d in slow_first], dtype=a.dtype)
    out = buf.transpose(np.argsort(slow_first))
    out[...] = a
    return out


def element_strides(a: np.ndarray) -> tuple:
    return tuple(s // a.itemsize for s in a.strides)


def iterator_layout(out, arrays) -> np.ndarray:
    """``out``, an elementwise result of ``arrays``, laid out in TensorIterator's order where an
    operand is not C-contiguous (NumPy orders the dims of a broadcast, permuted operand
    differently; the layout decides whether a later ``view`` or ``flatten`` aliases it)."""
    for a in arrays:  # (a loop, not all(): this runs for every broadcasting op)
        flags = getattr(a, "flags", None)
        if flags is None:
            return out
        if not flags.c_contiguous:
            break
    else:
        return out
    if getattr(out, "flags", None) is None or out.ndim < 2 or \
            any(getattr(a, "flags", None) is None for a in arrays):
        return out
    try:  # only a result that is the operands broadcast (not, say, a matrix product)
        if np.broadcast_shapes(*(a.shape for a in arrays)) != out.shape:
            return out
    except ValueError:
        return out
    order = iterator_order(out.shape, [(a.shape, element_strides(a)) for a in arrays if a.ndim])
    if iterator_order(out.shape, [(out.shape, element_strides(out))]) == order:
        return out
    return laid_out(out, order)
