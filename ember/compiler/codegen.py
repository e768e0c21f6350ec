"""Code generation: a program (``ir.Graph``) becomes the source of one straight-line Python
function over NumPy calls, which ``compile_graph`` turns into a function with ``exec``.

Each value is a local named after the op that made it; a comment names the module and op
whenever they change; a local is deleted after its last use, so an intermediate's memory goes
back as soon as it is dead. Objects that have no literal form (constants, dtypes, generators,
NumPy's functions as ``np_<name>``) are bound as globals of the function.
"""

from __future__ import annotations

import math

import numpy as np

from ember.compiler.gpu import device_object, unless_capturing
from ember.compiler.gpu import namespace as gpu_namespace
from ember.compiler.ir import Graph, Node, Value


class _Namer:
    """Gives non-literal objects global names in the generated module, apart from the
    program's local value names (``taken``)."""

    def __init__(self, taken: set, gpu: bool = False, host: set | None = None,
                 graphs: bool = False) -> None:
        self.gpu, self.graphs = gpu, graphs
        self.globals: dict = {"np": gpu_namespace(graphs) if gpu else np}
        if gpu:
            self.globals["onp"] = np
        self.by_id: dict = {}
        self.taken = taken
        # In a GPU program: the values that live on the host (0-d CPU tensors such as an
        # optimizer's step count, and what is computed from them alone), and whether the call
        # being written is one of those host computations (it then runs on NumPy: ``onp``).
        self.host = host if host is not None else set()
        self.on_host = False

    @property
    def np(self) -> str:
        return "onp" if self.on_host else "np"

    def bind(self, obj, hint: str) -> str:
        key = (id(obj), self.on_host)
        if key in self.by_id:
            return self.by_id[key]
        if self.gpu and not self.on_host:
            obj = device_object(obj)
        hint = "".join(ch if ch.isalnum() else "_" for ch in hint.split(" ")[0]) or "k"
        hint = hint if hint[0].isalpha() else f"k_{hint}"
        name, n = hint, 0
        while name in self.globals or name in self.taken:
            n += 1
            name = f"{hint}_{n}"
        self.globals[name] = obj
        self.by_id[key] = name
        return name


def _numpy_name(obj, namer: _Namer, hint: str) -> str:
    """How the code names a NumPy function: ``np_add`` in a CPU program, a global bound to
    ``np.add`` (one dictionary lookup instead of two: a fifth of a ufunc call's cost on a small
    array), and ``np.add`` in a GPU program, where ``np`` is CuPy's namespace."""
    from ember.compiler.traced import _ORIGINAL

    name = getattr(obj, "__name__", None)
    if name and (getattr(np, name, None) is obj or _ORIGINAL.get(name) is obj):
        return f"{namer.np}.{name}" if namer.gpu else namer.bind(obj, f"np_{name}")
    return namer.bind(obj, name or hint)


def _expr(obj, namer: _Namer) -> str:
    if isinstance(obj, Value):
        if obj.kind == "constant":
            return namer.bind(obj.const, obj.name)
        if namer.gpu and not namer.on_host and id(obj) in namer.host:
            # a host value in a GPU call: a 0-d one as a scalar argument, else copied over
            return f"{obj.name}[()]" if not obj.shape else f"np.asarray({obj.name})"
        return obj.name
    if obj is None or obj is Ellipsis or isinstance(obj, bool | int | str):
        return repr(obj)
    if type(obj) is float:
        return repr(obj) if math.isfinite(obj) else namer.bind(obj, "k")
    if isinstance(obj, np.generic) and repr(obj).startswith("np.") and np.isfinite(obj):
        return repr(obj)  # np.float32(1.01): keeps float32 math float32
    if type(obj) is tuple:
        inner = ", ".join(_expr(o, namer) for o in obj)
        return f"({inner},)" if len(obj) == 1 else f"({inner})"
    if type(obj) is list:
        return "[" + ", ".join(_expr(o, namer) for o in obj) + "]"
    if type(obj) is dict and all(isinstance(k, str) for k in obj):
        return "{" + ", ".join(f"{k!r}: {_expr(v, namer)}" for k, v in obj.items()) + "}"
    if isinstance(obj, slice):
        return (f"slice({_expr(obj.start, namer)}, {_expr(obj.stop, namer)}, "
                f"{_expr(obj.step, namer)})")
    if isinstance(obj, type) and getattr(np, obj.__name__, None) is obj:
        return f"np.{obj.__name__}"
    if isinstance(obj, np.dtype):
        if obj.isbuiltin and getattr(np, obj.type.__name__, None) is obj.type:
            return f"np.{obj.type.__name__}"
        return namer.bind(obj, f"{obj.name}_t")
    return namer.bind(obj, type(obj).__name__.lower())


def _call(node: Node, namer: _Namer) -> str:
    kind = node.kind
    args = [_expr(a, namer) for a in node.args]
    args += [f"{k}={_expr(_single_out(k, v), namer)}" for k, v in node.kwargs.items()]
    if kind[0] == "ufunc":
        fn = _numpy_name(kind[1], namer, "ufunc")
        return f"{fn}({', '.join(args)})" if kind[2] == "__call__" else \
            f"{fn}.{kind[2]}({', '.join(args)})"
    if kind[0] == "function":
        fn = kind[1]
        if namer.graphs and not node.outputs and not node.writes:  # a data check
            fn = unless_capturing(fn)
        return f"{_numpy_name(fn, namer, 'fn')}({', '.join(args)})"
    if kind[0] == "random":  # on the GPU: drawn on the host, copied over (as eager does)
        draw = f"{namer.bind(kind[1], 'generator')}.{kind[2]}({', '.join(args)})"
        return f"np.asarray({draw})" if namer.gpu else draw
    if kind[0] == "alias":  # an allocation that became a persistent buffer
        return args[0]
    self_, rest = args[0], args[1:]
    if kind[1] == "__getitem__":
        return f"{self_}[{rest[0]}]"
    if kind[1] == "__setitem__":
        return f"{self_}[{rest[0]}] = {rest[1]}"
    return f"{self_}.{kind[1]}({', '.join(rest)})"


def _single_out(key: str, value):
    """``out=buf`` for ``out=(buf,)``: the same to NumPy, easier to read, and what CuPy's
    ufuncs take (an array, not NumPy's 1-tuple)."""
    return value[0] if key == "out" and type(value) is tuple and len(value) == 1 else value


def _last_uses(graph: Graph, keep: set) -> dict:
    """For each node index, the values whose last use is there (and may be deleted after)."""
    last: dict = {}
    for i, node in enumerate(graph.nodes):
        for v in (*node.inputs(), *node.outputs):
            if v.kind == "result":
                last[id(v)] = (i, v)
    dead: dict = {}
    for i, v in last.values():
        if id(v) not in keep:
            dead.setdefault(i, []).append(v)
    return dead


def _tuple(items: list) -> str:
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


def _runs_on_host(node: Node, host: set) -> bool:
    """A call of a GPU program that reads host values only (and is no draw or allocation)."""
    ins = node.inputs()
    return bool(ins) and node.kind[0] not in ("random", "alias") and \
        all(id(v) in host for v in ins)


def python_source(graph: Graph, name: str, saved: tuple | None = None,
                  gpu: bool = False, host: set | None = None, graphs: bool = False) -> tuple:
    """The function's source and the globals it needs. It returns the tuple of the graph's
    outputs, or (when ``saved`` is given) that and the tuple of values saved for another
    program."""
    taken = {v.name for v in graph.placeholders}
    taken.update(v.name for n in graph.nodes for v in n.outputs)
    namer = _Namer(taken, gpu, host, graphs)
    keep = {id(v) for v in (*graph.outputs, *(saved or ())) if v is not None}
    # A view keeps its base's memory alive anyway: deleting the base early changes nothing,
    # so only values whose storage is their own are deleted.
    dead = _last_uses(graph, keep)
    params = ", ".join(v.name for v in graph.placeholders)
    lines = [f"def {name}({params}):"]
    context = None
    for i, node in enumerate(graph.nodes):
        if node.context != context and node.context:
            lines.append(f"    # {node.context}")
            context = node.context
        namer.on_host = gpu and _runs_on_host(node, namer.host)
        if namer.on_host:
            namer.host.update(id(v) for v in node.outputs)
        call = _call(node, namer)
        namer.on_host = False
        if node.kind[0] == "function" and hasattr(node.kind[1], "body"):  # a fused kernel
            lines.append(f"    # CUDA: {node.kind[1].body}")
        new = [v for v in node.outputs if v not in node.writes]
        if node.kind == ("method", "__setitem__") or not new:
            lines.append(f"    {call}")
        elif node.tuple_result:
            lines.append(f"    {', '.join(v.name for v in node.outputs)}, = {call}")
        else:
            lines.append(f"    {new[0].name} = {call}")
        gone = [v.name for v in dead.get(i, ()) if v.storage is v or v.storage is None]
        if gone:
            lines.append(f"    del {', '.join(gone)}")
    ret = _tuple(["None" if v is None else _expr(v, namer) for v in graph.outputs])
    if saved is not None:
        ret += ", " + _tuple([_expr(v, namer) for v in saved])
    lines.append(f"    return {ret}")
    return "\n".join(lines), namer.globals


def compile_graph(graph: Graph, name: str, saved: tuple | None = None, gpu: bool = False,
                  host: set | None = None, graphs: bool = False):
    """The Python function for ``graph`` (see ``python_source``) and its source; with
    ``gpu``, over CuPy (``gpu.CupyNumpy``), ``host`` holding the ids of the values that stay
    on the CPU (it grows by those the program computes from them); ``graphs``: for a CUDA
    graph (``gpu.namespace``, data checks left out of the recording)."""
    source, glob = python_source(graph, name, saved, gpu, host, graphs)
    code = compile(source, f"<ember.compile {name}>", "exec")
    exec(code, glob)  # noqa: S102 - the source is ours, generated just above
    return glob[name], source
