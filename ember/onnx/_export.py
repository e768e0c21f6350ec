"""The export pipeline: record twice, convert, assemble and check the ModelProto."""

from __future__ import annotations

import onnx
from onnx import helper

from ember._tensor import Tensor
from ember.onnx import _graph, _ops, _ops_more, _ops_shape, _record, _rnn  # noqa: F401


def to_model(model, args: tuple, kw: dict, opset: int, input_names: list,
             output_names: list | None, dynamic_axes: dict, export_params: bool,
             keep_initializers_as_inputs: bool, fold: bool) -> onnx.ModelProto:
    tensors = _record.flatten((args, kw))  # the graph inputs: positional, then keyword
    axes = {name: _axes(name, spec) for name, spec in dynamic_axes.items()}
    entries, out = _record.record(model, args, kw)
    outs = _record.flatten(out)
    if not outs:
        raise RuntimeError("ember.onnx.export: the model returned no tensor")
    params = _params(model)
    known = _known(entries, params, tensors)
    # One more recording per dynamic symbol (its dims doubled; one with none if no symbol):
    # which dims follow which symbol, and which values depend on the inputs.
    syms = sorted({s for n in input_names for s in axes.get(n, {}).values()})
    others, outs_b = [], []
    for sym in syms or [None]:
        grow = {i: tuple(d for d, s in axes.get(n, {}).items() if s == sym)
                for i, n in enumerate(input_names)}
        other = _record.perturbed((args, kw), grow)
        rec, out_b = _record.record(model, *other)
        if len(rec) != len(entries):
            raise RuntimeError("ember.onnx.export: the forward ran a different number of ops "
                               "for other input values or sizes: data-dependent control "
                               "flow cannot be exported")
        _graph.check_constants(entries, rec, known, _known(
            rec, params, _record.flatten(other)))
        others.append(rec)
        outs_b.append(_record.flatten(out_b))

    g = _graph.Builder(opset, params, export_params is False or keep_initializers_as_inputs,
                      fold)
    inputs = []
    for t, name in zip(tensors, input_names):
        dims = axes.get(name, {})
        g.bind(t._data, name, set(dims))
        for d, s in dims.items():
            g.sym_src.setdefault(s, (name, d, t.shape[d]))
        inputs.append(_graph.value_info(name, t._data, dims))
    for k, e in enumerate(entries):
        g.convert(e, [rec[k] for rec in others], syms, _graph.CONVERTERS)
    output_names = list(output_names or [])
    output_names += [f"output_{i}" if len(outs) > 1 else "output"
                     for i in range(len(output_names), len(outs))]
    outputs = []
    for j, (t, name) in enumerate(zip(outs, output_names)):
        src = g.value(t._data)
        if src is None:
            raise _graph.UnsupportedOperatorError(
                f"ember.onnx.export: the output '{name}' is one ONNX does not compute as "
                "torch does (the indices of max pooling)")
        g.nodes.append(helper.make_node("Identity", [src], [name], name=g.fresh("Identity")))
        dims = axes.get(name) or {d: f"{name}_dim_{d}" for d in set().union(
            *(_graph._differing(t, b[j]) for b in outs_b))}
        outputs.append(_graph.value_info(name, t._data, dims))
    used = {i for n in g.nodes for i in n.input}
    for name in input_names[:len(tensors)]:
        if name not in used:
            raise RuntimeError(
                f"ember.onnx.export: the input '{name}' reaches no output through ember's ops "
                "(it is unused, or used only by code that cannot be recorded, e.g. a "
                "comparison)")
    graph = helper.make_graph(g.nodes, type(model).__name__, inputs + g.param_inputs,
                              outputs, g.initializers)
    proto = helper.make_model(graph, producer_name="ember",
                              opset_imports=[helper.make_opsetid("", opset)])
    proto.ir_version = min(proto.ir_version, 8 if opset <= 17 else 9)
    onnx.checker.check_model(proto)
    return proto


def _axes(name: str, spec) -> dict:
    """``dynamic_axes`` entry as {dim: symbolic name} (torch's default names for a list)."""
    if isinstance(spec, dict):
        return {int(d): str(n) for d, n in spec.items()}
    return {int(d): f"{name}_dynamic_axes_{k + 1}" for k, d in enumerate(spec)}


def _params(model) -> dict:
    """id(array) -> (state_dict name, array) for the parameters and buffers."""
    if not hasattr(model, "state_dict"):
        return {}
    res = {}
    for name, t in model.state_dict(keep_vars=True).items():
        if isinstance(t, Tensor) and id(t._data) not in res:
            res[id(t._data)] = (name, t._data)
    return res


def _known(entries: list, params: dict, inputs: list) -> set:
    """Ids of the arrays a recording knows the source of (not constants)."""
    known = set(params) | {id(t._data) for t in inputs}
    for e in entries:
        known |= {id(o._data) for o in e.outputs if isinstance(o, Tensor)}
    return known
