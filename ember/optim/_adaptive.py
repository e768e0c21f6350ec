"""What Adam, RMSprop, Adagrad and their kin (Adadelta, Adamax, NAdam, RAdam, ASGD, Rprop)
share: per-parameter running statistics and their step loop."""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor
from ember.optim.optimizer import (
    Optimizer,
    addcmul_,
    bump_step,
    check_capturable,
    check_flags,
    effective_grad,
    lerp_,
    scratch_of,
    step_tensor,
    steps_to_tensors,
    touch,
)


def check_non_negative(**options) -> None:
    """torch's ``Invalid <name> value`` error for the first option (in the order given) that is
    below zero."""
    for name, value in options.items():
        if not 0.0 <= value:
            raise ValueError(f"Invalid {name} value: {value}")


def check_betas(betas) -> None:
    """torch's range check on Adam-style ``betas``: both in [0, 1)."""
    for i, beta in enumerate(betas[:2]):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {beta}")


def decoupled_decay_(p: Tensor, lr: float, weight_decay: float) -> None:
    """AdamW-style weight decay: shrink the parameter itself, not the gradient."""
    if weight_decay != 0:
        p._data *= 1 - lr * weight_decay
        touch(p)


def adam_moments_(state: dict, g, beta1: float, beta2: float, t0) -> tuple:
    """Adam's running moments, in place as torch orders it: ``exp_avg`` lerps towards ``g``,
    ``exp_avg_sq`` decays by ``beta2`` and adds ``(1 - beta2) * g * g``. Returns both arrays."""
    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
    lerp_(exp_avg._data, g, 1 - beta1, t0)
    exp_avg_sq._data *= beta2
    addcmul_(exp_avg_sq._data, g, g, 1 - beta2, t0)
    touch(exp_avg)
    touch(exp_avg_sq)
    return exp_avg._data, exp_avg_sq._data


def zeros_like(p: Tensor) -> Tensor:
    """A zero-filled state buffer shaped like the parameter."""
    return Tensor._make(np.zeros_like(p._data))


class AdaptiveOptimizer(Optimizer):
    """An optimizer that keeps running statistics of each parameter's gradients in
    ``self.state[p]``, next to a ``step`` counter.

    A subclass writes two methods: ``_new_state(p, group)``, the statistics a parameter starts
    with, and ``_step_group(group, tmp)``, the update of one param group (``tmp`` hands out
    reusable work arrays), which loops over ``self._params_with_grad(group, tmp, wd)``.
    """

    def __init__(self, params, defaults: dict) -> None:
        super().__init__(params, defaults)
        # torch checks the implementation flags once the param groups are built
        check_flags(defaults.get("fused"), defaults["foreach"], defaults["differentiable"])

    #: The 0-d tensors of a parameter's state that old checkpoints stored as plain numbers.
    _scalar_state: tuple[str, ...] = ("step",)

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        steps_to_tensors(self, self._scalar_state)

    def _init_state(self, p: Tensor, group: dict) -> dict:
        """``self.state[p]``, filled with ``step`` and ``_new_state``'s buffers when empty."""
        state = self.state[p]
        if len(state) == 0:
            state["step"] = step_tensor()
            state.update(self._new_state(p, group))
        return state

    _traceable_step = False  # see bump_step

    def _params_with_grad(self, group: dict, tmp, weight_decay: float):
        """``(p, g, state, step)`` for each parameter of ``group`` that has a gradient.

        ``g`` is the gradient the update uses: negated when maximizing, plus ``weight_decay * p``
        (in work arrays, never in ``p.grad``). ``state`` is made on the parameter's first step;
        ``step`` is its count, already advanced by one.
        """
        for p in group["params"]:
            if p._grad is None:
                continue
            state = self._init_state(p, group)
            step = bump_step(state, self._traceable_step)
            yield p, effective_grad(p, group["maximize"], weight_decay, tmp), state, step

    def step(self, closure=None):
        """Perform a single optimization step; returns ``closure()``'s loss if given."""
        loss = self._closure_loss(closure)
        tmp = scratch_of(self)
        for group in self.param_groups:
            self._check_capturable(group)
            self._step_group(group, tmp)
        return loss

    def _check_capturable(self, group: dict) -> None:
        """Refuse ``capturable=True`` as torch does on CPU (in Adam's and RMSprop's words)."""
        if "capturable" in self.defaults:  # not an option of Adagrad
            check_capturable(group)

    def _check_capturable_with_grads(self, group: dict, what: str = "params and state_steps",
                                     xla: bool = True) -> None:
        """The check as most torch optimizers run it: per parameter that has a gradient."""
        if any(p._grad is not None for p in group["params"]):
            check_capturable(group, what, xla)
