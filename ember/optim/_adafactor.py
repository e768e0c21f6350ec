"""Adafactor (Shazeer & Stern, 2018) as torch.optim.Adafactor computes it.

The second moment of a matrix (or of each matrix in a stack: the last two dims) is kept
factored, as a row and a column running mean of ``g * g``; vectors keep the full moment. The
step size is relative to the parameter's RMS, and each update is clipped to RMS ``d``.
"""

from __future__ import annotations

import math

import numpy as np

from ember import _dtype
from ember._tensor import Tensor
from ember.optim.optimizer import (
    Optimizer,
    bump_step,
    lerp_,
    scalar_float,
    scratch_of,
    step_tensor,
    steps_to_tensors,
    touch,
)

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    """Adafactor: ``lr`` is the largest relative step ``rho_t = min(lr, 1 / sqrt(t))``.

    >>> opt = ember.optim.Adafactor(model.parameters(), lr=1e-2)
    """

    _group_fallbacks = {"foreach": None}

    def __init__(self, params, lr: float | Tensor = 1e-2, beta2_decay: float = -0.8,
                 eps: tuple[float | None, float] = (None, 1e-3), d: float = 1.0,
                 weight_decay: float = 0.0, *, foreach: bool | None = None,
                 maximize: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        checks = [(0.0 <= lr, f"Learning rate should be >= 0 but is: {lr}"),
                  (0.0 >= beta2_decay, f"beta2_decay should be <= 0 but is: {beta2_decay}"),
                  (eps[0] is None or 0.0 <= eps[0], f"epsilon1 should be >= 0 but is: {eps[0]}"),
                  (0.0 <= eps[1], f"epsilon2 should be >= 0 but is: {eps[1]}"),
                  (1.0 <= d, f"Clipping threshold d should be >= 1 but is: {d}"),
                  (0.0 <= weight_decay, f"weight_decay should be >= 0 but is: {weight_decay}")]
        for ok, message in checks:
            if not ok:
                raise ValueError(message)
        defaults = {"lr": lr, "beta2_decay": beta2_decay, "eps": eps, "d": d,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize}
        super().__init__(params, defaults)

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        steps_to_tensors(self)

    def _state_of(self, p: Tensor) -> dict:
        if p.is_complex():
            raise RuntimeError("Adafactor does not support complex parameters")
        state = self.state[p]
        if len(state) == 0:
            g = p._grad._data
            state["step"] = step_tensor()
            if g.ndim > 1:  # row and column factors of the last two dims
                state["row_var"] = Tensor._make(np.zeros((*g.shape[:-1], 1), g.dtype))
                state["col_var"] = Tensor._make(np.zeros((*g.shape[:-2], 1, g.shape[-1]),
                                                         g.dtype))
            else:
                state["variance"] = Tensor._make(np.zeros_like(g))
        return state

    def step(self, closure=None):
        """Perform a single optimization step; returns ``closure()``'s loss if given."""
        loss = self._closure_loss(closure)
        tmp = scratch_of(self)
        for group in self.param_groups:
            lr, wd, d = scalar_float(group["lr"]), group["weight_decay"], group["d"]
            eps1, eps2 = group["eps"]
            for p in group["params"]:
                if p._grad is None:
                    continue
                state = self._state_of(p)
                # torch's loop keeps the first parameter's machine epsilon for the whole group
                if eps1 is None:
                    eps1 = _dtype.finfo(p.dtype).eps
                g = p._grad._data
                if group["maximize"]:
                    g = np.negative(g, out=tmp(g, 2))
                step = bump_step(state)
                beta2 = step ** group["beta2_decay"]
                rho = min(lr, 1 / step ** 0.5)
                alpha = max(eps2, _norm(p._data) / math.sqrt(p._data.size)) * rho
                if wd != 0:
                    p._data *= 1 - lr * wd
                update = _preconditioned(g, state, beta2, eps1, tmp)
                denom = max(1.0, _norm(update) / (math.sqrt(update.size) * d))
                update *= -alpha / denom
                p._data += update
                touch(p)
        return loss


def _norm(a: np.ndarray) -> float:
    return float(np.sqrt(np.vdot(a, a)))


def _preconditioned(g: np.ndarray, state: dict, beta2: float, eps1: float, tmp) -> np.ndarray:
    """``g / sqrt(v)``, ``v`` the (factored) running second moment, updated here in place."""
    sq = np.multiply(g, g, out=tmp(g, 0))
    if g.ndim > 1:
        row, col = state["row_var"], state["col_var"]
        lerp_(row._data, sq.mean(-1, keepdims=True), beta2, tmp(row._data, 0))
        lerp_(col._data, sq.mean(-2, keepdims=True), beta2, tmp(col._data, 0))
        touch(row)
        touch(col)
        v = np.matmul(row._data, col._data, out=sq)
        v /= np.maximum(row._data.mean(-2, keepdims=True), eps1)
    else:
        variance = state["variance"]
        lerp_(variance._data, sq, beta2, tmp(g, 1))
        touch(variance)
        np.copyto(sq, variance._data)
        v = sq
    np.maximum(v, eps1 * eps1, out=v)
    np.sqrt(v, out=v)
    np.divide(g, v, out=v)
    return v
