"""LinearCrossEntropyOptions: the settings of torch's chunked ``F.linear_cross_entropy``.

torch's chunked path splits the batch so the (batch, classes) logits never exist at once; its
result is the reference path's up to rounding. ember validates the options as torch does
(here, and the chunk-size conflict at call time) and computes the reference path.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from ember import _dtype

_POLICIES = {"auto", "accurate", "balanced", "compact"}


@dataclasses.dataclass(slots=True, frozen=True)
class LinearCrossEntropyOptions:
    """Configuration for the chunked implementation of :func:`linear_cross_entropy`."""

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: Literal["accurate", "balanced", "compact", "auto"] = "auto"
    acc_dtype: _dtype.dtype | None = None

    def __post_init__(self) -> None:
        if self.acc_policy not in _POLICIES:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = self.chunking_method.partition(":")
            factor = factor if sep else "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        if not (self.batch_chunk_size is None or isinstance(self.batch_chunk_size, int)
                and self.batch_chunk_size > 0):
            raise ValueError(f"batch_chunk_size must be positive int or None, got "
                             f"{self.batch_chunk_size!r}")
        supported = (_dtype.float16, _dtype.bfloat16, _dtype.float32, _dtype.float64)
        if self.acc_dtype is not None and self.acc_dtype not in supported:
            raise ValueError(f"acc_dtype must be one of {{None, torch.float16, torch.bfloat16, "
                             f"torch.float32, torch.float64}}, got {self.acc_dtype!r}. Pass "
                             "acc_dtype=None to let the op pick automatically.")

    def _check_chunking(self, num_batches: int, in_features: int, num_classes: int) -> None:
        """torch's call-time check: an explicit ``batch_chunk_size`` must agree with the chunk
        size an explicit ``chunking_method`` gives ("auto" defers to the size)."""
        method = self.chunking_method
        if self.batch_chunk_size is None or method is None or method == "auto":
            return
        factor = int(method.split(":", 1)[1]) if ":" in method else 1
        target = -(-num_batches // -(-num_classes // in_features))
        size = min((1 << (target - 1).bit_length()) // factor, num_batches)
        if self.batch_chunk_size != size:
            raise ValueError(f"batch_chunk_size (={self.batch_chunk_size}) and "
                             f"chunking_method ('{method}') give different chunk sizes "
                             f"({self.batch_chunk_size} vs {size}); pass only one.")


__all__ = ["LinearCrossEntropyOptions"]
