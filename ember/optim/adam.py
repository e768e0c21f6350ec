"""Adam (and the decoupled-weight-decay form AdamW builds on), as torch.optim.Adam."""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor
from ember.optim.optimizer import (
    Optimizer,
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

__all__ = ["Adam"]


class Adam(Optimizer):
    """Adam with torch's bias corrections, ``amsgrad``, ``maximize`` and weight decay.

    >>> opt = ember.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999))
    """

    _group_fallbacks = {"amsgrad": False, "maximize": False, "foreach": None,
                        "capturable": False, "differentiable": False,
                        "decoupled_weight_decay": False, "fused": None}

    def __init__(self, params, lr: float | Tensor = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 decoupled_weight_decay: bool = False) -> None:
        check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not ((isinstance(betas[0], float) and isinstance(betas[1], float))
                or (isinstance(betas[0], Tensor) and isinstance(betas[1], Tensor))):
            raise ValueError("betas must be either both floats or both Tensors")
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
                    "amsgrad": amsgrad, "maximize": maximize, "foreach": foreach,
                    "capturable": capturable, "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)
        check_flags(fused, foreach, differentiable)

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        steps_to_tensors(self)

    def _init_state(self, p: Tensor, group: dict) -> dict:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = step_tensor()
            state["exp_avg"] = Tensor._make(np.zeros_like(p._data))
            state["exp_avg_sq"] = Tensor._make(np.zeros_like(p._data))
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = Tensor._make(np.zeros_like(p._data))
        return state

    def step(self, closure=None):
        """Perform a single optimization step; returns ``closure()``'s loss if given."""
        loss = self._closure_loss(closure)
        tmp = scratch_of(self)
        for group in self.param_groups:
            check_capturable(group)
            beta1, beta2 = (scalar_float(b) for b in group["betas"])
            lr, eps = scalar_float(group["lr"]), group["eps"]
            wd = scalar_float(group["weight_decay"])
            decoupled = group["decoupled_weight_decay"]
            for p in group["params"]:
                if p._grad is None:
                    continue
                state = self._init_state(p, group)
                step = bump_step(state)
                if wd != 0 and decoupled:
                    p._data *= 1 - lr * wd
                    touch(p)
                g = effective_grad(p, group["maximize"], 0 if decoupled else wd, tmp)
                t0, t1 = tmp(g, 0), tmp(g, 1)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                lerp_(exp_avg._data, g, 1 - beta1, t0)
                exp_avg_sq._data *= beta2
                addcmul_(exp_avg_sq._data, g, g, 1 - beta2, t0)
                touch(exp_avg)
                touch(exp_avg_sq)
                bias_correction1 = 1 - beta1**step
                bias_correction2 = 1 - beta2**step
                step_size = lr / bias_correction1
                bias_correction2_sqrt = bias_correction2**0.5
                second = exp_avg_sq._data
                if group["amsgrad"]:
                    mx = state["max_exp_avg_sq"]
                    np.maximum(mx._data, second, out=mx._data)
                    touch(mx)
                    second = mx._data
                denom = np.sqrt(second, out=t1)
                denom /= bias_correction2_sqrt
                denom += eps
                addcdiv_(p._data, exp_avg._data, denom, -step_size, t0)
                touch(p)
        return loss
