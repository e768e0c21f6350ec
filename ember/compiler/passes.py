"""Passes over a program before code generation, in this order.

``prune`` drops calls whose results nothing needs: the eager run computed things only its own
autograd graph used (masks, copies, metadata), and a program needs none of them.
``simplify`` rewrites call patterns that eager code makes one op at a time into fewer calls
with bit-identical results (``a + (-b)`` is ``a - b``; a scalar read out of a constant is a
constant).
``reuse_dead_inputs`` makes elementwise calls write into an input that dies there.
``persistent_buffers`` gives the remaining intermediates memory that lives with the program.
(Values no longer needed are deleted as soon as they die: that is ``codegen``'s job.)
"""

from __future__ import annotations

import numpy as np

from ember.compiler.ir import Graph, Value


def prune(graph: Graph, saved: tuple) -> None:
    """Remove calls that no kept call, output or saved value needs, walking backwards (so
    chains of dead calls go at once): calls that write nothing, or write only into memory the
    program allocated and nothing later reads (a view of it counts as a read of it). Random
    draws, checks, and writes into inputs always stay."""
    needed: set = set()

    def need(v) -> None:
        needed.add(id(v))
        needed.add(id(v.root()))

    for v in (*graph.outputs, *saved):
        if v is not None:
            need(v)
    kept = []
    for node in reversed(graph.nodes):
        live = (any(id(v) in needed for v in node.outputs) or node.kind[0] == "random"
                or not node.outputs and not node.writes
                or any(w.root().kind != "result" or id(w.root()) in needed
                       for w in node.writes))
        if live:
            kept.append(node)
            for v in (*node.inputs(), *node.writes):
                need(v)
    kept.reverse()
    graph.nodes[:] = kept


def simplify(graph: Graph, keep: tuple) -> int:
    """Peephole rewrites, each exact in IEEE arithmetic; returns how many were made.

    - ``n = np.negative(b); np.add(a, n)`` (either order) becomes ``np.subtract(a, b)`` when
      the add is the negation's only reader and nothing writes ``b`` in between: a backward
      pass sums a gradient and a negated one this way (``x - y``'s ``y``).
    - ``s = c[()]`` on a constant the program owns (a scalar ember's op code wrapped, see
      ``capture.fresh``) becomes that scalar, folded at compile time."""
    kept = {id(v) for v in keep if v is not None}
    readers: dict = {}
    for i, node in enumerate(graph.nodes):
        for v in {id(v): v for v in (*node.inputs(), *node.writes)}.values():
            readers.setdefault(id(v.root()), []).append(i)
    drop: set = set()
    done = 0
    for i, node in enumerate(graph.nodes):
        if node.kind == ("method", "__getitem__") and node.args[1] == () \
                and _owned_constant(node.args[0]) and len(node.outputs) == 1:
            v = node.outputs[0]
            v.kind, v.const, v.storage = "constant", node.args[0].const[()], v
            drop.add(i)
            done += 1
            continue
        if not _plain_ufunc(node, np.add, 2):
            continue
        for k, n_val in enumerate(node.args):
            j = _negation_of(graph, n_val, readers, kept, i)
            if j is None:
                continue
            b = graph.nodes[j].args[0]
            if any(w.root() is b.root() for n in graph.nodes[j + 1:i] for w in n.writes):
                continue
            node.kind = ("ufunc", np.subtract, "__call__")
            node.args = (node.args[1 - k], b)
            drop.add(j)
            done += 1
            break
    graph.nodes[:] = [n for i, n in enumerate(graph.nodes) if i not in drop]
    return done


def _plain_ufunc(node, ufunc, nargs: int) -> bool:
    """A call ``ufunc(*args)`` with array or scalar arguments, no keywords, one result."""
    return (node.kind == ("ufunc", ufunc, "__call__") and not node.kwargs and not node.writes
            and len(node.args) == nargs and len(node.outputs) == 1)


def _negation_of(graph: Graph, v, readers: dict, kept: set, user: int) -> int | None:
    """The index of the ``np.negative(b)`` call that made ``v``, if that value is read only
    at ``user`` (once) and is no view, output or saved value; else None."""
    if not isinstance(v, Value) or id(v) in kept or v.storage is not v \
            or readers.get(id(v)) != [user]:
        return None
    for j in range(user - 1, -1, -1):
        n = graph.nodes[j]
        if v in n.outputs:
            ok = _plain_ufunc(n, np.negative, 1) and isinstance(n.args[0], Value) \
                and n.outputs[0].dtype == n.args[0].dtype
            return j if ok else None
    return None


def _owned_constant(v) -> bool:
    """A 0-d constant no code but the program can change (a private, read-only copy)."""
    return (isinstance(v, Value) and v.kind == "constant" and isinstance(v.const, np.ndarray)
            and v.const.ndim == 0 and v.const.base is None and not v.const.flags.writeable)


def reuse_dead_inputs(graph: Graph, keep: tuple) -> int:
    """Elementwise calls write into an input that dies at that call (``relu = np_maximum(a, 0,
    out=a)``): no allocation, and the memory is still in cache. Safe when the input is an
    array the program allocated, of the output's shape and dtype, that nothing reads later —
    neither it nor any view of it — and that the program does not return or save; not 0-d
    (a reduction hands back a NumPy scalar there, which cannot be written). Returns how many
    calls were rewritten."""
    kept = {id(v) for v in keep if v is not None}
    made = {id(v) for n in graph.nodes for v in n.outputs}  # not the (saved) placeholders
    last: dict = {}  # id(root) -> index of the last node reading the root or a view of it
    for i, node in enumerate(graph.nodes):
        for v in (*node.inputs(), *node.writes):
            last[id(v.root())] = i
    for v in keep:
        if v is not None:
            last[id(v.root())] = len(graph.nodes)
    done = 0
    for i, node in enumerate(graph.nodes):
        if node.kind[0] != "ufunc" or node.kind[2] != "__call__" or node.kwargs \
                or len(node.outputs) != 1 or node.writes:
            continue
        out = node.outputs[0]
        for v in node.args:
            if (isinstance(v, Value) and id(v) in made and v.storage is v and v.shape
                    and id(v) not in kept and last.get(id(v)) == i
                    and v.shape == out.shape and v.dtype == out.dtype
                    and sum(a is v for a in node.args) == 1):
                node.kwargs = {"out": (v,)}
                node.writes = (v,)
                out.storage = v
                last[id(v)] = max((j for j, n in enumerate(graph.nodes) if out in n.inputs()),
                                  default=i)
                done += 1
                break
    return done


def persistent_buffers(graph: Graph, keep: tuple) -> int:
    """Intermediates that die inside the program (not returned, not saved, no view of them
    kept) get a buffer of their own that lives with the program: the elementwise call writes
    into it with ``out=``, an allocation becomes that buffer. Every replay then reuses the
    same memory (already mapped, often still in cache) instead of allocating. Returns how
    many values got one."""
    kept_roots = {id(v.root()) for v in keep if v is not None}
    done = 0
    for node in graph.nodes:
        if len(node.outputs) != 1 or node.writes:
            continue
        v = node.outputs[0]
        fresh_call = node.kind[0] == "ufunc" and node.kind[2] == "__call__" and not node.kwargs
        allocation = node.kind == ("function", np.empty)
        if not (fresh_call or allocation) or v.storage is not v or not v.shape \
                or id(v) in kept_roots or v.dtype is None:
            continue
        buf = Value(f"scratch_{v.name}", v.shape, v.dtype, kind="constant",
                    const=np.empty(v.shape, v.dtype))
        buf.storage = buf
        if allocation:
            node.kind, node.args, node.kwargs = ("alias",), (buf,), {}
        else:
            node.kwargs = {"out": (buf,)}
        node.writes = (buf,)
        v.storage = buf
        done += 1
    return done
