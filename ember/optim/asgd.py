"""ASGD: averaged stochastic gradient descent (torch.optim.ASGD)."""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor
from ember.optim._adaptive import AdaptiveOptimizer, check_non_negative, zeros_like
from ember.optim.optimizer import add_, check_lr, scalar_float, step_tensor, touch

__all__ = ["ASGD"]


class ASGD(AdaptiveOptimizer):
    """SGD with a decaying step ``eta`` whose iterates are averaged into ``state['ax']`` from
    step ``t0`` on.

    >>> opt = ember.optim.ASGD(model.parameters(), lr=1e-2, t0=100)
    """

    _group_fallbacks = {"foreach": None, "maximize": False, "differentiable": False,
                        "capturable": False}
    _scalar_state = ("step", "eta", "mu")

    def __init__(self, params, lr: float | Tensor = 1e-2, lambd: float = 1e-4,
                 alpha: float = 0.75, t0: float = 1e6, weight_decay: float = 0,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        check_lr(lr)
        check_non_negative(weight_decay=weight_decay)
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    def _check_capturable(self, group: dict) -> None:
        self._check_capturable_with_grads(group, "params, mus, etas, and state_steps")

    def _new_state(self, p: Tensor, group: dict) -> dict:
        # eta (step size) and mu (averaging weight) are 0-d tensors of the step counter's dtype
        return {"eta": step_tensor(scalar_float(group["lr"])), "mu": step_tensor(1.0),
                "ax": zeros_like(p)}

    def _step_group(self, group: dict, tmp) -> None:
        lr, lambd, alpha, t0 = (scalar_float(group["lr"]), group["lambd"], group["alpha"],
                                group["t0"])
        for p, g, state, step in self._params_with_grad(group, tmp, group["weight_decay"]):
            eta, mu, ax = state["eta"], state["mu"], state["ax"]
            eta_value = float(eta._data)
            p._data *= 1 - lambd * eta_value
            touch(p)
            add_(p._data, g, -eta_value, tmp(g, 0))
            touch(p)
            if float(mu._data) != 1:
                diff = np.subtract(p._data, ax._data, out=tmp(g, 0))
                diff *= float(mu._data)
                ax._data += diff
            else:
                np.copyto(ax._data, p._data)
            touch(ax)
            # torch makes the new values default-dtype tensors, then copies them in (a state
            # loaded next to float64 params is float64, its values still rounded so)
            np.copyto(eta._data, step_tensor(lr / (1 + lambd * lr * step) ** alpha)._data)
            np.copyto(mu._data, step_tensor(1 / max(1, step - t0))._data)
            touch(eta)
            touch(mu)
