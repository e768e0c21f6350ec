"""Adam (and the decoupled-weight-decay form AdamW builds on), as torch.optim.Adam."""

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
from ember.optim.optimizer import addcdiv_, as_dtype, check_lr, scalar_float, touch

__all__ = ["Adam"]


class Adam(AdaptiveOptimizer):
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
        check_non_negative(epsilon=eps)
        check_betas(betas)
        check_non_negative(weight_decay=weight_decay)
        if not ((isinstance(betas[0], float) and isinstance(betas[1], float))
                or (isinstance(betas[0], Tensor) and isinstance(betas[1], Tensor))):
            raise ValueError("betas must be either both floats or both Tensors")
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
                    "amsgrad": amsgrad, "maximize": maximize, "foreach": foreach,
                    "capturable": capturable, "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)

    _traceable_step = True  # the step's scalars below are cast to p's dtype where used

    def _new_state(self, p: Tensor, group: dict) -> dict:
        state = {"exp_avg": zeros_like(p), "exp_avg_sq": zeros_like(p)}
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = zeros_like(p)
        return state

    def _step_group(self, group: dict, tmp) -> None:
        beta1, beta2 = (scalar_float(b) for b in group["betas"])
        lr, eps = scalar_float(group["lr"]), group["eps"]
        wd = scalar_float(group["weight_decay"])
        decoupled = group["decoupled_weight_decay"]
        # Decoupled (AdamW) decay shrinks the parameter itself; else it is added to the gradient.
        for p, g, state, step in self._params_with_grad(group, tmp, 0 if decoupled else wd):
            if decoupled:
                decoupled_decay_(p, lr, wd)
            t0, t1 = tmp(g, 0), tmp(g, 1)
            exp_avg, second = adam_moments_(state, g, beta1, beta2, t0)
            # Python floats (0-d float64 arrays under ember.compile): torch's double math
            bias_correction1 = 1 - np.power(beta1, step)
            bias_correction2 = 1 - np.power(beta2, step)
            step_size = lr / bias_correction1
            bias_correction2_sqrt = np.power(bias_correction2, 0.5)
            dt = p._data.dtype.type
            if group["amsgrad"]:
                mx = state["max_exp_avg_sq"]
                np.maximum(mx._data, second, out=mx._data)
                touch(mx)
                second = mx._data
            denom = np.sqrt(second, out=t1)
            denom /= as_dtype(bias_correction2_sqrt, dt)
            denom += eps
            addcdiv_(p._data, exp_avg, denom, as_dtype(-step_size, dt), t0)
            touch(p)
