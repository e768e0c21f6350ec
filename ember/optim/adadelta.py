"""Adadelta: steps sized by running RMS of past updates over past gradients
(torch.optim.Adadelta)."""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor
from ember.optim._adaptive import AdaptiveOptimizer, check_non_negative, zeros_like
from ember.optim.optimizer import add_, addcmul_, check_lr, scalar_float, touch

__all__ = ["Adadelta"]


class Adadelta(AdaptiveOptimizer):
    """Adadelta: ``delta = sqrt(acc_delta + eps) / sqrt(square_avg + eps) * grad``.

    >>> opt = ember.optim.Adadelta(model.parameters(), lr=1.0, rho=0.9)
    """

    _group_fallbacks = {"foreach": None, "maximize": False, "differentiable": False,
                        "capturable": False}

    def __init__(self, params, lr: float | Tensor = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_non_negative(epsilon=eps, weight_decay=weight_decay)
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "capturable": capturable, "foreach": foreach,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _check_capturable(self, group: dict) -> None:
        self._check_capturable_with_grads(group, xla=False)

    def _new_state(self, p: Tensor, group: dict) -> dict:
        return {"square_avg": zeros_like(p), "acc_delta": zeros_like(p)}

    def _step_group(self, group: dict, tmp) -> None:
        lr, rho, eps = scalar_float(group["lr"]), group["rho"], group["eps"]
        for p, g, state, _ in self._params_with_grad(group, tmp, group["weight_decay"]):
            t0, std, delta = tmp(g, 0), tmp(g, 1), tmp(g, 4)
            sq, acc = state["square_avg"], state["acc_delta"]
            sq._data *= rho
            addcmul_(sq._data, g, g, 1 - rho, t0)
            touch(sq)
            np.add(sq._data, eps, out=std)
            np.sqrt(std, out=std)
            np.add(acc._data, eps, out=delta)
            np.sqrt(delta, out=delta)
            delta /= std
            delta *= g
            acc._data *= rho
            addcmul_(acc._data, delta, delta, 1 - rho, t0)
            touch(acc)
            add_(p._data, delta, -lr, t0)
            touch(p)
