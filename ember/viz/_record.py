"""Recorders: which module call made each node (forward), what the engine did (backward).

Module calls are told apart by sequence numbers: every backward node takes the next number
when its op runs, so a node made inside a module's forward has a number between the ones the
global forward pre-hook and forward hook take around that call. The innermost such call is
the node's group.
"""

from __future__ import annotations

import heapq

from ember.autograd import graph
from ember.autograd.trace import trace
from ember.viz._graph import summaries, summary


class ModuleCalls:
    """Context manager: record each module call's place in the sequence numbers (its groups)."""

    def __init__(self) -> None:
        self.groups: list = []  # {"id", "name", "type", "parent", "depth"}
        self.spans: list = []  # (first seq, last seq, group id), in call order
        self.modules: list = []  # the module of each group
        self._stack: list = []

    def __enter__(self) -> ModuleCalls:
        from ember.nn.modules import _hooks

        self._handles = (_hooks.register_module_forward_pre_hook(self._pre),
                         _hooks.register_module_forward_hook(self._post, always_call=True))
        return self

    def __exit__(self, *exc) -> None:
        for h in self._handles:
            h.remove()

    def _name(self, module) -> tuple[str, int]:
        parent = self._stack[-1][0] if self._stack else -1
        if parent >= 0:
            for key, child in self.modules[parent]._modules.items():
                if child is module:
                    prefix = self.groups[parent]["name"]
                    return (f"{prefix}.{key}" if prefix else key), parent
        return "", parent

    def _pre(self, module, args) -> None:
        name, parent = self._name(module)
        gid = len(self.groups)
        depth = self.groups[parent]["depth"] + 1 if parent >= 0 else 0
        self.groups.append({"id": gid, "name": name, "type": type(module).__name__,
                            "parent": parent, "depth": depth})
        self.modules.append(module)
        self._stack.append((gid, graph.next_seq()))

    def _post(self, module, args, output) -> None:
        gid, start = self._stack.pop()
        self.spans.append((start, graph.next_seq(), gid))

    def assign(self, g) -> list:
        """Set each node's ``group``; return the groups that hold any node."""
        owner: dict = {}  # id(parameter) -> first group whose module holds it directly
        for gid, m in enumerate(self.modules):
            for p in m._parameters.values():
                if p is not None:
                    owner.setdefault(id(p), gid)
        for i, gid in _innermost(sorted(self.spans), g.nodes):
            g.nodes[i]["group"] = gid
        for leaf, v, acc in g.tensors:  # a leaf and its AccumulateGrad go with its module
            g.nodes[leaf]["group"] = g.nodes[acc]["group"] = owner.get(id(v), -1)
        return self._used(g)

    def _used(self, g) -> list:
        """Groups with nodes, and their ancestors; ids renumbered in order."""
        keep = set()
        for n in g.nodes:
            gid = n["group"]
            while gid >= 0 and gid not in keep:
                keep.add(gid)
                gid = self.groups[gid]["parent"]
        new = {old: k for k, old in enumerate(sorted(keep))}
        out = []
        for old in sorted(keep):
            grp = dict(self.groups[old], id=new[old])
            grp["parent"] = new.get(grp["parent"], -1)
            grp["size"] = 0
            out.append(grp)
        for n in g.nodes:
            n["group"] = new.get(n["group"], -1)
            if n["group"] >= 0:
                out[n["group"]]["size"] += 1
        return out


def _innermost(spans: list, nodes: list):
    """(node index, innermost span's group) for nodes with a sequence number: one sweep in
    sequence order, with the spans open at each node on a stack (spans nest)."""
    order = sorted((n["seq"], n["id"]) for n in nodes if n.get("seq") is not None)
    stack: list = []
    k = 0
    for seq, i in order:
        while k < len(spans) and spans[k][0] < seq:
            while stack and stack[-1][1] < spans[k][0]:
                stack.pop()
            stack.append(spans[k])
            k += 1
        while stack and stack[-1][1] < seq:
            stack.pop()
        yield i, stack[-1][2] if stack else -1


class Recorder(trace):
    """``autograd.trace()`` that also keeps, per event, the gradients' values (``rows``) and,
    per node the engine pops, its queue and buffers (``steps``)."""

    def __init__(self, ids: dict) -> None:
        super().__init__()
        self.ids = ids
        self.rows: list = []
        self.steps: list = []

    def _id(self, node) -> int:
        return self.ids.get(node, -1)

    def _add(self, kind: str, node, **kw) -> None:
        super()._add(kind, node, **kw)
        self.rows.append({"node": self._id(node), "step": len(self.steps), "in": [], "out": []})

    def node(self, node, grads) -> None:
        super().node(node, grads)
        self.rows[-1]["in"] = summaries(grads)
        self._last_row = self.rows[-1]

    def node_outputs(self, outs) -> None:
        super().node_outputs(outs)
        self._last_row["out"] = summaries(outs)

    def hook(self, kind: str, node, fn, before, after, output_nr=None) -> None:
        super().hook(kind, node, fn, before, after, output_nr)
        row = self.rows[-1]
        row["in"] = summaries(before)
        row["out"] = summaries(after) if after is not None else []

    def accumulate(self, node, var) -> None:
        super().accumulate(node, var)
        self.rows[-1]["in"] = [summary(var._grad)]

    def capture(self, node, output_nr: int, g) -> None:
        super().capture(node, output_nr, g)
        self.rows[-1]["in"] = [summary(g)]

    def queue(self, node, sent, ready: list, buffers: dict) -> None:
        if node is None:
            changed = list(buffers)
        else:
            changed = [n for n, _ in node.next_functions if n is not None and n in buffers]
        self.steps.append({
            "node": self._id(node) if node is not None else -1,
            "sent": summaries(sent) if node is not None else [],
            "ready": [self._id(n) for _, _, n in heapq.nsmallest(len(ready), ready)],
            "buffers": {str(self._id(n)): summaries(buffers[n]) for n in dict.fromkeys(changed)},
        })
