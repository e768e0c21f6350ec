"""RMSprop with momentum and the centered variant (torch.optim.RMSprop)."""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor
from ember.optim.optimizer import (
    Optimizer,
    add_,
    addcdiv_,
    addcmul_,
    bump_step,
    check_capturable,
    check_flags,
    check_lr,
    effective_grad,
    lerp_,
    scalar_float,
    scratch_of,
    step_tensor,
    steps_to_tensors,
    touch,
)

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
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
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps,
                    "centered": centered, "weight_decay": weight_decay, "capturable": capturable,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable}
        super().__init__(params, defaults)
        check_flags(None, foreach, differentiable)

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        steps_to_tensors(self)

    def _init_state(self, p: Tensor, group: dict) -> dict:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = step_tensor()
            state["square_avg"] = Tensor._make(np.zeros_like(p._data))
            if group["momentum"] > 0:
                state["momentum_buffer"] = Tensor._make(np.zeros_like(p._data))
            if group["centered"]:
                state["grad_avg"] = Tensor._make(np.zeros_like(p._data))
        return state

    def step(self, closure=None):
        """Perform a single optimization step; returns ``closure()``'s loss if given."""
        loss = self._closure_loss(closure)
        tmp = scratch_of(self)
        for group in self.param_groups:
            check_capturable(group)
            lr, alpha, eps = scalar_float(group["lr"]), group["alpha"], group["eps"]
            wd, momentum = group["weight_decay"], group["momentum"]
            for p in group["params"]:
                if p._grad is None:
                    continue
                state = self._init_state(p, group)
                g = effective_grad(p, group["maximize"], wd, tmp)
                bump_step(state)
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
        return loss
