"""L-BFGS with an optional strong-Wolfe line search (torch.optim.LBFGS).

The search works on the parameters flattened into one vector. Scalars derived from that vector
(dot products, step lengths, curvature estimates) are NumPy scalars of its dtype, which round
exactly as torch's 0-d tensors do; the state keeps them as 0-d tensors, as torch does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from ember._tensor import Tensor
from ember.optim.optimizer import Optimizer, check_lr, touch

__all__ = ["LBFGS"]


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """Minimiser of the cubic through ``(x1, f1)``, ``(x2, f2)`` with slopes ``g1``, ``g2``,
    clamped to ``bounds`` (default: between the points); their midpoint if it has none."""
    if bounds is not None:
        lo, hi = bounds
    else:
        lo, hi = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if not d2_square >= 0:  # no real minimiser (or NaN)
        return (lo + hi) / 2.0
    d2 = np.sqrt(d2_square)
    if x1 <= x2:
        min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(min_pos, lo), hi)


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9,
                  max_ls=25):
    """Line search along ``d`` from ``x`` for a step ``t`` meeting the strong Wolfe conditions
    (sufficient decrease ``c1``, curvature ``c2``): first bracket such a step, then zoom in.
    Returns ``(loss, flat_grad, t, evaluations)`` at the step found."""
    d_norm = np.abs(d).max()
    g = g.copy()
    f_new, g_new = obj_func(x, t, d)
    evals = 1
    gtd_new = g_new.dot(d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    while ls_iter < max_ls:  # bracketing phase
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        # extrapolate, between 1.01 and 10 times the current step
        t_next = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                                    bounds=(t + 0.01 * (t - t_prev), t * 10))
        t_prev, f_prev, g_prev, gtd_prev = t, f_new, g_new.copy(), gtd_new
        t = t_next
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

    # zoom phase: shrink the bracket until a point satisfies the conditions
    insuf_progress = False
    low, high = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0],
                               bracket[1], bracket_f[1], bracket_gtd[1])
        # a trial too close to an end of the bracket (twice, or beyond it) moves to 10% of
        # the bracket's width away from that end
        top, bottom = max(bracket), min(bracket)
        eps = 0.1 * (top - bottom)
        if min(top - t, t - bottom) < eps:
            if insuf_progress or t >= top or t <= bottom:
                t = top - eps if abs(t - top) < abs(t - bottom) else bottom + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low]:
            # not enough decrease, or no better than the low end: the new high end
            bracket[high], bracket_f[high] = t, f_new
            bracket_g[high], bracket_gtd[high] = g_new.copy(), gtd_new
            low, high = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                # the old low end becomes the high end
                bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
                bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
            bracket[low], bracket_f[low] = t, f_new
            bracket_g[low], bracket_gtd[low] = g_new.copy(), gtd_new
    return bracket_f[low], bracket_g[low], bracket[low], evals


def _two_loop(flat_grad, old_dirs, old_stps, ro, H_diag, al) -> np.ndarray:
    """L-BFGS's two-loop recursion: ``-H @ flat_grad``, ``H`` the inverse-Hessian estimate
    from the stored pairs; the first loop's coefficients go into ``al`` (kept in state)."""
    q = -flat_grad
    for i in range(len(old_dirs) - 1, -1, -1):
        al[i] = old_stps[i].dot(q) * ro[i]
        q += float(-al[i]) * old_dirs[i]
    r = q * H_diag
    for i in range(len(old_dirs)):
        be_i = old_dirs[i].dot(r) * ro[i]
        r += float(al[i] - be_i) * old_stps[i]
    return r


def _box(value):
    """A NumPy scalar (or array) as the tensor torch keeps in state; lists item by item."""
    if isinstance(value, list):
        return [_box(v) for v in value]
    if isinstance(value, np.generic | np.ndarray):
        return Tensor._make(np.asarray(value))
    return value


def _unbox(value):
    """The inverse of ``_box``: 0-d tensors become NumPy scalars, others their arrays."""
    if isinstance(value, list):
        return [_unbox(v) for v in value]
    if isinstance(value, Tensor):
        return value._data[()] if value._data.ndim == 0 else value._data
    return value


class LBFGS(Optimizer):
    """L-BFGS over all parameters at once (one param group only); ``step(closure)`` runs up to
    ``max_iter`` iterations, calling ``closure`` (which re-evaluates the loss and its
    gradients) up to ``max_eval`` times.

    >>> opt = ember.optim.LBFGS(model.parameters(), line_search_fn="strong_wolfe")
    >>> opt.step(closure)
    """

    def __init__(self, params, lr: float | Tensor = 1, max_iter: int = 20,
                 max_eval: int | None = None, tolerance_grad: float = 1e-7,
                 tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None) -> None:
        check_lr(lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = {"lr": lr, "max_iter": max_iter, "max_eval": max_eval,
                    "tolerance_grad": tolerance_grad, "tolerance_change": tolerance_change,
                    "history_size": history_size, "line_search_fn": line_search_fn}
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")

    @property
    def _params(self) -> list[Tensor]:
        return self.param_groups[0]["params"]

    def _gather_flat_grad(self) -> np.ndarray:
        return np.concatenate([p._grad._data.ravel() if p._grad is not None
                               else np.zeros(p._data.size, p._data.dtype)
                               for p in self._params])

    def _add_grad(self, step_size, update: np.ndarray) -> None:
        """``p += step_size * update`` for each parameter's slice of ``update``."""
        offset = 0
        for p in self._params:
            n = p._data.size
            p._data += float(step_size) * update[offset:offset + n].reshape(p._data.shape)
            touch(p)
            offset += n

    def _set_param(self, params_data: list[np.ndarray]) -> None:
        for p, data in zip(self._params, params_data, strict=True):
            np.copyto(p._data, data)
            touch(p)

    def _directional_evaluate(self, closure, x, t, d):
        """Loss and flat gradient at ``x + t * d``; the parameters are then put back to ``x``."""
        self._add_grad(t, d)
        loss = float(self._closure_loss(closure))
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    def step(self, closure: Callable[[], Tensor]):  # type: ignore[override]
        """Run up to ``max_iter`` L-BFGS iterations; returns the loss ``closure`` gave first."""
        group = self.param_groups[0]
        lr = group["lr"]
        if isinstance(lr, Tensor):  # a tensor lr acts as a 0-d tensor, as in torch
            lr = lr._data.reshape(())[()]
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]

        # LBFGS's state is global; it lives with the first parameter (so loading casts it)
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = self._closure_loss(closure)
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        opt_cond = np.abs(flat_grad).max() <= tolerance_grad
        if opt_cond:
            return orig_loss

        d, t, old_dirs, old_stps, ro, H_diag, prev_flat_grad, prev_loss, al = (
            _unbox(state.get(k)) for k in ("d", "t", "old_dirs", "old_stps", "ro", "H_diag",
                                           "prev_flat_grad", "prev_loss", "al"))
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1

            # the descent direction: -H @ grad, H the inverse-Hessian estimate
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = y.dot(s)
                if ys > 1e-10:  # keep the pair only while the curvature is positive
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / y.dot(y)
                if al is None:
                    al = [None] * history_size
                d = _two_loop(flat_grad, old_dirs, old_stps, ro, H_diag, al)

            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.copy()
            else:
                np.copyto(prev_flat_grad, flat_grad)
            prev_loss = loss

            # the step length: a first guess, then optionally a line search
            t = min(1.0, 1.0 / np.abs(flat_grad).sum()) * lr if state["n_iter"] == 1 else lr
            gtd = flat_grad.dot(d)
            if gtd > -tolerance_change:  # not a descent direction any more
                break
            ls_func_evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = [p._data.copy() for p in self._params]
                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    functools.partial(self._directional_evaluate, closure), x_init, t, d, loss,
                    flat_grad, gtd, max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                opt_cond = np.abs(flat_grad).max() <= tolerance_grad
            else:
                self._add_grad(t, d)
                if n_iter != max_iter:  # the last iteration's loss would go unused
                    loss = float(self._closure_loss(closure))
                    flat_grad = self._gather_flat_grad()
                    opt_cond = np.abs(flat_grad).max() <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            if (n_iter == max_iter or current_evals >= max_eval or opt_cond
                    or np.abs(d * t).max() <= tolerance_change
                    or abs(loss - prev_loss) < tolerance_change):
                break

        if al is not None:
            state["al"] = _box(al)
        state.update(d=_box(d), t=_box(t), old_dirs=_box(old_dirs), old_stps=_box(old_stps),
                     ro=_box(ro), H_diag=_box(H_diag), prev_flat_grad=_box(prev_flat_grad),
                     prev_loss=prev_loss)
        return orig_loss

