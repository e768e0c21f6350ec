"""Passes over a program before code generation.

``prune`` drops calls whose results nothing needs: the eager run computed things only its own
autograd graph used (masks, copies, metadata), and a program needs none of them.
"""

from __future__ import annotations

from ember.compiler.ir import Graph


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
