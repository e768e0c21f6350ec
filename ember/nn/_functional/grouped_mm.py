"""F.grouped_mm: matrix products over groups of rows, columns or batches (mixture-of-experts
layers); the layouts and the gradients are in ember/ops/grouped_mm.py. The checks are torch's
CPU ones, its kernels' layout rule (a stride of 1 and the other a multiple of 16 bytes) too."""

from __future__ import annotations

from ember import _dtype
from ember._tensor import Tensor
from ember.autograd._grad_dtype import _META
from ember.ops.grouped_mm import grouped
from ember.ops.pointwise_more import _CNAME

_KINDS = (_dtype.float32, _dtype.bfloat16, _dtype.float16)


def _check_layout(m: Tensor) -> None:
    """torch's rule for a grouped-GEMM operand: row- or column-major in its last two dims,
    the other stride a multiple of 16 bytes."""
    align = 16 // m.element_size()
    strides, sizes = m.stride(), m.shape
    if strides[-2] == 1 and strides[-1] >= max(1, sizes[-2]):
        lead = strides[-1]
    elif strides[-1] == 1 and strides[-2] >= max(1, sizes[-1]):
        lead = strides[-2]
    else:
        raise RuntimeError(f"Invalid strides/sizes, got {list(strides)} for strides and "
                           f"{list(sizes)} for sizes")
    if lead % align:
        raise RuntimeError("strides should be multiple of 16 bytes")


def _check(mat_a: Tensor, mat_b: Tensor, offs: Tensor | None, bias, out_dtype) -> None:
    for name, m in (("mat_a", mat_a), ("mat_b", mat_b)):
        if m.dtype not in _KINDS:
            raise RuntimeError(f"Expected {name} to be Float32, BFloat16 or Float16 matrix, got "
                               f"{_CNAME.get(m.dtype.name, m.dtype.name)}")
    for name, m in (("mat_a", mat_a), ("mat_b", mat_b)):
        if m.ndim not in (2, 3):
            raise RuntimeError(f"{name} has to be 2 or 3d")
    if mat_a.shape[-1] != mat_b.shape[-2]:
        raise RuntimeError("contraction dimension of mat_a and mat_b must match")
    if mat_a.dtype != mat_b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_META[mat_a.dtype.name]} != {_META[mat_b.dtype.name]}")
    _check_layout(mat_a)
    _check_layout(mat_b)
    if (offs is not None) != (mat_a.ndim == 2 or mat_b.ndim == 2):
        raise RuntimeError("Have to provide offsets if there is a 2d matrix, or no offset if "
                           "both matrices are 3d")
    if offs is not None:
        if offs.ndim != 1:
            raise RuntimeError("offs has to be 1D")
        if offs.dtype != _dtype.int32:
            raise RuntimeError("Offsets have to be int32")
    if mat_a.ndim == 3 and mat_b.ndim == 3:
        if mat_a.shape[0] != mat_b.shape[0]:
            raise RuntimeError("batched dimension has to match")
    elif mat_a.ndim == 3 or mat_b.ndim == 3:
        groups = (mat_a if mat_a.ndim == 3 else mat_b).shape[0]
        if offs.shape[0] != groups:
            raise RuntimeError("matrix batch sizes have to match")
    if out_dtype is not None and out_dtype != mat_a.dtype:
        raise RuntimeError("Grouped gemm output dtype must match `mat_a` dtype")
    if bias is not None:
        raise RuntimeError("Bias not supported yet")


def grouped_mm(mat_a: Tensor, mat_b: Tensor, *, offs: Tensor | None = None,
               bias: Tensor | None = None, out_dtype: _dtype.dtype | None = None) -> Tensor:
    """One matrix product per group: 2-d operands are split at ``offs`` (int32 group ends),
    3-d ones are batches of groups (e.g. a mixture of experts' ``input @ weight.T``)."""
    _check(mat_a, mat_b, offs, bias, out_dtype)
    return grouped(mat_a, mat_b, None if offs is None else offs._data)


__all__ = ["grouped_mm"]
