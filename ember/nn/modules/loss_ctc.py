"""nn.CTCLoss (torch's ``torch.nn.modules.loss.CTCLoss``)."""

from __future__ import annotations

from ember._tensor import Tensor
from ember.nn._functional.ctc import ctc_loss
from ember.nn.modules.loss import _Loss


class CTCLoss(_Loss):
    """The Connectionist Temporal Classification loss (``F.ctc_loss``) with its options."""

    def __init__(self, blank: int = 0, reduction: str = "mean",
                 zero_infinity: bool = False) -> None:
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs: Tensor, targets: Tensor, input_lengths,
                target_lengths) -> Tensor:
        return ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                        self.reduction, self.zero_infinity)


__all__ = ["CTCLoss"]
