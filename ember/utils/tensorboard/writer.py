"""SummaryWriter: TensorBoard event files via tensorboardX, plus ember's autograd graph.

tensorboardX is an optional dependency (``pip install ember[tensorboard]``), needed to import
this module; it only converts ember tensors to NumPy and turns the autograd graph into a
GraphDef.
"""

from __future__ import annotations

import numpy as np
import tensorboardX

from ember._tensor import Tensor


def _np(x):
    if isinstance(x, Tensor):
        return x.detach().numpy()
    return x


class SummaryWriter:
    """Write scalars, histograms, images, text and the autograd graph for TensorBoard."""

    def __init__(self, log_dir: str | None = None, comment: str = "", purge_step=None,
                 max_queue: int = 10, flush_secs: int = 120, filename_suffix: str = "") -> None:
        self._writer = tensorboardX.SummaryWriter(log_dir, comment=comment, purge_step=purge_step,
                                            max_queue=max_queue, flush_secs=flush_secs,
                                            filename_suffix=filename_suffix)
        self.log_dir = self._writer.logdir

    def get_logdir(self) -> str:
        return self.log_dir

    def add_scalar(self, tag: str, scalar_value, global_step=None, walltime=None) -> None:
        value = scalar_value.item() if isinstance(scalar_value, Tensor) else scalar_value
        self._writer.add_scalar(tag, value, global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict, global_step=None,
                    walltime=None) -> None:
        values = {k: v.item() if isinstance(v, Tensor) else v for k, v in tag_scalar_dict.items()}
        self._writer.add_scalars(main_tag, values, global_step, walltime)

    def add_histogram(self, tag: str, values, global_step=None, bins="tensorflow",
                      walltime=None, max_bins=None) -> None:
        if values is None:
            return  # a parameter without .grad yet: nothing to log
        self._writer.add_histogram(tag, np.asarray(_np(values), dtype=np.float64).ravel(),
                                   global_step, bins, walltime, max_bins)

    def add_image(self, tag: str, img_tensor, global_step=None, walltime=None,
                  dataformats: str = "CHW") -> None:
        self._writer.add_image(tag, _np(img_tensor), global_step, walltime, dataformats)

    def add_images(self, tag: str, img_tensor, global_step=None, walltime=None,
                   dataformats: str = "NCHW") -> None:
        self._writer.add_images(tag, _np(img_tensor), global_step, walltime, dataformats)

    def add_text(self, tag: str, text_string: str, global_step=None, walltime=None) -> None:
        self._writer.add_text(tag, text_string, global_step, walltime)

    def add_graph(self, model_or_output, input_to_model=None, verbose: bool = False) -> None:
        """Log the autograd graph of a tensor, or of ``model(input_to_model)``."""
        out = model_or_output
        if input_to_model is not None:
            args = input_to_model if isinstance(input_to_model, tuple) else (input_to_model,)
            out = model_or_output(*args)
        names = {}
        if input_to_model is not None and hasattr(model_or_output, "named_parameters"):
            names = {id(p): n for n, p in model_or_output.named_parameters()}
        outs = out if isinstance(out, tuple | list) else (out,)
        graph_def = autograd_graph_def([o for o in outs if isinstance(o, Tensor)], names)
        from tensorboardX.proto import event_pb2

        event = event_pb2.Event(graph_def=graph_def.SerializeToString())
        self._writer._get_file_writer().add_event(event)

    def flush(self) -> None:
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def autograd_graph_def(outputs, param_names: dict | None = None):
    """A TensorBoard GraphDef with one node per autograd node and leaf, edges as inputs."""
    from tensorboardX.proto.attr_value_pb2 import AttrValue
    from tensorboardX.proto.graph_pb2 import GraphDef
    from tensorboardX.proto.node_def_pb2 import NodeDef
    from tensorboardX.proto.versions_pb2 import VersionDef

    param_names = param_names or {}
    ids: dict = {}
    nodes = []

    def node_name(fn) -> str:
        if fn not in ids:
            var = getattr(fn, "variable", None)
            if var is not None:
                label = param_names.get(id(var), f"leaf{len(ids)}")
                ids[fn] = f"{label}"
            else:
                ids[fn] = f"{fn.name()}_{len(ids)}"
        return ids[fn]

    seen, stack = set(), [o.grad_fn for o in outputs if o.grad_fn is not None]
    while stack:
        fn = stack.pop()
        if fn in seen:
            continue
        seen.add(fn)
        inputs = [node_name(n) for n, _ in fn.next_functions if n is not None]
        var = getattr(fn, "variable", None)
        shape = list(var.shape) if var is not None else []
        nodes.append(NodeDef(name=node_name(fn), op=fn.name(), input=inputs,
                             attr={"shape": AttrValue(s=str(shape).encode())}))
        stack.extend(n for n, _ in fn.next_functions if n is not None)
    for i, o in enumerate(outputs):
        if o.grad_fn is not None:
            nodes.append(NodeDef(name=f"output{i}", op="Output", input=[node_name(o.grad_fn)],
                                 attr={"shape": AttrValue(s=str(list(o.shape)).encode())}))
    return GraphDef(node=nodes, versions=VersionDef(producer=22))
