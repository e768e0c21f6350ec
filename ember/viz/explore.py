"""``ember.viz.explore``: one self-contained HTML page of a graph and its backward pass."""

from __future__ import annotations

import json
import os
import pathlib
import re

from ember.viz._graph import Graph, summary
from ember.viz._layout import _group_title, layout
from ember.viz._record import ModuleCalls, Recorder

_PAGE = pathlib.Path(__file__).with_name("page")
COLLAPSE_OVER = 400  # boxes shown before module groups start collapsed


def explore(outputs, path: str | os.PathLike = "graph.html", params: dict | None = None,
            run_backward: bool = True, inputs=None) -> pathlib.Path:
    """Write an interactive page of the graph behind ``outputs`` to ``path``; return its path.

    ``outputs``: a tensor, a sequence of tensors, or a function of no arguments returning
    them; a function runs under a recorder that groups the graph by the module calls that made
    it. ``params`` (``dict(model.named_parameters())``) names the leaves. With
    ``run_backward``, the page steps through ``autograd.backward(outputs, inputs=inputs)``
    event by event; the leaves' ``.grad`` are accumulated as that call always does.

    >>> ember.viz.explore(lambda: loss_fn(model(X), y), "graph.html",
    ...                   params=dict(model.named_parameters()))
    """
    data = build(outputs, params, run_backward, inputs)
    text = page(data)
    path = pathlib.Path(path)
    path.write_text(text, encoding="utf-8")
    return path


def build(outputs, params: dict | None = None, run_backward: bool = True, inputs=None) -> dict:
    """The page's data (see ``_graph``'s docstring for nodes and edges)."""
    from ember._tensor import Tensor
    from ember.autograd import backward

    calls = None
    if callable(outputs):
        with ModuleCalls() as calls:
            outputs = outputs()
    outs = tuple(outputs) if isinstance(outputs, tuple | list) else (outputs,)
    if not outs or not all(isinstance(t, Tensor) for t in outs):
        raise TypeError("explore(): outputs must be a Tensor, a sequence of Tensors or a "
                        "function returning them")
    g = Graph(outs, params)
    groups = calls.assign(g) if calls is not None else []
    events, steps = [], []
    if run_backward:
        rec = Recorder(g.ids)
        with rec:
            backward(list(outs), inputs=inputs)
        events = [_event(e, row) for e, row in zip(rec.events, rec.rows)]
        steps = rec.steps
    for leaf, v, _ in g.tensors:
        g.nodes[leaf]["grad"] = summary(v.grad)
    for grp in groups:
        grp["title"] = _group_title(grp)
    engine, width, height = layout(g.nodes, g.edges, groups)
    _collapse(groups, len(g.nodes))
    return {"nodes": g.nodes, "edges": g.edges, "groups": groups, "sources": g.sources,
            "events": events, "steps": steps, "anomalies": _anomalies(events, g.nodes),
            "layout": {"engine": engine, "width": round(width, 1), "height": round(height, 1)},
            "ran_backward": run_backward}


def _event(e, row: dict) -> dict:
    return {"kind": e.kind, "label": e.node, "hook": e.hook, "output_nr": e.output_nr,
            "replaced": e.replaced, "text": str(e).strip(), **row}


def _anomalies(events: list, nodes: list) -> list:
    """Where a gradient turned NaN (what ``detect_anomaly`` reports: the node whose backward
    returned it) or inf, first of each per node; leaves whose ``.grad`` holds any."""
    out, seen = [], set()
    for k, ev in enumerate(events):
        if ev["kind"] != "node" or ev["node"] in seen:
            continue
        for i, s in enumerate(ev["out"]):
            if s is not None and s["bad"]:
                seen.add(ev["node"])
                out.append({"node": ev["node"], "event": k,
                            "message": f"Function '{nodes[ev['node']]['name']}' returned "
                                       f"{s['bad']} values in its {i}th output."})
                break
    for n in nodes:
        if n["kind"] == "leaf" and n.get("grad") and n["grad"]["bad"]:
            out.append({"node": n["id"], "event": None,
                        "message": f"{n['name'] or 'leaf'}.grad holds {n['grad']['bad']} values"})
    return out


def _collapse(groups: list, count: int) -> None:
    """Open groups from the outermost in while the boxes shown stay under COLLAPSE_OVER."""
    for grp in groups:
        grp["collapsed"] = count > COLLAPSE_OVER
    if count <= COLLAPSE_OVER:
        return
    shown = count - sum(grp["size"] for grp in groups) + sum(
        1 for grp in groups if grp["parent"] < 0)
    for grp in sorted(groups, key=lambda grp: grp["depth"]):
        if grp["parent"] >= 0 and groups[grp["parent"]]["collapsed"]:
            continue
        inner = grp["size"] + sum(1 for c in groups if c["parent"] == grp["id"]) - 1
        if shown + inner > COLLAPSE_OVER:
            continue
        grp["collapsed"] = False
        shown += inner


def page(data: dict) -> str:
    """The HTML: the data as JSON, the page's one script and one style inline."""
    blob = json.dumps(data, separators=(",", ":"), allow_nan=False)
    parts = {"DATA": blob.replace("<", "\\u003c"),  # no "</script>" can end the data early
             "STYLE": (_PAGE / "explorer.css").read_text(encoding="utf-8"),
             "SCRIPT": (_PAGE / "explorer.js").read_text(encoding="utf-8")}
    html = (_PAGE / "explorer.html").read_text(encoding="utf-8")
    return re.sub(r"/\*(DATA|STYLE|SCRIPT)\*/", lambda m: parts[m.group(1)], html)
