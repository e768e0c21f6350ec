"""RAdam: Adam with a rectified (warm-up free) adaptive step (torch.optim.RAdam)."""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor
from ember.optim._adaptive import (
    AdaptiveOptimizer,
    adam_moments_,
    check_betas,
    check_non_negative,
    decoupled_decay_,
    zeros_like,
)
from ember.optim.optimizer import check_lr, scalar_float, touch

__all__ = ["RAdam"]


class RAdam(AdaptiveOptimizer):
    """RAdam: plain momentum steps until the variance estimate is tractable (``rho_t > 5``),
    then Adam steps scaled by the rectification term; ``decoupled_weight_decay=True`` gives
    RAdamW.

    >>> opt = ember.optim.RAdam(model.parameters(), lr=1e-3)
    """

    _group_fallbacks = {"foreach": None, "maximize": False, "differentiable": False,
                        "decoupled_weight_decay": False, "capturable": False}

    def __init__(self, params, lr: float | Tensor = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_lr(lr)
        check_non_negative(epsilon=eps)
        check_betas(betas)
        check_non_negative(weight_decay=weight_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "decoupled_weight_decay": decoupled_weight_decay,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _check_capturable(self, group: dict) -> None:
        self._check_capturable_with_grads(group)

    def _new_state(self, p: Tensor, group: dict) -> dict:
        return {"exp_avg": zeros_like(p), "exp_avg_sq": zeros_like(p)}

    def _step_group(self, group: dict, tmp) -> None:
        beta1, beta2 = (scalar_float(b) for b in group["betas"])
        lr, eps = scalar_float(group["lr"]), group["eps"]
        wd, decoupled = group["weight_decay"], group["decoupled_weight_decay"]
        rho_inf = 2 / (1 - beta2) - 1  # the longest the approximated SMA gets
        for p, g, state, step in self._params_with_grad(group, tmp, 0 if decoupled else wd):
            if decoupled:
                decoupled_decay_(p, lr, wd)
            t0, update = tmp(g, 0), tmp(g, 1)
            exp_avg, exp_avg_sq = adam_moments_(state, g, beta1, beta2, t0)
            bias_correction1 = 1 - beta1**step
            bias_correction2 = 1 - beta2**step
            np.divide(exp_avg, bias_correction1, out=update)
            update *= lr
            rho_t = rho_inf - 2 * step * beta2**step / bias_correction2
            if rho_t > 5.0:
                # adaptive lr = sqrt(bias_correction2) / (sqrt(v) + eps), as torch's
                # scalar / tensor: a reciprocal, then a product
                adaptive = np.sqrt(exp_avg_sq, out=t0)
                adaptive += eps
                np.reciprocal(adaptive, out=adaptive)
                adaptive *= bias_correction2**0.5
                update *= adaptive
                update *= ((rho_t - 4) * (rho_t - 2) * rho_inf
                           / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            p._data -= update
            touch(p)
