"""NAdam: Adam with Nesterov momentum and a momentum schedule (torch.optim.NAdam)."""

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
from ember.optim.optimizer import (
    addcdiv_,
    check_lr,
    scalar_float,
    step_tensor,
    touch,
)

__all__ = ["NAdam"]


class NAdam(AdaptiveOptimizer):
    """NAdam with torch's ``momentum_decay`` schedule; ``decoupled_weight_decay=True`` gives
    NAdamW.

    >>> opt = ember.optim.NAdam(model.parameters(), lr=2e-3, momentum_decay=4e-3)
    """

    _group_fallbacks = {"maximize": False, "foreach": None, "capturable": False,
                        "differentiable": False, "decoupled_weight_decay": False}
    _scalar_state = ("step", "mu_product")

    def __init__(self, params, lr: float | Tensor = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_lr(lr)
        check_non_negative(epsilon=eps)
        check_betas(betas)
        check_non_negative(weight_decay=weight_decay, momentum_decay=momentum_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay,
                    "decoupled_weight_decay": decoupled_weight_decay, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _check_capturable(self, group: dict) -> None:
        self._check_capturable_with_grads(group, "params, mu_products and state_steps")

    def _new_state(self, p: Tensor, group: dict) -> dict:
        # mu_product: the running product of the momentum schedule, a 0-d tensor like step
        return {"mu_product": step_tensor(1.0), "exp_avg": zeros_like(p),
                "exp_avg_sq": zeros_like(p)}

    def _step_group(self, group: dict, tmp) -> None:
        beta1, beta2 = (scalar_float(b) for b in group["betas"])
        lr, eps = scalar_float(group["lr"]), group["eps"]
        wd, momentum_decay = group["weight_decay"], group["momentum_decay"]
        decoupled = group["decoupled_weight_decay"]
        for p, g, state, step in self._params_with_grad(group, tmp, 0 if decoupled else wd):
            if decoupled:
                decoupled_decay_(p, lr, wd)
            mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
            mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
            mu_product = state["mu_product"]
            mu_product._data *= mu  # rounded to the counter's dtype, as torch's tensor is
            touch(mu_product)
            prod = float(mu_product._data)
            t0, denom = tmp(g, 0), tmp(g, 1)
            exp_avg, exp_avg_sq = adam_moments_(state, g, beta1, beta2, t0)
            np.divide(exp_avg_sq, 1 - beta2**step, out=denom)
            np.sqrt(denom, out=denom)
            denom += eps
            addcdiv_(p._data, g, denom, -lr * (1.0 - mu) / (1.0 - prod), t0)
            touch(p)
            addcdiv_(p._data, exp_avg, denom, -lr * mu_next / (1.0 - prod * mu_next), t0)
            touch(p)
