"""SGD with momentum, dampening, Nesterov, weight decay and maximize (torch.optim.SGD)."""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor
from ember.optim.optimizer import (
    Optimizer,
    add_,
    check_flags,
    check_lr,
    effective_grad,
    scalar_float,
    scratch_of,
    touch,
)

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent, optionally with (Nesterov) momentum.

    >>> opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    """

    _group_fallbacks = {"nesterov": False, "maximize": False, "foreach": None,
                        "differentiable": False, "fused": False}

    def __init__(self, params, lr: float | Tensor = 1e-3, momentum: float = 0,
                 dampening: float = 0, weight_decay: float = 0, nesterov: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        check_lr(lr)
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening,
                    "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize,
                    "foreach": foreach, "differentiable": differentiable, "fused": fused}
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        check_flags(fused, foreach, differentiable)

    def step(self, closure=None):
        """Perform a single optimization step; returns ``closure()``'s loss if given."""
        loss = self._closure_loss(closure)
        tmp = scratch_of(self)
        for group in self.param_groups:
            lr = scalar_float(group["lr"])
            wd = scalar_float(group["weight_decay"])
            momentum, dampening = group["momentum"], group["dampening"]
            for p in group["params"]:
                if p._grad is None:
                    continue
                g = effective_grad(p, group["maximize"], wd, tmp)
                if momentum != 0:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = Tensor._make(g.copy())
                        state["momentum_buffer"] = buf
                    else:
                        b = buf._data
                        b *= momentum
                        add_(b, g, 1 - dampening, tmp(b, 0))
                        touch(buf)
                    if group["nesterov"]:
                        nest = tmp(g, 1)
                        np.multiply(buf._data, momentum, out=nest)
                        nest += g
                        g = nest
                    else:
                        g = buf._data
                add_(p._data, g, -lr, tmp(g, 0))
                touch(p)
        return loss
