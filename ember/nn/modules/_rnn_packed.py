"""RNN / LSTM / GRU over a PackedSequence: the time loop with a batch that shrinks.

Packed data is sorted longest first, so at step ``t`` only the first ``batch_sizes[t]`` rows
are alive. Going forward, rows that stop are set aside as final states; going backward, rows
that start join the state from the initial hidden. Either way every step is one batched cell
call, and all of it is ember ops, so autograd needs nothing special.
"""

from __future__ import annotations

from ember import _creation
from ember._tensor import Tensor
from ember.nn._functional.linear import linear
from ember.nn.utils.rnn import PackedSequence
from ember.ops.joining import cat


def _forward_dir(mod, w: dict, proj: tuple, sizes: list, h: Tensor, c: Tensor | None):
    outs, done_h, done_c = [], [], []
    last = sizes[0]
    for x, bs in zip(proj, sizes):
        if bs < last:  # rows bs.. ended at the previous step: their state is final
            done_h.append(h[bs:])
            h = h[:bs]
            if c is not None:
                done_c.append(c[bs:])
                c = c[:bs]
        last = bs
        h, c = mod._step(w, x, h, c)
        outs.append(h)
    # Rows that ended earlier sit later in the batch, so the pieces go in reverse.
    h_n = cat([h, *done_h[::-1]], 0)
    c_n = cat([c, *done_c[::-1]], 0) if c is not None else None
    return cat(outs, 0), h_n, c_n


def _reverse_dir(mod, w: dict, proj: tuple, sizes: list, h0: Tensor, c0: Tensor | None):
    last = sizes[-1]
    h, c = h0[:last], (c0[:last] if c0 is not None else None)
    outs = [None] * len(sizes)
    for t in range(len(sizes) - 1, -1, -1):
        bs = sizes[t]
        if bs > last:  # rows last..bs start here, from their initial state
            h = cat([h, h0[last:bs]], 0)
            if c is not None:
                c = cat([c, c0[last:bs]], 0)
        last = bs
        h, c = mod._step(w, proj[t], h, c)
        outs[t] = h
    return cat(outs, 0), h, c


def _run_packed(mod, x: Tensor, sizes: list, h0: Tensor, c0: Tensor | None):
    def run_dir(w: dict, x: Tensor, d: int, h: Tensor, c: Tensor | None):
        proj = linear(x, w["weight_ih"], w["bias_ih"]).split(sizes, 0)
        return (_reverse_dir if d else _forward_dir)(mod, w, proj, sizes, h, c)

    return mod._layers(x, h0, c0, run_dir)


def forward_packed(mod, input: PackedSequence, hx):
    """``mod(packed, hx)``: a PackedSequence output and the final state(s) in caller order."""
    data, batch_sizes, sorted_indices, unsorted_indices = input
    if data.ndim != 2:
        raise RuntimeError(f"input must have 2 dimensions, got {data.ndim}")
    if data.shape[-1] != mod.input_size:
        raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                           f"{mod.input_size}, got {data.shape[-1]}")
    weight = mod.weight_ih_l0
    if data.dtype != weight.dtype:
        raise ValueError(f"RNN input dtype ({data.dtype}) does not match weight dtype "
                         f"({weight.dtype}). Convert input: input.to({weight.dtype}), or convert "
                         f"model: model.to({data.dtype})")
    sizes = [int(b) for b in batch_sizes.tolist()]
    lstm = mod.mode == "LSTM"
    real_h = mod.proj_size or mod.hidden_size
    expected = (mod.num_layers * (2 if mod.bidirectional else 1), sizes[0])
    if hx is None:
        h0 = _creation.zeros(*expected, real_h, dtype=data.dtype, device=data.device)
        c0 = _creation.zeros(*expected, mod.hidden_size, dtype=data.dtype,
                             device=data.device) if lstm else None
    else:
        h0, c0 = hx if lstm else (hx, None)
        if sorted_indices is not None:  # the caller's order -> the packed (sorted) order
            h0 = h0.index_select(1, sorted_indices)
            c0 = c0.index_select(1, sorted_indices) if lstm else None
        if lstm:
            mod._check_hidden(h0, (*expected, real_h), "hidden[0] size")
            mod._check_hidden(c0, (*expected, mod.hidden_size), "hidden[1] size")
        else:
            mod._check_hidden(h0, (*expected, mod.hidden_size))
    out, h, c = _run_packed(mod, data, sizes, h0, c0)
    if unsorted_indices is not None:
        h = h.index_select(1, unsorted_indices)
        c = c.index_select(1, unsorted_indices) if lstm else None
    packed = PackedSequence(out, batch_sizes, sorted_indices, unsorted_indices)
    return packed, ((h, c) if lstm else h)
