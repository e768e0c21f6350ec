"""Rprop: resilient backpropagation, sign-based steps with adaptive sizes
(torch.optim.Rprop)."""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor
from ember.optim._adaptive import AdaptiveOptimizer, zeros_like
from ember.optim.optimizer import addcmul_, check_lr, scalar_float, touch

__all__ = ["Rprop"]


class Rprop(AdaptiveOptimizer):
    """Each coordinate moves by its own step size against the gradient's sign; the size grows
    by ``etas[1]`` while the sign holds and shrinks by ``etas[0]`` when it flips (that step is
    then skipped), clamped to ``step_sizes``.

    >>> opt = ember.optim.Rprop(model.parameters(), lr=1e-2, etas=(0.5, 1.2))
    """

    _group_fallbacks = {"foreach": None, "maximize": False, "differentiable": False,
                        "capturable": False}

    def __init__(self, params, lr: float | Tensor = 1e-2,
                 etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    def _check_capturable(self, group: dict) -> None:
        self._check_capturable_with_grads(group)

    def _new_state(self, p: Tensor, group: dict) -> dict:
        return {"prev": zeros_like(p),
                "step_size": Tensor._make(np.full_like(p._data, scalar_float(group["lr"])))}

    def _step_group(self, group: dict, tmp) -> None:
        etaminus, etaplus = group["etas"]
        size_min, size_max = group["step_sizes"]
        for p, g, state, _ in self._params_with_grad(group, tmp, 0):
            prev, step_size = state["prev"], state["step_size"]
            factor, t0 = tmp(g, 0), tmp(g, 1)
            np.multiply(g, prev._data, out=factor)
            np.sign(factor, out=factor)
            flipped = factor < 0
            factor[factor > 0] = etaplus
            factor[flipped] = etaminus
            factor[factor == 0] = 1
            step_size._data *= factor
            np.clip(step_size._data, size_min, size_max, out=step_size._data)
            touch(step_size)
            # where the sign flipped, the gradient counts as zero: no step, no next flip
            np.copyto(prev._data, g)
            prev._data[flipped] = 0
            touch(prev)
            np.sign(prev._data, out=factor)
            addcmul_(p._data, factor, step_size._data, -1, t0)
            touch(p)
