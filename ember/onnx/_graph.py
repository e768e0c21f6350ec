"""Turn recorded entries into ONNX nodes: name every value, emit each entry's nodes through
its converter (``CONVERTERS``, filled by ``_ops*`` and ``_rnn``), collect initializers, mark
dynamic dims, and check the recordings against each other."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ember._tensor import Tensor
from ember.onnx._record import Entry

# Ops whose keyword arguments may differ between the recordings (shapes that follow the
# dynamic dims): their converters build the shape from the dynamic dims themselves.
SHAPE_FOLLOWING = {"View", "UnsafeView", "Expand", "MaxPool", "AvgPool"}
CONVERTERS: dict = {}  # ember op name (or RNN mode) -> converter(Call) -> output name(s)


def converts(*names: str):
    """Register a converter for the ember ops ``names`` (an op class or one of its bases)."""
    def register(fn):
        for n in names:
            CONVERTERS[n] = fn
        return fn
    return register


class UnsupportedOperatorError(RuntimeError):
    """An op the exporter has no ONNX translation for (torch.onnx.errors' name)."""


class Call:
    """What a converter sees of one entry: ONNX names of the inputs (``x``), the arrays of
    the first recording (``ins``, ``outs``), keyword arguments, and which dims are dynamic."""

    def __init__(self, g: Builder, e: Entry, x: list, dyn_in: list, dyn_out: list) -> None:
        self.g, self.entry, self.x, self.kw = g, e, x, e.kw
        self.ins = [t._data for t in e.inputs if isinstance(t, Tensor)]
        self.outs = [None if o is None else o._data for o in e.outputs]
        self.dyn_in, self.dyn_out = dyn_in, dyn_out

    def node(self, op_type: str, inputs: list, n_out: int = 1, **attrs):
        return self.g.node(op_type, inputs, n_out, **attrs)

    def const(self, value, dtype=None) -> str:
        return self.g.const(np.asarray(value, dtype=dtype))

    def ints(self, values) -> str:
        return self.g.const(np.asarray(list(values), dtype=np.int64))

    def fail(self, why: str):
        raise UnsupportedOperatorError(
            f"Exporting the operator '{self.entry.name}' to ONNX opset version "
            f"{self.g.opset} is not supported: {why}.")


class Builder:
    """Collects nodes, initializers and the map from recorded arrays to ONNX value names."""

    def __init__(self, opset: int, params: dict, params_as_inputs: bool, fold: bool) -> None:
        self.opset, self.fold = opset, fold
        self.params = params  # id(array) -> (state_dict name, array)
        self.params_as_inputs = params_as_inputs
        self.names: dict[int, str] = {}  # id(array) -> value name
        self.dyn: dict[str, set] = {}  # value name -> its dynamic dims
        self.nodes: list = []
        self.initializers: list = []
        self.param_inputs: list = []
        self.keep: list = []  # arrays whose ids are keys of ``names``: kept alive
        self.count: dict[str, int] = {}
        self.consts: set = set()  # names of constants (not parameters, not computed)
        self.sym_src: dict = {}  # dynamic symbol -> (input name, axis, its recorded size)
        self.shapes: dict = {}  # input name -> its Shape node's output

    def fresh(self, base: str) -> str:
        n = self.count.get(base, 0)
        self.count[base] = n + 1
        return f"/{base}_{n}" if base[0] != "/" else f"{base}_{n}"

    def bind(self, array, name: str, dyn: set = frozenset()) -> None:
        self.names[id(array)] = name
        self.dyn[name] = set(dyn)
        self.keep.append(array)

    def value(self, array) -> str:
        """The ONNX name of a recorded array: a value, a parameter, or a new constant."""
        key = id(array)
        if key in self.names:
            return self.names[key]  # None: an output no converter produces (pool indices)
        if key in self.params:
            pname, arr = self.params[key]
            if self.params_as_inputs:
                self.param_inputs.append(helper.make_tensor_value_info(
                    pname, helper.np_dtype_to_tensor_dtype(arr.dtype), arr.shape))
            else:
                self.initializers.append(numpy_helper.from_array(np.asarray(arr), pname))
            self.bind(array, pname)
            return pname
        name = self.const(np.asarray(array))
        self.bind(array, name)
        return name

    def const(self, array: np.ndarray) -> str:
        name = self.fresh("Constant")
        self.initializers.append(numpy_helper.from_array(np.array(array, order="C"), name))
        self.dyn[name] = set()
        self.consts.add(name)
        return name

    def symbol(self, sym: str) -> str:
        """The runtime size of a dynamic symbol, as a 1-element int64 tensor."""
        name, axis, _ = self.sym_src[sym]
        if name not in self.shapes:
            self.shapes[name] = self.node("Shape", [name])
        return self.node("Gather", [self.shapes[name],
                                    self.const(np.asarray([axis], np.int64))], axis=0)

    def initializer(self, array: np.ndarray, name: str) -> str:
        """A named initializer derived from parameters (a new name if taken)."""
        if name in self.dyn:
            name = self.fresh(name)
        self.initializers.append(numpy_helper.from_array(np.array(array, order="C"), name))
        self.dyn[name] = set()
        return name

    def _constant(self, array) -> bool:
        key = id(array)
        return self.names[key] in self.consts if key in self.names else key not in self.params

    def node(self, op_type: str, inputs: list, n_out: int = 1, **attrs):
        outs = [self.fresh(f"{op_type}_output") for _ in range(n_out)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(helper.make_node(op_type, list(inputs), outs,
                                           name=self.fresh(op_type), **attrs))
        return outs[0] if n_out == 1 else outs

    def convert(self, e: Entry, others: list, syms: list, converters: dict) -> None:
        """Emit entry ``e``; ``others``: the same entry in the other recordings, one per
        dynamic symbol in ``syms`` (that symbol's dims doubled), or one with no symbol."""
        conv = _converter(e, converters, self.opset)
        for other in others:
            _check_same(e, other)
        dyn_in = [self.dyn.get(self.names.get(id(t._data)), set())
                  for t in e.inputs if isinstance(t, Tensor)]
        dyn_out = [set().union(*(_differing(o, other.outputs[j]) for other in others))
                   for j, o in enumerate(e.outputs)]
        exps = [[_exponents(o, [other.outputs[j] for other in others], syms, d)
                 for d in range(o.ndim)] if o is not None else []
                for j, o in enumerate(e.outputs)]
        arrays = [t._data for t in e.inputs if isinstance(t, Tensor)]
        arrays += [v for v in e.kw.values() if isinstance(v, np.ndarray)]
        if self.fold and arrays and all(self._constant(a) for a in arrays) \
                and not any(dyn_out):
            for o in e.outputs:  # constant folding: the recorded result is the constant
                if o is not None:
                    self.bind(o._data, self.const(o._data))
            return
        x = [self.value(t._data) for t in e.inputs if isinstance(t, Tensor)]
        if None in x:  # reads an output that is not produced: neither are its outputs
            for o in e.outputs:
                if o is not None:
                    self.names[id(o._data)] = None
                    self.keep.append(o._data)
            return
        call = Call(self, e, x, dyn_in, dyn_out)
        call.exps_out = exps
        res = conv(call)
        res = list(res) if isinstance(res, (list, tuple)) else [res]
        res += [None] * (len(e.outputs) - len(res))  # outputs a converter does not produce
        for o, name, dyn in zip(e.outputs, res, dyn_out):
            if o is not None and name is None:
                self.names[id(o._data)] = None
                self.keep.append(o._data)
            elif o is not None:
                self.bind(o._data, name, dyn)


def _names(e: Entry) -> list:
    """The names an entry's converter may be registered under: its class and its bases."""
    return [e.op] if isinstance(e.op, str) else [c.__name__ for c in e.op.__mro__]


def _converter(e: Entry, converters: dict, opset: int):
    for name in _names(e):
        if name in converters:
            return converters[name]
    raise UnsupportedOperatorError(
        f"Exporting the operator '{e.name}' ({getattr(e.op, 'node_name', '')}) to ONNX opset "
        f"version {opset} is not supported by ember.onnx.export.")


def _exponents(a, others: list, syms: list, d: int) -> dict | None:
    """Dim ``d`` of ``a`` as ``const * prod(sym ** k)``: {sym: k} (None if not of that form:
    a strided conv's output size, say)."""
    res = {}
    for s, b in zip(syms, others):
        ratio = b.shape[d] / a.shape[d] if a.shape[d] else 0
        k = int(round(np.log2(ratio))) if ratio > 0 else -1
        if k < 0 or 2 ** k != ratio:
            return None
        if k:
            res[s] = k
    return res


def _differing(a, b) -> set:
    if a is None or b is None:
        return set()
    return {d for d, (m, n) in enumerate(zip(a.shape, b.shape)) if m != n}


def _canon(v):
    """A keyword argument in a form comparable across the two recordings (arrays by value)."""
    if isinstance(v, np.ndarray):
        return ("array", v.shape, str(v.dtype), v.tobytes())
    if isinstance(v, (tuple, list)):
        return tuple(_canon(x) for x in v)
    return v


def _check_same(a: Entry, b: Entry) -> None:
    """The recordings must agree, or the graph would not hold for other inputs."""
    if a.name != b.name or len(a.inputs) != len(b.inputs):
        raise RuntimeError(
            f"ember.onnx.export: the forward ran different ops for other input values or "
            f"sizes ('{a.name}' then '{b.name}'): data-dependent control flow cannot be "
            "exported")
    if isinstance(a.op, str) or SHAPE_FOLLOWING.intersection(_names(a)):
        return
    arrays = (np.ndarray, Tensor)
    for k in a.kw:
        ka, kb = a.kw[k], b.kw[k]
        if isinstance(ka, arrays) or isinstance(kb, arrays):
            continue  # checked where they are read as values (``check_constants``)
        if a.name == "Slice" and k == "sl" and \
                a.inputs[0].shape[a.kw["dim"]] == b.inputs[0].shape[b.kw["dim"]]:
            continue  # x[:n] of a fixed-size x, n following the inputs: see _ops_shape._slice
        if _canon(ka) != _canon(kb):
            raise RuntimeError(
                f"ember.onnx.export: the argument '{k}' of '{a.name}' depends on the input "
                f"sizes ({ka!r} then {kb!r}): it cannot follow dynamic_axes")


def check_constants(entries: list, others: list, known_a: set, known_b: set) -> None:
    """An array that is neither recorded nor a parameter becomes a constant; if it differs
    between the recordings, it was computed from the inputs outside ember's ops."""
    for ea, eb in zip(entries, others):
        pairs = [(t._data, u._data) for t, u in zip(ea.inputs, eb.inputs)
                 if isinstance(t, Tensor) and isinstance(u, Tensor)]
        pairs += [(ea.kw[k], eb.kw[k]) for k in ea.kw
                  if isinstance(ea.kw[k], np.ndarray) and isinstance(eb.kw.get(k), np.ndarray)]
        for a, b in pairs:
            if (id(a) in known_a) != (id(b) in known_b):
                raise _lost(ea)
            if id(a) not in known_a and _canon(a) != _canon(b):
                raise _lost(ea)


def _lost(e: Entry) -> RuntimeError:
    return RuntimeError(
        f"ember.onnx.export: an input of '{e.name}' was computed from the model's inputs "
        "outside ember's differentiable ops (a comparison, a random draw, NumPy code): it "
        "would be frozen into the graph as a constant")


def value_info(name: str, array, dims: dict) -> onnx.ValueInfoProto:
    """A graph input or output: its dtype and shape, ``dims`` naming the dynamic ones."""
    shape = [dims.get(d, n) for d, n in enumerate(array.shape)]
    return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(array.dtype),
                                         shape)
