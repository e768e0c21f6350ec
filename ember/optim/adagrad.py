"""Adagrad with learning-rate decay (torch.optim.Adagrad)."""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor
from ember.optim._adaptive import AdaptiveOptimizer, check_non_negative
from ember.optim.optimizer import addcdiv_, addcmul_, check_lr, scalar_float, touch

__all__ = ["Adagrad"]


class Adagrad(AdaptiveOptimizer):
    """Scale each coordinate's step by the root of its accumulated squared gradients.

    >>> opt = ember.optim.Adagrad(model.parameters(), lr=1e-2, lr_decay=1e-4)
    """

    _group_fallbacks = {"foreach": None, "maximize": False, "differentiable": False,
                        "fused": None}

    def __init__(self, params, lr: float | Tensor = 1e-2, lr_decay: float = 0,
                 weight_decay: float = 0, initial_accumulator_value: float = 0,
                 eps: float = 1e-10, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        check_lr(lr)
        check_non_negative(lr_decay=lr_decay, weight_decay=weight_decay,
                           initial_accumulator_value=initial_accumulator_value, epsilon=eps)
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "fused": fused}
        super().__init__(params, defaults)
        # Unlike the others, Adagrad creates its state eagerly (as torch does).
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group)

    def _new_state(self, p: Tensor, group: dict) -> dict:
        return {"sum": Tensor._make(np.full_like(p._data, group["initial_accumulator_value"]))}

    def _step_group(self, group: dict, tmp) -> None:
        lr, lr_decay = scalar_float(group["lr"]), group["lr_decay"]
        wd, eps = group["weight_decay"], group["eps"]
        for p, g, state, step in self._params_with_grad(group, tmp, wd):
            clr = lr / (1 + (step - 1) * lr_decay)
            t0, std = tmp(g, 0), tmp(g, 1)
            s = state["sum"]
            addcmul_(s._data, g, g, 1, t0)
            touch(s)
            np.sqrt(s._data, out=std)
            std += eps
            addcdiv_(p._data, g, std, -clr, t0)
            touch(p)
