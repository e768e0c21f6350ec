"""Which scaled-dot-product-attention backends are enabled: torch's flags
(``backends.cuda.enable_flash_sdp``, ..., ``nn.attention.sdpa_kernel``).

ember computes attention one way (the math of ``F.scaled_dot_product_attention``) on every
device; the flags are kept, read and restored as in torch so that programs which set them run
unchanged.
"""

from __future__ import annotations

import contextlib
import enum


class SDPBackend(enum.IntEnum):
    """torch.nn.attention.SDPBackend."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


# torch's (a pybind enum) is torch.nn.attention._SDPBackend by module and qualified name, and
# ember.nn.attention holds it under that name as well, so pickles of it resolve
SDPBackend.__module__ = "ember.nn.attention"
SDPBackend.__qualname__ = "_SDPBackend"

# Enabled backends, in priority order (torch enables all by default).
_ENABLED = {SDPBackend.FLASH_ATTENTION: True, SDPBackend.EFFICIENT_ATTENTION: True,
            SDPBackend.MATH: True, SDPBackend.CUDNN_ATTENTION: True,
            SDPBackend.OVERRIDEABLE: True}
_REDUCED_PRECISION_MATH = [False]


def _flag(backend: SDPBackend):
    def enable(enabled: bool) -> None:
        _ENABLED[backend] = bool(enabled)

    def enabled() -> bool:
        return _ENABLED[backend]

    return enable, enabled


enable_flash_sdp, flash_sdp_enabled = _flag(SDPBackend.FLASH_ATTENTION)
enable_mem_efficient_sdp, mem_efficient_sdp_enabled = _flag(SDPBackend.EFFICIENT_ATTENTION)
enable_math_sdp, math_sdp_enabled = _flag(SDPBackend.MATH)
enable_cudnn_sdp, cudnn_sdp_enabled = _flag(SDPBackend.CUDNN_ATTENTION)
for _fn, _name in ((enable_flash_sdp, "enable_flash_sdp"), (flash_sdp_enabled, "flash_sdp_enabled"),
                   (enable_mem_efficient_sdp, "enable_mem_efficient_sdp"),
                   (mem_efficient_sdp_enabled, "mem_efficient_sdp_enabled"),
                   (enable_math_sdp, "enable_math_sdp"), (math_sdp_enabled, "math_sdp_enabled"),
                   (enable_cudnn_sdp, "enable_cudnn_sdp"),
                   (cudnn_sdp_enabled, "cudnn_sdp_enabled")):
    _fn.__name__ = _fn.__qualname__ = _name


def allow_fp16_bf16_reduction_math_sdp(enabled: bool) -> None:
    _REDUCED_PRECISION_MATH[0] = bool(enabled)


def fp16_bf16_reduction_math_sdp_allowed() -> bool:
    return _REDUCED_PRECISION_MATH[0]


def is_flash_attention_available() -> bool:
    """False: ember has no flash-attention kernel."""
    return False


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority: bool = False):
    """Enable only ``backends`` (an SDPBackend or a list of them) inside the block."""
    if not isinstance(backends, list | SDPBackend):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of SDPBackend "
                             f"instances, got {type(backends).__name__}")
    chosen = [backends] if isinstance(backends, SDPBackend) else list(dict.fromkeys(backends))
    previous = dict(_ENABLED)
    try:
        for b in _ENABLED:
            _ENABLED[b] = b in chosen
        yield {}
    finally:
        _ENABLED.update(previous)


@contextlib.contextmanager
def sdp_kernel(enable_flash: bool = True, enable_math: bool = True,
               enable_mem_efficient: bool = True, enable_cudnn: bool = True):
    """Deprecated: the flags form of ``sdpa_kernel``."""
    import warnings

    warnings.warn("`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this context "
                  "manager will be removed. Please see `torch.nn.attention.sdpa_kernel()` for "
                  "the new context manager, with updated signature.", FutureWarning,
                  stacklevel=3)
    chosen = [b for b, on in ((SDPBackend.FLASH_ATTENTION, enable_flash),
                              (SDPBackend.EFFICIENT_ATTENTION, enable_mem_efficient),
                              (SDPBackend.MATH, enable_math),
                              (SDPBackend.CUDNN_ATTENTION, enable_cudnn)) if on]
    with sdpa_kernel(chosen):
        yield {}
