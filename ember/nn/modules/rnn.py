"""RNN, LSTM, GRU and their cells, built from ember ops (autograd through the time loop).

Each layer projects the whole input sequence with one GEMM, then steps through time (one
Python iteration per step, batched over the batch) adding the recurrent projection.
"""

from __future__ import annotations

import math
import warnings

from ember import _creation
from ember._tensor import Tensor
from ember.nn import init
from ember.nn._functional.dropout import dropout as _dropout
from ember.nn._functional.linear import linear
from ember.nn.modules._rnn_cells import _gru_cell, _lstm_cell, _rnn_cell
from ember.nn.modules._rnn_packed import forward_packed
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter
from ember.nn.utils.rnn import PackedSequence
from ember.ops.joining import cat, stack

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


class RNNBase(Module):
    """Shared parameters, checks and the layer / direction / time loops."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional = float(dropout), bidirectional
        self.proj_size = proj_size
        if not isinstance(dropout, int | float) or not 0 <= dropout <= 1 or \
                isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=2)
        if not isinstance(hidden_size, int) or hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        gate = _GATES[mode] * hidden_size
        real_h = proj_size or hidden_size
        dirs = 2 if bidirectional else 1
        self._flat_weights_names = []
        for layer in range(num_layers):
            for d in range(dirs):
                layer_in = input_size if layer == 0 else real_h * dirs
                sfx = f"_l{layer}{'_reverse' if d else ''}"
                shapes = [("weight_ih", (gate, layer_in)), ("weight_hh", (gate, real_h))]
                if bias:
                    shapes += [("bias_ih", (gate,)), ("bias_hh", (gate,))]
                if proj_size:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                for name, shape in shapes:
                    setattr(self, name + sfx, Parameter(_creation.empty(shape, dtype=dtype)))
                    self._flat_weights_names.append(name + sfx)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every weight and bias uniform in +-1/sqrt(hidden_size), as torch."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def flatten_parameters(self) -> None:
        """A no-op, as in torch off the GPU (there it packs the weights for cuDNN); programs
        call it after ``.to(device)`` or DataParallel."""

    @property
    def all_weights(self) -> list:
        n = len(self._flat_weights_names) // (self.num_layers * (2 if self.bidirectional else 1))
        names = self._flat_weights_names
        return [[getattr(self, w) for w in names[i:i + n]] for i in range(0, len(names), n)]

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # --- forward -------------------------------------------------------------------------
    def _weights(self, layer: int, d: int) -> dict:
        sfx = f"_l{layer}{'_reverse' if d else ''}"
        get = self._parameters.get
        return {k: get(k + sfx) for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh",
                                          "weight_hr")}

    def _prepare(self, input: Tensor, hx, name: str):
        if input.ndim not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.ndim}D instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.shape[-1]}")
        batched = input.ndim == 3
        if not batched:
            input = input.unsqueeze(1)
        elif self.batch_first:
            input = input.transpose(0, 1)
        return input, batched

    def _check_hidden(self, h: Tensor, expected: tuple, what: str = "hidden size") -> None:
        if tuple(h.shape) != expected:
            raise RuntimeError(f"Expected {what} {expected}, got {list(h.shape)}")

    def _zeros(self, x: Tensor, size: int) -> Tensor:
        dirs = 2 if self.bidirectional else 1
        return _creation.zeros(self.num_layers * dirs, x.shape[1], size, dtype=x.dtype,
                               device=x.device)

    def _step(self, w: dict, x_proj: Tensor, h: Tensor, c):
        """One time step from the projected input: the new (h, c); c is None but for LSTM."""
        if self.mode == "LSTM":
            return _lstm_cell(x_proj, h, c, w["weight_hh"], w["bias_hh"], w["weight_hr"])
        if self.mode == "GRU":
            return _gru_cell(x_proj, h, w["weight_hh"], w["bias_hh"]), None
        return _rnn_cell(x_proj, h, w["weight_hh"], w["bias_hh"], self.mode == "RNN_RELU"), None

    def _layers(self, x: Tensor, h0: Tensor, c0, run_dir):
        """The layer and direction loop shared by padded and packed input.

        ``run_dir(w, x, d, h, c)`` runs one direction of one layer over the whole sequence
        and returns its output and final (h, c). Returns the last layer's output and the
        final states stacked (c is None but for LSTM)."""
        dirs = 2 if self.bidirectional else 1
        hs, cs = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                k = layer * dirs + d
                out, h, c = run_dir(self._weights(layer, d), x, d, h0[k],
                                    c0[k] if c0 is not None else None)
                outs.append(out)
                hs.append(h)
                cs.append(c)
            x = outs[0] if dirs == 1 else cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = _dropout(x, self.dropout, True)
        return x, stack(hs, 0), (stack(cs, 0) if c0 is not None else None)

    def _run(self, x: Tensor, h0: Tensor, c0=None):
        """x: (T, B, F). Returns the output (T, B, D * H) and final h (and c) stacked."""
        return self._layers(x, h0, c0, self._run_dir)

    def _run_dir(self, w: dict, x: Tensor, d: int, h: Tensor, c):
        # All time steps in one GEMM; unbind gives one node whose backward stacks the
        # per-step grads (indexing per step would sum T dense grads).
        proj = linear(x, w["weight_ih"], w["bias_ih"]).unbind(0)
        seq = [None] * len(proj)
        for t in (range(len(proj) - 1, -1, -1) if d else range(len(proj))):
            h, c = self._step(w, proj[t], h, c)
            seq[t] = h
        return stack(seq, 0), h, c

    def _forward_h(self, input: Tensor, hx, name: str):
        """Forward of the single-state RNNs (RNN, GRU): returns (output, h_n)."""
        if isinstance(input, PackedSequence):
            return forward_packed(self, input, hx)
        x, batched = self._prepare(input, hx, name)
        h0 = _check_h(self, hx, x, batched)
        out, h, _ = self._run(x, h0)
        return self._finish(out, batched), h if batched else h.squeeze(1)

    def _finish(self, out: Tensor, batched: bool) -> Tensor:
        if not batched:
            return out.squeeze(1)
        return out.transpose(0, 1) if self.batch_first else out


class RNN(RNNBase):
    """Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, device=None,
                 dtype=None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             "'relu'.")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size,
                         hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor | PackedSequence, hx: Tensor | None = None):
        return self._forward_h(input, hx, "RNN")


class GRU(RNNBase):
    """Gated recurrent unit (torch's gate order: reset, update, new)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, device=None, dtype=None, **kw) -> None:
        if kw.get("proj_size"):
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, device=device, dtype=dtype)

    def forward(self, input: Tensor | PackedSequence, hx: Tensor | None = None):
        return self._forward_h(input, hx, "GRU")


def _check_h(mod: RNNBase, hx, x: Tensor, batched: bool) -> Tensor:
    if hx is None:
        return mod._zeros(x, mod.hidden_size)
    if batched and hx.ndim != 3:
        raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {hx.ndim}-D "
                           "tensor")
    if not batched:
        if hx.ndim != 2:
            raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got "
                               f"{hx.ndim}-D tensor")
        hx = hx.unsqueeze(1)
    dirs = 2 if mod.bidirectional else 1
    mod._check_hidden(hx, (mod.num_layers * dirs, x.shape[1], mod.hidden_size))
    return hx


class LSTM(RNNBase):
    """Long short-term memory (gate order: input, forget, cell, output); ``proj_size`` too."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None,
                 dtype=None) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, device=device, dtype=dtype)

    def forward(self, input: Tensor | PackedSequence, hx=None):
        if isinstance(input, PackedSequence):
            return forward_packed(self, input, hx)
        x, batched = self._prepare(input, hx, "LSTM")
        real_h = self.proj_size or self.hidden_size
        dirs = 2 if self.bidirectional else 1
        if hx is None:
            h0, c0 = self._zeros(x, real_h), self._zeros(x, self.hidden_size)
        else:
            h0, c0 = hx
            if not batched:
                if h0.ndim != 2 or c0.ndim != 2:
                    raise RuntimeError("For unbatched 2-D input, hx and cx should also be 2-D "
                                       f"but got ({h0.ndim}-D, {c0.ndim}-D) tensors")
                h0, c0 = h0.unsqueeze(1), c0.unsqueeze(1)
            elif h0.ndim != 3 or c0.ndim != 3:
                raise RuntimeError("For batched 3-D input, hx and cx should also be 3-D but got "
                                   f"({h0.ndim}-D, {c0.ndim}-D) tensors")
            n = self.num_layers * dirs
            self._check_hidden(h0, (n, x.shape[1], real_h), "hidden[0] size")
            self._check_hidden(c0, (n, x.shape[1], self.hidden_size), "hidden[1] size")
        out, h, c = self._run(x, h0, c0)
        if not batched:
            h, c = h.squeeze(1), c.squeeze(1)
        return self._finish(out, batched), (h, c)


# --- cells -------------------------------------------------------------------------------


class RNNCellBase(Module):
    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device=None, dtype=None) -> None:
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        g = num_chunks * hidden_size
        self.weight_ih = Parameter(_creation.empty(g, input_size, dtype=dtype))
        self.weight_hh = Parameter(_creation.empty(g, hidden_size, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(_creation.empty(g, dtype=dtype))
            self.bias_hh = Parameter(_creation.empty(g, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _prepare(self, input: Tensor, hx, hidden_size: int):
        name = type(self).__name__
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[-1]} "
                               f"expected {self.input_size}")
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        if hx is None:
            return x, None, batched
        if hx.ndim != x.ndim - (0 if batched else 1) and batched:
            raise ValueError(f"{name}: Expected hidden to be 2D, got {hx.ndim}D instead")
        h = hx if batched else hx.unsqueeze(0)
        if h.shape[-1] != hidden_size:
            raise RuntimeError(f"hidden{'[0]' if isinstance(self, LSTMCell) else ''} has "
                               f"inconsistent hidden_size: got {h.shape[-1]}, expected "
                               f"{hidden_size}")
        return x, h, batched

    def _zeros(self, x: Tensor) -> Tensor:
        return _creation.zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)


class RNNCell(RNNCellBase):
    """One Elman RNN step."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device=None, dtype=None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, h, batched = self._prepare(input, hx, self.hidden_size)
        h = self._zeros(x) if h is None else h
        out = _rnn_cell(linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh,
                        self.bias_hh, self.nonlinearity == "relu")
        return out if batched else out.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step; returns ``(h, c)``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input: Tensor, hx=None):
        x, h, batched = self._prepare(input, None if hx is None else hx[0], self.hidden_size)
        if h is None:
            h = c = self._zeros(x)
        else:
            c = hx[1] if batched else hx[1].unsqueeze(0)
        h, c = _lstm_cell(linear(x, self.weight_ih, self.bias_ih), h, c, self.weight_hh,
                          self.bias_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, h, batched = self._prepare(input, hx, self.hidden_size)
        h = self._zeros(x) if h is None else h
        out = _gru_cell(linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh,
                        self.bias_hh)
        return out if batched else out.squeeze(0)


__all__ = ["GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNBase", "RNNCell", "RNNCellBase"]
