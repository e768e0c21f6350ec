"""Adamax: Adam with an infinity-norm second moment (torch.optim.Adamax)."""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor
from ember.optim._adaptive import (
    AdaptiveOptimizer,
    check_betas,
    check_non_negative,
    zeros_like,
)
from ember.optim.optimizer import addcdiv_, check_lr, lerp_, scalar_float, touch

__all__ = ["Adamax"]


class Adamax(AdaptiveOptimizer):
    """Adamax: ``exp_inf = max(beta2 * exp_inf, |grad| + eps)`` replaces Adam's RMS.

    >>> opt = ember.optim.Adamax(model.parameters(), lr=2e-3, betas=(0.9, 0.999))
    """

    _group_fallbacks = {"foreach": None, "maximize": False, "differentiable": False,
                        "capturable": False}

    def __init__(self, params, lr: float | Tensor = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        check_lr(lr)
        check_non_negative(epsilon=eps)
        check_betas(betas)
        check_non_negative(weight_decay=weight_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    def _check_capturable(self, group: dict) -> None:
        self._check_capturable_with_grads(group)

    def _new_state(self, p: Tensor, group: dict) -> dict:
        return {"exp_avg": zeros_like(p), "exp_inf": zeros_like(p)}

    def _step_group(self, group: dict, tmp) -> None:
        beta1, beta2 = (scalar_float(b) for b in group["betas"])
        lr, eps = scalar_float(group["lr"]), group["eps"]
        for p, g, state, step in self._params_with_grad(group, tmp, group["weight_decay"]):
            t0, norm = tmp(g, 0), tmp(g, 1)
            exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
            lerp_(exp_avg._data, g, 1 - beta1, t0)
            touch(exp_avg)
            exp_inf._data *= beta2
            np.abs(g, out=norm)
            norm += eps
            np.maximum(exp_inf._data, norm, out=exp_inf._data)
            touch(exp_inf)
            clr = lr / (1 - beta1**step)
            addcdiv_(p._data, exp_avg._data, exp_inf._data, -clr, t0)
            touch(p)
