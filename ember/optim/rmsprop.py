"""RMSprop with momentum and the centered variant (torch.optim.RMSprop)."""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor
from ember.optim._adaptive import AdaptiveOptimizer, check_non_negative, zeros_like
from ember.optim.optimizer import add_, addcdiv_, addcmul_, check_lr, lerp_, scalar_float, touch

__all__ = ["RMSprop"]


class RMSprop(AdaptiveOptimizer):
    """Divide the gradient by a running RMS of recent gradients.

    >>> opt = ember.optim.RMSprop(model.parameters(), lr=1e-2, alpha=0.99, centered=True)
    """

    _group_fallbacks = {"momentum": 0, "centered": False, "foreach": None, "maximize": False,
                        "differentiable": False, "capturable": False}

    def __init__(self, params, lr: float | Tensor = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0, momentum: float = 0,
                 centered: bool = False, capturable: bool = False, foreach: bool | None = None,
                 maximize: bool = False, differentiable: bool = False) -> None:
        check_lr(lr)
        check_non_negative(epsilon=eps, momentum=momentum, weight_decay=weight_decay,
                           alpha=alpha)
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps,
                    "centered": centered, "weight_decay": weight_decay, "capturable": capturable,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable}
        super().__init__(params, defaults)

    def _new_state(self, p: Tensor, group: dict) -> dict:
        state = {"square_avg": zeros_like(p)}
        if group["momentum"] > 0:
            state["momentum_buffer"] = zeros_like(p)
        if group["centered"]:
            state["grad_avg"] = zeros_like(p)
        return state

    def _step_group(self, group: dict, tmp) -> None:
        lr, alpha, eps = scalar_float(group["lr"]), group["alpha"], group["eps"]
        wd, momentum = group["weight_decay"], group["momentum"]
        for p, g, state, _ in self._params_with_grad(group, tmp, wd):
            t0, avg = tmp(g, 0), tmp(g, 1)
            sq = state["square_avg"]
            sq._data *= alpha
            addcmul_(sq._data, g, g, 1 - alpha, t0)
            touch(sq)
            if group["centered"]:
                ga = state["grad_avg"]
                lerp_(ga._data, g, 1 - alpha, t0)
                touch(ga)
                np.copyto(avg, sq._data)
                addcmul_(avg, ga._data, ga._data, -1, t0)
                np.sqrt(avg, out=avg)
            else:
                np.sqrt(sq._data, out=avg)
            avg += eps
            if momentum > 0:
                buf = state["momentum_buffer"]
                buf._data *= momentum
                addcdiv_(buf._data, g, avg, 1, t0)
                touch(buf)
                add_(p._data, buf._data, -lr, t0)
            else:
                addcdiv_(p._data, g, avg, -lr, t0)
            touch(p)
