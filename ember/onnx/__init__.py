"""``ember.onnx.export``: write a model as an ONNX file (needs the ``onnx`` package, the
``ember[onnx]`` extra; ``import ember`` does not import it).

How data flows:

1. ``_record.record`` runs the forward once with a recorder in ``Op.apply`` (the profiler's
   hook): every ember op appends an ``Entry`` (its class, input tensors, keyword arguments,
   outputs). Recurrent modules (LSTM, GRU, RNN) are recorded whole, as ONNX has nodes for them.
2. More recordings, with other input values and each ``dynamic_axes`` symbol's dims doubled
   in turn, tell which dims follow which symbol (a reshape's target shape is computed at run
   time from them), and catch values computed from the inputs outside ember's ops (a
   comparison, say: they would be frozen into the graph) and data-dependent control flow.
   The recording runs with grad on (inputs requiring it), so that no-grad fast paths that
   skip ``Op.apply`` are not taken.
3. ``_graph.Builder`` walks the entries: each op's converter (``_ops*``, ``_rnn``) emits ONNX
   nodes; parameters and buffers become initializers under their ``state_dict`` names, other
   arrays constants.
4. The nodes, initializers, inputs and outputs make a ModelProto, checked and saved to ``f``.

Why ember's op level and not the compiler's NumPy-level capture (``ember.compiler``): ops
such as convolution, pooling, batch norm and attention are one ember op each and one ONNX node
each, whereas at the NumPy level they are im2col strides, GEMMs and reductions that would
have to be pattern-matched back.
"""

from __future__ import annotations

import contextlib
import enum
import inspect
import os

from ember._tensor import Tensor

__all__ = ["export", "is_in_onnx_export", "TrainingMode", "UnsupportedOperatorError"]

DEFAULT_OPSET = 17
_EXPORTING = [False]


class TrainingMode(enum.IntEnum):
    """torch.onnx.TrainingMode: the mode the model is exported in."""

    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


def is_in_onnx_export() -> bool:
    """Whether an export is running (torch.onnx.is_in_onnx_export)."""
    return _EXPORTING[0]


def __getattr__(name: str):
    if name == "UnsupportedOperatorError":
        from ember.onnx._graph import UnsupportedOperatorError
        return UnsupportedOperatorError
    raise AttributeError(f"module 'ember.onnx' has no attribute '{name}'")


# torch.onnx.export options that do not change the graph ember writes (ember has one
# exporter, writes one file, and checks the model itself).
_NO_EFFECT = frozenset({"dynamo", "external_data", "optimize", "report", "verify", "profile",
                        "dump_exported_program", "artifacts_dir", "autograd_inlining",
                        "operator_export_type", "custom_opsets"})


def export(model, args: tuple = (), f=None, *, kwargs: dict | None = None,
           verbose: bool | None = None, input_names: list | None = None,
           output_names: list | None = None, opset_version: int | None = None,
           export_params: bool = True, keep_initializers_as_inputs: bool = False,
           dynamic_axes: dict | None = None, training: TrainingMode = TrainingMode.EVAL,
           do_constant_folding: bool = True, **options):
    """Export ``model`` run on ``args`` (a tensor or a tuple of arguments, tuples of tensors
    allowed; keyword arguments in ``kwargs`` or as a trailing dict) as an ONNX model written
    to ``f`` (a path or a binary file object); with ``f=None`` the ``onnx.ModelProto`` is
    returned instead. ``dynamic_axes`` maps input/output names to the dims (a list, or a
    dict dim -> symbol name) left symbolic.

    >>> net = ember.nn.Sequential(ember.nn.Linear(4, 2), ember.nn.ReLU())
    >>> ember.onnx.export(net, ember.randn(1, 4), "net.onnx", input_names=["x"],
    ...                   output_names=["y"], dynamic_axes={"x": [0], "y": [0]})
    """
    for key in options:
        if key not in _NO_EFFECT:
            raise TypeError(f"export() got an unexpected keyword argument '{key}'"
                            + (" (ember.onnx.export takes dynamic_axes)"
                               if key == "dynamic_shapes" else ""))
    try:
        import onnx  # noqa: F401 - the optional dependency
    except ImportError as err:
        raise ImportError("ember.onnx.export needs the 'onnx' package: pip install "
                          "'ember[onnx]' (or pip install onnx)") from err
    from ember.onnx import _export

    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    if not 17 <= opset <= 21:
        raise ValueError(f"Unsupported ONNX opset version: {opset} (ember exports opsets 17 "
                         "to 21)")
    args = args if isinstance(args, tuple) else (args,)
    kw = dict(kwargs or {})
    if args and isinstance(args[-1], dict):
        args, kw = args[:-1], {**args[-1], **kw}
    names = _input_names(model, args, kw, input_names)
    with _mode(model, training):
        _EXPORTING[0] = True
        try:
            proto = _export.to_model(model, args, kw, opset, names, output_names,
                                     dynamic_axes or {}, export_params,
                                     bool(keep_initializers_as_inputs), do_constant_folding)
        finally:
            _EXPORTING[0] = False
    if verbose:
        print(onnx.printer.to_text(proto.graph))
    if f is None:
        return proto
    if isinstance(f, (str, os.PathLike)):
        onnx.save_model(proto, os.fspath(f))
    else:
        f.write(proto.SerializeToString())
    return None


def _input_names(model, args: tuple, kw: dict, given: list | None) -> list:
    """The graph inputs' names: ``given`` first, then forward's parameter names (``name.k``
    for the tensors of a tuple argument), then the keyword arguments' names."""
    from ember.onnx._record import flatten

    try:
        params = list(inspect.signature(getattr(model, "forward", model)).parameters)
    except (TypeError, ValueError):
        params = []
    auto = []
    named = [(params[i] if i < len(params) else f"input_{i}", a) for i, a in enumerate(args)]
    for base, a in named + list(kw.items()):
        leaves = flatten(a) if isinstance(a, (tuple, list, dict)) else [a]
        auto += [base if isinstance(a, Tensor) else f"{base}.{k}"
                 for k, t in enumerate(leaves) if isinstance(t, Tensor)]
    given = list(given or [])
    return given[:len(auto)] + auto[len(given):]


@contextlib.contextmanager
def _mode(model, training: TrainingMode):
    if not hasattr(model, "train") or training == TrainingMode.PRESERVE:
        yield
        return
    was = model.training
    model.train(training == TrainingMode.TRAINING)
    try:
        yield
    finally:
        model.train(was)
