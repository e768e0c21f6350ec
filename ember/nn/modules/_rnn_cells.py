"""The LSTM and GRU time step as one graph node each (ember's LSTMCellBackward0 and
GRUCellBackward0; torch's CPU graph has a dozen small nodes per step instead).

A step's node takes the step's input, the state and the weights, and does both projections
and the gate math itself: one node per step where linear would add a transpose and an addmm
per projection, which is most of an RNN's speed in Python. nn.LSTM and nn.GRU project the whole
sequence in one GEMM first and pass each step's slice of that projection instead of the input.

A plain backward runs on arrays from the forward's activations, with the products the linear
nodes' backward would compute; under create_graph the step is recomputed with ember ops
(linear, sigmoid, tanh, ...), so that double backward works.
"""

from __future__ import annotations

import numpy as np

from ember._backend import xp_of
from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.autograd.grad_mode import STATE
from ember.nn._functional.linear import _check_dtypes, linear
from ember.ops.joining import cat


def _chunks(x, n: int) -> list:
    """``n`` equal views along the last axis (np.split's result, without its Python overhead)."""
    k = x.shape[-1] // n
    return [x[..., i * k:(i + 1) * k] for i in range(n)]


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * np.tanh(0.5 * x) + 0.5  # overflow-free logistic, same dtype


def _layout(state: tuple, projected: bool, bias: bool) -> tuple:
    """The roles of a step op's inputs, in order: x, the state, the weights, the biases."""
    return ("x", *state, "w_hh", *(() if projected else ("w_ih",)),
            *(("b_hh",) if projected else ("b_hh", "b_ih")) * bias)


class _Step(Op):
    """One recurrent step; ``layout`` (a keyword) names the inputs. Subclasses give the gate
    math on arrays and on Tensors; the projections and their gradients live here."""

    @classmethod
    def forward(cls, ctx, *ins, layout=()):
        a = dict(zip(layout, ins))
        xp = a["x"] if "w_ih" not in a else _project(a["x"], a["w_ih"], a.get("b_ih"))
        ctx.layout = layout
        return cls._gates(ctx, xp, _project(a["h"], a["w_hh"], a.get("b_hh")), a)

    @classmethod
    def backward(cls, ctx, *grads):
        a = dict(zip(ctx.layout, ctx.saved_tensors))
        need = {k for k, n in zip(ctx.layout, ctx.needs_input_grad) if n}
        if STATE.enabled:
            xp = a["x"] if "w_ih" not in a else linear(a["x"], a["w_ih"], a.get("b_ih"))
            d_xp, d_hp, out = cls._tensor_grads(xp, linear(a["h"], a["w_hh"], a.get("b_hh")),
                                                a, grads)
            proj_grads = _tensor_proj_grads
        else:
            d_xp, d_hp, out = cls._array_grads(ctx, {k: t._data for k, t in a.items()},
                                               [None if g is None else g._data for g in grads])
            proj_grads = _array_proj_grads
        proj_grads(d_hp, ("h", "w_hh", "b_hh"), a, need, out)
        proj_grads(d_xp, ("x", "w_ih", "b_ih"), a, need, out)
        if not STATE.enabled:
            out = {k: Tensor._make(g) for k, g in out.items()}
        return tuple(out.get(k) if k in need else None for k in ctx.layout)


def _project(x: np.ndarray, w: np.ndarray, b) -> np.ndarray:
    """``x @ w.T (+ b)``: what nn.Linear's mm / addmm compute, in the same order."""
    out = x @ w.T
    if b is not None:
        out += b
    return out


def _array_proj_grads(d, roles: tuple, a: dict, need: set, out: dict) -> None:
    """Gradients through ``inp @ w.T + b`` for ``roles = (inp, w, b)``: the products linear's
    backward does, the bias's sum over the batch as the engine's. If ``inp`` was given
    projected (no ``w``), its gradient is ``d`` itself."""
    inp, w, b = roles
    if inp in need:
        g = d if w not in a else d @ a[w]._data
        out[inp] = g if inp not in out else out[inp] + g
    if w in need:
        out[w] = d.T @ a[inp]._data
    if b in need:
        out[b] = d.sum(axis=0)


def _tensor_proj_grads(d: Tensor, roles: tuple, a: dict, need: set, out: dict) -> None:
    """``_array_proj_grads`` with ember ops (create_graph)."""
    inp, w, b = roles
    if inp in need:
        g = d if w not in a else d.mm(a[w])
        out[inp] = g if inp not in out else out[inp] + g
    if w in need:
        out[w] = d.t().mm(a[inp])
    if b in need:
        out[b] = d.sum(0)


class LSTMCellFused(_Step):
    """gates = x W_ih^T + b_ih + h W_hh^T + b_hh (order i, f, g, o) -> (h', c')."""

    node_name = "LSTMCellBackward0"

    @staticmethod
    def _gates(ctx, xp, hp, a):
        i, f, g, o = _chunks(xp + hp, 4)
        si, sf, so, tg = _sigmoid(i), _sigmoid(f), _sigmoid(o), np.tanh(g)
        c = sf * a["c"] + si * tg
        tc = np.tanh(c)
        ctx.acts = (si, sf, so, tg, tc)
        return so * tc, c

    @staticmethod
    def _array_grads(ctx, a: dict, grads: list):
        """The gates' gradient (one array, i f g o) and c's, from the forward's activations:
        the create_graph formulas below, in the same order, on arrays."""
        gh, gc = grads
        si, sf, so, tg, tc = ctx.acts
        if gh is None:
            dc = gc
        else:
            dc = gh * so * (1 - tc * tc)
            if gc is not None:
                dc += gc
        d = xp_of(si).empty(si.shape[:-1] + (4 * si.shape[-1],), dtype=si.dtype)
        di, df, dg, do = _chunks(d, 4)
        np.multiply(dc * tg * si, 1 - si, out=di)
        np.multiply(dc * a["c"] * sf, 1 - sf, out=df)
        np.multiply(dc * si, 1 - tg * tg, out=dg)
        if gh is None:
            do[...] = 0
        else:
            np.multiply(gh * tc * so, 1 - so, out=do)
        return d, d, {"c": dc * sf}

    @staticmethod
    def _tensor_grads(xp, hp, a: dict, grads: tuple):
        gh, gc = grads
        i, f, g, o = (xp + hp).chunk(4, -1)
        si, sf, so, tg = i.sigmoid(), f.sigmoid(), o.sigmoid(), g.tanh()
        tc = (sf * a["c"] + si * tg).tanh()
        dc = gc if gh is None else gh * so * (1 - tc * tc) + (0 if gc is None else gc)
        d = cat([dc * tg * si * (1 - si), dc * a["c"] * sf * (1 - sf), dc * si * (1 - tg * tg),
                 (gh * tc * so * (1 - so)) if gh is not None else (so * 0)], -1)
        return d, d, {"c": dc * sf}


class GRUCellFused(_Step):
    """r, z = sigmoid(xp_r + hp_r), sigmoid(xp_z + hp_z); n = tanh(xp_n + r hp_n);
    h' = (1 - z) n + z h, with xp, hp the input's and the state's projections."""

    node_name = "GRUCellBackward0"

    @staticmethod
    def _gates(ctx, xp, hp, a):
        xr, xz, xn = _chunks(xp, 3)
        hr, hz, hn = _chunks(hp, 3)
        r, z = _sigmoid(xr + hr), _sigmoid(xz + hz)
        n = np.tanh(xn + r * hn)
        ctx.acts = (r, z, n, hn)
        return n + z * (a["h"] - n)  # (1 - z) * n + z * h

    @staticmethod
    def _array_grads(ctx, a: dict, grads: list):
        (g,) = grads
        r, z, n, hn = ctx.acts
        dn = g * (1 - z) * (1 - n * n)
        dr = dn * hn * r * (1 - r)
        dz = g * (a["h"] - n) * z * (1 - z)
        return (np.concatenate([dr, dz, dn], -1), np.concatenate([dr, dz, dn * r], -1),
                {"h": g * z})

    @staticmethod
    def _tensor_grads(xp, hp, a: dict, grads: tuple):
        (g,) = grads
        xr, xz, xn = xp.chunk(3, -1)
        hr, hz, hn = hp.chunk(3, -1)
        r, z = (xr + hr).sigmoid(), (xz + hz).sigmoid()
        n = (xn + r * hn).tanh()
        dn = g * (1 - z) * (1 - n * n)
        dr = dn * hn * r * (1 - r)
        dz = g * (a["h"] - n) * z * (1 - z)
        return cat([dr, dz, dn], -1), cat([dr, dz, dn * r], -1), {"h": g * z}


_OPS: dict = {}


def _step_op(base: type, n: int) -> type:
    """``base`` saving its ``n`` inputs (the count depends on the layout)."""
    op = _OPS.get((base, n))
    if op is None:
        op = _OPS[(base, n)] = type(base.__name__, (base,), {
            "saves": tuple(range(n)), "__module__": base.__module__, "node_name": base.node_name})
    return op


def _check(x: Tensor, w_ih, b_ih, h: Tensor, w_hh: Tensor, b_hh) -> None:
    """linear's dtype errors, which the unfused projections raised."""
    dt = w_hh._data.dtype
    if h._data.dtype != dt or (b_hh is not None and b_hh._data.dtype != dt):
        _check_dtypes(h, w_hh, b_hh)
    if w_ih is not None and (x._data.dtype != w_ih._data.dtype or
                             (b_ih is not None and b_ih._data.dtype != w_ih._data.dtype)):
        _check_dtypes(x, w_ih, b_ih)


def _run(base: type, state: tuple, x, h, c, w_hh, b_hh, w_ih, b_ih):
    _check(x, w_ih, b_ih, h, w_hh, b_hh)
    projected, bias = w_ih is None, b_hh is not None
    layout = _layout(state, projected, bias)
    ins = (x, h, *(() if c is None else (c,)), w_hh, *(() if projected else (w_ih,)),
           *((b_hh,) if projected else (b_hh, b_ih)) * bias)
    return _step_op(base, len(ins)).apply(*ins, layout=layout)


def lstm_step(x: Tensor, h: Tensor, c: Tensor, w_hh: Tensor, b_hh=None, w_ih=None, b_ih=None):
    """One LSTM step -> (h', c'); ``x`` is the step's input projection when ``w_ih`` is None."""
    return _run(LSTMCellFused, ("h", "c"), x, h, c, w_hh, b_hh, w_ih, b_ih)


def gru_step(x: Tensor, h: Tensor, w_hh: Tensor, b_hh=None, w_ih=None, b_ih=None) -> Tensor:
    """One GRU step -> h'; ``x`` is the step's input projection when ``w_ih`` is None."""
    return _run(GRUCellFused, ("h",), x, h, None, w_hh, b_hh, w_ih, b_ih)
