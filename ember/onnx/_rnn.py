"""LSTM, GRU and RNN modules as ONNX's LSTM / GRU / RNN nodes, one node per layer.

torch stacks the gates of an LSTM as (input, forget, cell, output) and ONNX as (input, output,
forget, cell); a GRU's as (reset, update, new) against ONNX's (update, reset, hidden). torch's
GRU applies the reset gate after the hidden projection: ONNX's ``linear_before_reset=1``.
"""

from __future__ import annotations

import numpy as np

from ember.onnx._graph import Call, converts

_ORDER = {"LSTM": [0, 3, 1, 2], "GRU": [1, 0, 2], "RNN_TANH": [0], "RNN_RELU": [0]}


def _gates(w: np.ndarray, mode: str) -> np.ndarray:
    return np.concatenate([np.asarray(p) for p in
                           (np.split(w, len(_ORDER[mode]))[i] for i in _ORDER[mode])])


def _layer_weights(c: Call, mod, layer: int) -> list:
    """W, R, B of one layer, both directions stacked, in ONNX's gate order."""
    dirs = ("", "_reverse") if mod.bidirectional else ("",)
    ws, rs, bs = [], [], []
    for sfx in dirs:
        p = {k: getattr(mod, f"{k}_l{layer}{sfx}", None)
             for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}
        ws.append(_gates(p["weight_ih"]._data, mod.mode))
        rs.append(_gates(p["weight_hh"]._data, mod.mode))
        zeros = np.zeros(ws[-1].shape[0], ws[-1].dtype)
        bs.append(np.concatenate([zeros if p[k] is None else _gates(p[k]._data, mod.mode)
                                  for k in ("bias_ih", "bias_hh")]))
    base = c.g.params.get(id(mod.weight_ih_l0._data), ("weight_ih_l0",))[0]
    prefix = base[:-len("weight_ih_l0")]
    return [c.g.initializer(np.stack(a), f"{prefix}onnx_{k}_l{layer}")
            for a, k in ((ws, "W"), (rs, "R"), (bs, "B"))]


@converts("LSTM", "GRU", "RNN_TANH", "RNN_RELU")
def _rnn(c: Call):
    mod = c.kw["module"]
    if len(c.ins) == 0 or c.entry.inputs[0].__class__.__name__ == "PackedSequence":
        c.fail("packed sequences do not export")
    if getattr(mod, "proj_size", 0):
        c.fail("an LSTM with proj_size does not export")
    if mod.training and mod.dropout and mod.num_layers > 1:
        c.fail("dropout between layers in training mode does not export")
    mode, d = mod.mode, 2 if mod.bidirectional else 1
    batched = c.ins[0].ndim == 3
    x = c.x[0]
    states = list(c.x[1:])
    if not batched:
        x = c.node("Unsqueeze", [x, c.ints([1])])
        states = [c.node("Unsqueeze", [h, c.ints([1])]) for h in states]
    elif mod.batch_first:
        x = c.node("Transpose", [x], perm=[1, 0, 2])
    op = {"LSTM": "LSTM", "GRU": "GRU"}.get(mode, "RNN")
    attrs = {"hidden_size": mod.hidden_size,
             "direction": "bidirectional" if d == 2 else "forward"}
    if op == "GRU":
        attrs["linear_before_reset"] = 1
    if op == "RNN":
        attrs["activations"] = ["Relu" if mode == "RNN_RELU" else "Tanh"] * d
    finals: list = [[] for _ in range(2 if op == "LSTM" else 1)]
    for layer in range(mod.num_layers):
        inits = [c.node("Slice", [h, c.ints([layer * d]), c.ints([layer * d + d]), c.ints([0])])
                 for h in states]
        y, *hs = c.node(op, [x, *_layer_weights(c, mod, layer), "", *inits],
                        1 + len(finals), **attrs)
        for acc, h in zip(finals, hs):
            acc.append(h)
        # (T, D, N, H) -> (T, N, D * H): the next layer's input and the output
        x = c.node("Reshape", [c.node("Transpose", [y], perm=[0, 2, 1, 3]), c.ints([0, 0, -1])])
    hs = [acc[0] if len(acc) == 1 else c.node("Concat", acc, axis=0) for acc in finals]
    if not batched:
        axis = c.ints([1])
        return [c.node("Squeeze", [x, axis])] + [c.node("Squeeze", [h, axis]) for h in hs]
    if mod.batch_first:
        x = c.node("Transpose", [x], perm=[1, 0, 2])
    return [x, *hs]
