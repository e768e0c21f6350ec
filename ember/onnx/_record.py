"""Record a forward as a flat list of ember ops (``Entry``), through the profiler's hook in
``Op.apply``; recurrent modules are recorded whole, as one entry each (ONNX has LSTM, GRU and
RNN nodes, and an unrolled loop would fix the sequence length and the batch size)."""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor
from ember.autograd import function
from ember.autograd.grad_mode import enable_grad


class Entry:
    """One recorded call: ``op`` (an Op class, or an RNN module), its tensor inputs, its keyword
    arguments, its outputs (tensors, or None where an op returned no tensor)."""

    __slots__ = ("op", "inputs", "kw", "outputs")

    def __init__(self, op, inputs: tuple, kw: dict, outputs: tuple) -> None:
        self.op, self.inputs, self.kw, self.outputs = op, inputs, kw, outputs

    @property
    def name(self) -> str:
        return self.op if isinstance(self.op, str) else self.op.__name__


class Recorder:
    """Stands in ``function.PROFILER[0]`` while the forward runs: ``Op.apply`` hands it every op."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []

    def op(self, cls, inputs, kw):
        function.PROFILER[0] = None
        try:
            out = cls.apply(*inputs, **kw)
        finally:
            function.PROFILER[0] = self
        self.entries.append(Entry(cls, tuple(inputs), kw, out if type(out) is tuple else (out,)))
        return out

    def node(self, node, run, grads):  # the engine's profiler hook: no backward is exported
        return run(node, grads)

    def module(self, mod, forward):
        """``mod.forward`` run as one entry (its inner ops unrecorded)."""
        def call(input, hx=None):
            function.PROFILER[0] = None
            try:
                out = forward(input, hx)
            finally:
                function.PROFILER[0] = self
            hs = () if hx is None else (hx if isinstance(hx, tuple) else (hx,))
            flat = (out[0], *(out[1] if isinstance(out[1], tuple) else (out[1],)))
            self.entries.append(Entry(mod.mode, (input, *hs), {"module": mod}, flat))
            return out
        return call


def record(model, args: tuple, kwargs: dict) -> tuple[list[Entry], object]:
    """Run ``model(*args, **kwargs)``, recording; returns (entries, output)."""
    from ember.nn.modules.rnn import RNNBase

    rec = Recorder()
    rnns = [m for m in (model.modules() if hasattr(model, "modules") else ())
            if isinstance(m, RNNBase)]
    for m in rnns:
        m.forward = rec.module(m, type(m).forward.__get__(m))
    # With grad on and float inputs requiring it, every op on a value that depends on the
    # inputs or parameters goes through Op.apply (no-grad fast paths, such as views for
    # ``x[i]``, would skip the recorder).
    args, kwargs = map_tensors((args, kwargs), lambda _, t: t.detach().requires_grad_(True)
                               if t.dtype.is_floating_point else t)
    saved, function.PROFILER[0] = function.PROFILER[0], rec
    try:
        with enable_grad():
            out = model(*args, **kwargs)
    finally:
        function.PROFILER[0] = saved
        for m in rnns:
            del m.forward
    return rec.entries, out


def flatten(out) -> list:
    """The tensors of a (nested) tuple/list/dict output, in order."""
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in flatten(o)]
    return []


def map_tensors(obj, fn, count: list | None = None):
    """``obj`` (nested tuples/lists of tensors and other values) with each tensor replaced
    by ``fn(leaf index, tensor)``."""
    count = [0] if count is None else count
    if isinstance(obj, Tensor):
        count[0] += 1
        return fn(count[0] - 1, obj)
    if isinstance(obj, (tuple, list)):
        return type(obj)(map_tensors(o, fn, count) for o in obj)
    if isinstance(obj, dict):
        return {k: map_tensors(v, fn, count) for k, v in obj.items()}
    return obj


def perturbed(args: tuple, grow: dict[int, tuple]) -> tuple:
    """``args`` with other values, and the dims in ``grow`` (tensor leaf index -> dims)
    doubled: the other recordings, that tell which values and shapes depend on the inputs."""
    def other(i: int, t: Tensor) -> Tensor:
        d = t._data
        if d.dtype.kind in "fc":  # negated: comparisons with the inputs flip
            d = np.asarray(0.25, d.dtype) - d * np.asarray(1.5, d.dtype)
        else:
            d = ~d if d.dtype == np.bool_ else np.roll(d, 1)
        for dim in grow.get(i, ()):
            d = np.concatenate([d, d], axis=dim)
        return Tensor._make(np.ascontiguousarray(d))
    return map_tensors(args, other)
