"""Adagrad with learning-rate decay (torch.optim.Adagrad)."""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor
from ember.optim.optimizer import (
    Optimizer,
    addcdiv_,
    addcmul_,
    bump_step,
    check_flags,
    check_lr,
    effective_grad,
    scalar_float,
    scratch_of,
    step_tensor,
    steps_to_tensors,
    touch,
)

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
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
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError("Invalid initial_accumulator_value value: "
                             f"{initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "fused": fused}
        super().__init__(params, defaults)
        check_flags(fused, foreach, differentiable)
        # Unlike the others, Adagrad creates its state eagerly (as torch does).
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group)

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        steps_to_tensors(self)

    def _init_state(self, p: Tensor, group: dict) -> dict:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = step_tensor()
            state["sum"] = Tensor._make(np.full_like(p._data,
                                                     group["initial_accumulator_value"]))
        return state

    def step(self, closure=None):
        """Perform a single optimization step; returns ``closure()``'s loss if given."""
        loss = self._closure_loss(closure)
        tmp = scratch_of(self)
        for group in self.param_groups:
            lr, lr_decay = scalar_float(group["lr"]), group["lr_decay"]
            wd, eps = group["weight_decay"], group["eps"]
            for p in group["params"]:
                if p._grad is None:
                    continue
                state = self._init_state(p, group)
                step = bump_step(state)
                g = effective_grad(p, group["maximize"], wd, tmp)
                clr = lr / (1 + (step - 1) * lr_decay)
                t0, std = tmp(g, 0), tmp(g, 1)
                s = state["sum"]
                addcmul_(s._data, g, g, 1, t0)
                touch(s)
                np.sqrt(s._data, out=std)
                std += eps
                addcdiv_(p._data, g, std, -clr, t0)
                touch(p)
        return loss
