"""ember.backends.cuda: ember is not built with CUDA; the matmul flags are kept for scripts
that set them."""

from __future__ import annotations


class _MatmulFlags:
    # allow_tf32 is a view of torch.get/set_float32_matmul_precision, as in torch.
    @property
    def allow_tf32(self) -> bool:
        from ember._flags import get_float32_matmul_precision

        return get_float32_matmul_precision() != "highest"

    @allow_tf32.setter
    def allow_tf32(self, value: bool) -> None:
        from ember._flags import set_float32_matmul_precision

        set_float32_matmul_precision("high" if value else "highest")

    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True


matmul = _MatmulFlags()


def is_built() -> bool:
    """Whether ember can compute on CUDA here (CuPy sees a GPU)."""
    from ember._backend import cupy_module

    return cupy_module() is not None


# The scaled-dot-product-attention switches (shared with ember.nn.attention.sdpa_kernel).
from ember._sdp import (  # noqa: E402, F401
    allow_fp16_bf16_reduction_math_sdp,
    cudnn_sdp_enabled,
    enable_cudnn_sdp,
    enable_flash_sdp,
    enable_math_sdp,
    enable_mem_efficient_sdp,
    flash_sdp_enabled,
    fp16_bf16_reduction_math_sdp_allowed,
    is_flash_attention_available,
    math_sdp_enabled,
    mem_efficient_sdp_enabled,
    sdp_kernel,
)
