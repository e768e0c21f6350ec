"""ember.backends.cuda: ember is not built with CUDA; the matmul flags are kept for scripts
that set them."""

from __future__ import annotations


class _MatmulFlags:
    allow_tf32 = False
    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True


matmul = _MatmulFlags()


def is_built() -> bool:
    return False
