"""The gate math of one RNN / LSTM / GRU time step (what the layers and cells call).

LSTM and GRU steps are one fused node each, projections included (an LSTMCell step was five
nodes: two transposes, two addmm and the gates): fewer graph nodes per time step is most of an
RNN's speed in Python. nn.LSTM and nn.GRU project the whole input sequence in one GEMM and pass
each step its slice of that projection. The activations are hidden outputs of the node, so
that backward reads them as torch's composite CPU cell reads its intermediates: saved as torch
saves them (each once per tensor torch's ops save, under the same guards; the projections'
operands as its addmm saves them), and differentiable again through the node (double backward
works). A plain backward runs the same formulas on the arrays, without a graph op each.
"""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor
from ember.amp import _casting
from ember.autograd.function import Op
from ember.autograd.grad_mode import STATE
from ember.nn._functional.linear import _check_dtypes, linear
from ember.ops.joining import cat


def _rnn_cell(x_proj: Tensor, h: Tensor, w_hh: Tensor, b_hh, relu: bool) -> Tensor:
    pre = x_proj + linear(h, w_hh, b_hh)
    return pre.relu() if relu else pre.tanh()


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * np.tanh(0.5 * x) + 0.5  # overflow-free logistic, same dtype


def _chunks(x, n: int) -> list:
    """``n`` equal views along the last axis (np.split's result, without its Python overhead)."""
    k = x.shape[-1] // n
    return [x[..., i * k:(i + 1) * k] for i in range(n)]


def _cat(parts: list):
    """Concatenate along the last axis: Tensors with ``cat``, arrays with NumPy."""
    return cat(parts, -1) if isinstance(parts[0], Tensor) else np.concatenate(parts, -1)


def _grads(formula, ctx, grads: tuple) -> tuple:
    """A cell's gradient ``formula`` on Tensors under create_graph (differentiable again), else
    the same expressions on the arrays, without a graph op each."""
    saved, need = ctx.saved_tensors, ctx.needs_input_grad
    if STATE.enabled:
        return formula(saved, grads, need)
    out = formula([None if t is None else t._data for t in saved],
                  [None if g is None else g._data for g in grads], need)
    return tuple(None if a is None else Tensor._make(a) for a in out)


class _Step(Op):
    """One recurrent step as one node, its inputs named by the keyword ``layout``:
    ``x, h[, c], w_hh[, w_ih][, b_hh[, b_ih]]`` (no ``w_ih`` when ``x`` is the input's
    projection already). The step does both projections itself (what linear's transpose and
    addmm would do, as two more nodes each) and saves what those addmm save: each operand for
    the other's gradient. Subclasses give the gate math: ``_gates`` on arrays, and the gate
    part of the gradient (``_gate_grads``), written once for Tensors and arrays."""

    @classmethod
    def forward(cls, ctx, *ins, layout=()):
        a = dict(zip(layout, ins))
        xp = a["x"] if "w_ih" not in a else _project(a["x"], a["w_ih"], a.get("b_ih"))
        return cls._gates(xp, _project(a["h"], a["w_hh"], a.get("b_hh")), a)

    @classmethod
    def backward(cls, ctx, *grads):
        return _grads(cls._step_grads, ctx, grads)

    @classmethod
    def _step_grads(cls, saved, grads, need) -> tuple:
        layout, inputs = cls.layout, cls.saved_inputs
        a = dict(zip(inputs, saved))
        need = {r for r, n in zip(layout, need) if n}
        d_xp, d_hp, out = cls._gate_grads(a, saved[len(inputs):], grads, need)
        for d, inp, w, b in ((d_hp, "h", "w_hh", "b_hh"), (d_xp, "x", "w_ih", "b_ih")):
            if d is None:
                continue
            if inp in need:  # x given projected: its gradient is the projection's
                g = d if w not in layout else d @ a[w]
                out[inp] = g if out.get(inp) is None else out[inp] + g
            if w in need:
                out[w] = d.T @ a[inp]
            if b in need:
                out[b] = d.sum(0)
        return tuple(out.get(r) if r in need else None for r in layout)


def _project(x: np.ndarray, w: np.ndarray, b) -> np.ndarray:
    """``x @ w.T (+ b)``: what nn.Linear's mm / addmm compute, in the same order."""
    out = x @ w.T
    if b is not None:
        out += b
    return out


class LSTMCellFused(_Step):
    """The LSTM step: gates = x W_ih^T + b_ih + h W_hh^T + b_hh (i, f, g, o) -> (h', c'),
    plus the activations (sigmoid i, f, o, tanh g, tanh c) as hidden outputs."""

    node_name = "LSTMCellBackward0"
    state = ("h", "c")
    state_saves = (("c", "gates"),)  # c_prev, for f's gradient
    # outputs: 0 h, 1 c, 2 si, 3 sf, 4 tg, 5 so, 6 tc; saved as torch's sigmoid/tanh nodes
    # (si, sf, tg, so), f * cx (sf for cx, cx for f), i * g, tanh(c), o * tanh(c) save them.
    saves_output = (2, 3, 4, 5, 3, 2, 4, 6, 5, 6)
    output_guards = ("gates", "gates", "gates", "gates", ("c",), "gates", "gates", None, None,
                     "gates")

    @staticmethod
    def _gates(xp, hp, a):
        i, f, g, o = _chunks(xp + hp, 4)
        si, sf, so, tg = _sigmoid(i), _sigmoid(f), _sigmoid(o), np.tanh(g)
        c = sf * a["c"] + si * tg
        tc = np.tanh(c)
        return so * tc, c, si, sf, tg, so, tc

    @staticmethod
    def _gate_grads(a, saved_out, grads, need) -> tuple:
        si, sf, tg, so, sf2, _, _, tc, so2, _ = saved_out
        gh, gc, gsi, gsf, gtg, gso, gtc = grads
        sf = sf if sf is not None else sf2  # (saved twice, under different guards)
        so = so if so is not None else so2
        if gh is not None:
            gtc, gso = _add(gtc, gh * so), _add(gso, gh * tc)
        dc = _add(gc, _mul(gtc, 1 - tc * tc))
        d_gates = None
        if need - {"c"}:
            grads = (_add(gsi, _mul(dc, tg)), _add(gsf, _mul(dc, a["c"])),
                     _add(gtg, _mul(dc, si)), gso)
            local = (si * (1 - si), sf * (1 - sf), 1 - tg * tg, so * (1 - so))
            d_gates = _cat([d * 0 if g is None else g * d for g, d in zip(grads, local)])
        return d_gates, d_gates, {"c": _mul(dc, sf) if "c" in need else None}


def _add(a, b):
    """``a + b`` where either may be None (no gradient)."""
    return b if a is None else a if b is None else a + b


def _mul(a, b):
    return None if a is None else a * b


class GRUCellFused(_Step):
    """The GRU step: r, z = sigmoid(xp_r + hp_r), sigmoid(xp_z + hp_z), n = tanh(xp_n + r hp_n),
    h' = (1 - z) n + z h, with xp, hp the input's and the state's projections; r, z, n, h - n
    and hp are hidden outputs."""

    node_name = "GRUCellBackward0"
    state = ("h",)
    state_saves = ()
    # outputs: 0 h', 1 r, 2 z, 3 n, 4 h - n, 5 hp; saved as torch's hn.mul_(r) (hn, i.e. the
    # hidden projection, for r; r for hn), sigmoid (r, z), tanh (n), (h - n).mul_(z) save them.
    saves_output = (5, 1, 2, 1, 3, 2, 4)
    output_guards = ("gates", "gates", "gates", "hproj", "gates", None, "gates")

    @staticmethod
    def _gates(xp, hp, a):
        xr, xz, xn = _chunks(xp, 3)
        hr, hz, hn = _chunks(hp, 3)
        r, z = _sigmoid(xr + hr), _sigmoid(xz + hz)
        n = np.tanh(xn + r * hn)
        hmn = a["h"] - n
        return n + z * hmn, r, z, n, hmn, hp  # (1 - z) * n + z * h

    @staticmethod
    def _gate_grads(a, saved_out, grads, need) -> tuple:
        hp, r, z, r2, n, z2, hmn = saved_out
        g, gr, gz, gn, ghmn, ghp = grads
        r = r if r is not None else r2
        z = z if z is not None else z2
        d_hmn = _add(ghmn, _mul(g, z))
        dz = _add(gz, _mul(g, hmn))
        dn = _add(_add(gn, g), _mul(d_hmn, -1))
        d_an = _mul(dn, 1 - n * n)
        dr = _add(gr, _mul(d_an, _chunks(hp, 3)[2]))
        zero = r * 0
        d_ar = zero if dr is None else dr * (r * (1 - r))
        d_az = zero if dz is None else dz * (z * (1 - z))
        d_an = zero if d_an is None else d_an
        d_hp = _add(ghp, _cat([d_ar, d_az, d_an * r]))
        return _cat([d_ar, d_az, d_an]), d_hp, {"h": d_hmn}


_OPS: dict = {}


def _step_op(base: type, layout: tuple) -> type:
    """``base`` for one input ``layout``, saving as torch's composite step saves: each
    projection's operands for each other's gradient, the state's entries, the outputs; an
    entry only when a gradient that reads it will run (a guard)."""
    op = _OPS.get((base, layout))
    if op is not None:
        return op
    idx = {r: i for i, r in enumerate(layout)}
    groups = {"gates": tuple(i for r, i in idx.items() if r != "c"),
              "hproj": tuple(idx[r] for r in ("h", "w_hh", "b_hh") if r in idx)}
    inputs = (("h", ("w_hh",)), ("w_hh", ("h",)),
              *((("x", ("w_ih",)), ("w_ih", ("x",))) if "w_ih" in idx else ()),
              *base.state_saves)

    def guard(g):
        return None if g is None else groups[g] if isinstance(g, str) else \
            tuple(idx[r] for r in g)
    op = _OPS[(base, layout)] = type(base.__name__, (base,), {
        "__module__": base.__module__, "node_name": base.node_name, "layout": layout,
        "saved_inputs": tuple(r for r, _ in inputs), "saves": tuple(idx[r] for r, _ in inputs),
        "save_for": tuple(guard(g) for _, g in inputs) + tuple(map(guard, base.output_guards))})
    return op


def _step(base: type, x: Tensor, h: Tensor, c, w_hh: Tensor, b_hh, w_ih, b_ih) -> tuple:
    if _casting._state.on:  # an autocast region: the projections are linear ops, cast as such
        h, w_hh, b_hh, x, w_ih, b_ih = _autocast_projections(h, w_hh, b_hh, x, w_ih, b_ih)
    for inp, w, b in ((h, w_hh, b_hh), (x, w_ih, b_ih)):  # linear's dtype errors
        if w is not None and (inp._data.dtype != w._data.dtype or
                              b is not None and b._data.dtype != w._data.dtype):
            _check_dtypes(inp, w, b)
    ins = {"x": x, "h": h, "c": c, "w_hh": w_hh, "w_ih": w_ih, "b_hh": b_hh, "b_ih": b_ih}
    layout = tuple(r for r in ("x", "h", "c", "w_hh", "w_ih", "b_hh", "b_ih")
                   if ins[r] is not None)
    return _step_op(base, layout).apply(*(ins[r] for r in layout), layout=layout)


def _autocast_projections(*ts) -> tuple:
    """The step's two projections as autocast casts ``linear``'s operands (torch's composite
    cell runs two listed ``linear`` ops); ``x`` is already a projection when ``w_ih`` is None."""
    dev = "cpu" if isinstance(ts[0]._data, np.ndarray) else "cuda"
    if not _casting._state.enabled[dev]:
        return ts
    to = _casting._state.dtype[dev]
    h, w_hh, b_hh, x, w_ih, b_ih = (_casting._cast(t, to, dev) for t in ts)
    return (h, w_hh, b_hh, x if w_ih is not None else ts[3], w_ih, b_ih)


def _lstm_cell(x: Tensor, h: Tensor, c: Tensor, w_hh: Tensor, b_hh, w_hr=None, w_ih=None,
               b_ih=None):
    """One LSTM step -> (h', c'); ``x`` is the step's input projection when ``w_ih`` is None."""
    h, c = _step(LSTMCellFused, x, h, c, w_hh, b_hh, w_ih, b_ih)[:2]
    if w_hr is not None:
        h = linear(h, w_hr)
    return h, c


def _gru_cell(x: Tensor, h: Tensor, w_hh: Tensor, b_hh, w_ih=None, b_ih=None) -> Tensor:
    """One GRU step -> h'; ``x`` is the step's input projection when ``w_ih`` is None."""
    return _step(GRUCellFused, x, h, None, w_hh, b_hh, w_ih, b_ih)[0]
