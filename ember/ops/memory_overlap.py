"""torch's memory-overlap rules for writes (ATen's MemoryOverlap.cpp).

An in-place op must not write an output in which several elements share memory (an expanded
tensor): "internal overlap". Its output must not partly overlap one of its inputs
(``y[1:].copy_(y[:3])``): the result would depend on the order the elements are visited in. A
full overlap (the same elements, the same strides: ``x.add_(x)``) is fine. As in torch, only
what is cheap to decide is refused: a tensor that is not dense is "too hard" and let through.
"""

from __future__ import annotations

import numpy as np

_INTERNAL = ("unsupported operation: more than one element of the written-to tensor refers to a "
             "single memory location. Please clone() the tensor before performing the operation.")
_PARTIAL = ("unsupported operation: some elements of the input tensor and the written-to tensor "
            "refer to a single memory location. Please clone() the tensor before performing the "
            "operation.")


def is_dense(a: np.ndarray) -> bool:
    """torch's is_non_overlapping_and_dense: the elements fill a block, in some dim order."""
    if a.flags.c_contiguous or a.flags.f_contiguous:
        return True
    dims = sorted((st, n) for n, st in zip(a.shape, a.strides) if n >= 2)
    need = a.itemsize
    for st, n in dims:
        if st != need:
            return False
        need *= n
    return True


def _span(a: np.ndarray) -> tuple:
    start = a.__array_interface__["data"][0]
    return start, start + a.size * a.itemsize


def has_internal_overlap(a: np.ndarray) -> bool:
    """Whether elements of ``a`` share memory (as torch decides it: a 0 stride, size > 1)."""
    return a.size > 1 and not is_dense(a) and any(
        st == 0 and n > 1 for n, st in zip(a.shape, a.strides))


def internal_overlap_error() -> RuntimeError:
    return RuntimeError(_INTERNAL)


def check_internal(a: np.ndarray) -> None:
    """Refuse writing into ``a`` when elements of it share memory."""
    if has_internal_overlap(a):
        raise RuntimeError(_INTERNAL)


def _status(out: np.ndarray, inp: np.ndarray) -> str:
    """'full', 'partial' or 'no' (also for what torch finds too hard to decide)."""
    if out is inp:
        return "full"
    if not out.size or not inp.size or (out.base is None and inp.base is None) or \
            not np.may_share_memory(out, inp):  # (two arrays that own their memory are apart)
        return "no"
    if not is_dense(out) or not is_dense(inp):
        return "no"
    (a0, a1), (b0, b1) = _span(out), _span(inp)
    if a0 == b0 and a1 == b1:
        return "full" if out.strides == inp.strides else "partial"  # (0-d vs [1]: partial)
    return "partial" if a0 < b1 and b0 < a1 else "no"


def check_partial(out: np.ndarray, *inputs) -> None:
    """Refuse a write into ``out`` that reads an input partly overlapping it (torch's
    assert_no_partial_overlap, done by every TensorIterator op)."""
    for inp in inputs:
        if isinstance(inp, np.ndarray) and _status(out, inp) == "partial":
            raise RuntimeError(_PARTIAL)


def check_none(out: np.ndarray, *inputs) -> None:
    """Refuse any overlap, full or partial (torch's assert_no_overlap: index_put_'s values)."""
    for inp in inputs:
        if isinstance(inp, np.ndarray) and _status(out, inp) != "no":
            raise RuntimeError(_PARTIAL)
