"""Where each box goes: Graphviz's ``dot`` (module groups as clusters), else a layered layout.

``layout`` sets ``x, y`` (centre), ``w, h`` on each node, ``path`` (SVG) and ``box`` on each
edge, ``box`` ``[x0, y0, x1, y1]`` on each group, and returns ``(engine, width, height)``.
Coordinates are pixels, y down, inputs above the nodes that use them (as ``make_dot`` draws).
``dot`` is superlinear (about 1 s for 2,000 boxes, 13 s for 10,000 in a chain), so bigger
graphs, or machines without Graphviz, get the layered layout: ranks by distance from the
outputs, a few barycentre sweeps to order each rank, module members kept side by side.
"""

from __future__ import annotations

import json
import shutil
import subprocess

DOT_MAX_NODES = 2000
CHAR_W, LINE_H, PAD = 6.6, 14, 8  # the page's 11px monospace
GAP_X, GAP_Y, GROUP_PAD, GROUP_HEAD = 18.0, 34.0, 10.0, 18.0


def find_dot() -> str | None:
    return shutil.which("dot")


def _size(node: dict) -> None:
    lines = node["label"].split("\n")
    node["w"] = round(max(40.0, max(len(s) for s in lines) * CHAR_W + 2 * PAD), 1)
    node["h"] = round(len(lines) * LINE_H + PAD, 1)


def layout(nodes: list, edges: list, groups: list) -> tuple[str, float, float]:
    for n in nodes:
        _size(n)
    dot = find_dot()
    if dot is not None and len(nodes) <= DOT_MAX_NODES:
        try:
            return ("dot", *_dot(dot, nodes, edges, groups))
        except (OSError, ValueError, KeyError, subprocess.SubprocessError):
            pass  # a dot that fails or times out: the layered layout still gives a page
    return ("layered", *_layered(nodes, edges, groups))


# --- Graphviz ----------------------------------------------------------------------------------
def _dot_source(nodes: list, edges: list, groups: list) -> str:
    members: dict = {g["id"]: [] for g in groups}
    children: dict = {g["id"]: [] for g in groups}
    top_nodes, top_groups = [], []
    for n in nodes:
        (members[n["group"]] if n["group"] >= 0 else top_nodes).append(n)
    for g in groups:
        (children[g["parent"]] if g["parent"] >= 0 else top_groups).append(g["id"])
    out = ["digraph G {", 'graph [rankdir=TB, nodesep=0.25, ranksep=0.4, margin=0];',
           'node [shape=box, fixedsize=true, label=""];']

    def emit_nodes(ns: list) -> None:
        out.extend(f'n{n["id"]} [width={n["w"] / 72:.3f}, height={n["h"] / 72:.3f}];'
                   for n in ns)

    stack = [(gid, False) for gid in reversed(top_groups)]
    while stack:  # clusters nest as the module calls did (iteratively: deep models)
        gid, done = stack.pop()
        if done:
            out.append("}")
            continue
        title = json.dumps(_group_title(groups[gid]))
        out.append(f'subgraph cluster_{gid} {{ label={title}; labeljust=l; fontsize=11; '
                   'fontname="Courier"; margin=8;')
        emit_nodes(members[gid])
        stack.append((gid, True))
        stack.extend((c, False) for c in reversed(children[gid]))
    emit_nodes(top_nodes)
    out.extend(f'n{e["src"]} -> n{e["dst"]} [id=e{k}];' for k, e in enumerate(edges))
    out.append("}")
    return "\n".join(out)


def _group_title(g: dict) -> str:
    return f'{g["name"]} ({g["type"]})' if g["name"] else g["type"]


def _dot(dot: str, nodes: list, edges: list, groups: list) -> tuple[float, float]:
    res = subprocess.run([dot, "-Tjson0"], input=_dot_source(nodes, edges, groups),
                         capture_output=True, text=True, timeout=60, check=True)
    data = json.loads(res.stdout)
    x0, y0, x1, y1 = (float(v) for v in data["bb"].split(","))
    height = y1 - y0

    def pt(s: str) -> tuple[float, float]:
        x, y = s.split(",")[-2:]
        return round(float(x) - x0, 1), round(height - (float(y) - y0), 1)

    for obj in data.get("objects", []):
        name = obj.get("name", "")
        if name.startswith("cluster_"):
            bx0, by0, bx1, by1 = (float(v) for v in obj["bb"].split(","))
            groups[int(name[8:])]["box"] = [round(bx0 - x0, 1), round(height - (by1 - y0), 1),
                                            round(bx1 - x0, 1), round(height - (by0 - y0), 1)]
        elif name.startswith("n") and "pos" in obj:
            nodes[int(name[1:])]["x"], nodes[int(name[1:])]["y"] = pt(obj["pos"])
    for obj in data.get("edges", []):
        edge = edges[int(obj["id"][1:])]
        tokens = obj["pos"].split()
        end = pt(tokens[0]) if tokens[0].startswith("e,") else None
        pts = [pt(t) for t in tokens if not t.startswith(("e,", "s,"))]
        d = f"M{pts[0][0]},{pts[0][1]}C" + " ".join(f"{x},{y}" for x, y in pts[1:])
        if end is not None:
            d += f"L{end[0]},{end[1]}"
            pts.append(end)
        edge["path"] = d
        edge["box"] = _bounds(pts)
    return x1 - x0, height


def _bounds(pts: list) -> list:
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    return [min(xs), min(ys), max(xs), max(ys)]


# --- the layered fallback ----------------------------------------------------------------------
def _ranks(n: int, edges: list) -> list:
    """Distance from the outputs (longest path), so inputs sit just above their first user."""
    consumers = [0] * n
    inputs: list = [[] for _ in range(n)]
    for e in edges:
        consumers[e["src"]] += 1
        inputs[e["dst"]].append(e["src"])
    rank = [0] * n
    todo = [i for i in range(n) if consumers[i] == 0]
    while todo:
        v = todo.pop()
        for u in inputs[v]:
            rank[u] = max(rank[u], rank[v] + 1)
            consumers[u] -= 1
            if consumers[u] == 0:
                todo.append(u)
    return rank


def _layered(nodes: list, edges: list, groups: list) -> tuple[float, float]:
    n = len(nodes)
    rank = _ranks(n, edges)
    top = max(rank, default=0)
    layers: list = [[] for _ in range(top + 1)]
    for i in range(n):
        layers[top - rank[i]].append(i)
    nbrs: list = [[] for _ in range(n)]
    for e in edges:
        nbrs[e["src"]].append(e["dst"])
        nbrs[e["dst"]].append(e["src"])
    x = [0.0] * n
    for sweep in range(3):  # upwards from the outputs, then down, then up again
        order = range(top, -1, -1) if sweep % 2 == 0 else range(top + 1)
        for li in order:
            _place(layers[li], nodes, nbrs, x)
    y, width = 0.0, 0.0
    for layer in layers:
        hmax = max((nodes[i]["h"] for i in layer), default=0)
        for i in layer:
            nodes[i]["y"] = round(y + hmax / 2, 1)
        y += hmax + GAP_Y
    left = min((x[i] - nodes[i]["w"] / 2 for i in range(n)), default=0.0) - GROUP_PAD * 4
    for i, node in enumerate(nodes):
        node["x"] = round(x[i] - left, 1)
        width = max(width, node["x"] + node["w"] / 2 + GROUP_PAD * 4)
    for e in edges:
        s, d = nodes[e["src"]], nodes[e["dst"]]
        x1, y1, x2, y2 = s["x"], s["y"] + s["h"] / 2, d["x"], d["y"] - d["h"] / 2
        mid = round((y1 + y2) / 2, 1)
        e["path"] = f"M{x1},{y1}C{x1},{mid} {x2},{mid} {x2},{y2}"
        e["box"] = _bounds([(x1, y1), (x2, y2)])
    _group_boxes(nodes, groups)
    return width, max(y - GAP_Y, 0.0)


def _place(layer: list, nodes: list, nbrs: list, x: list) -> None:
    """Order a rank by its neighbours' mean x, module by module, then pack it left to right."""
    if not layer:
        return
    want = {i: (sum(x[j] for j in nbrs[i]) / len(nbrs[i]) if nbrs[i] else x[i]) for i in layer}
    by_group: dict = {}
    for i in layer:
        by_group.setdefault(nodes[i]["group"], []).append(want[i])
    centre = {g: sum(v) / len(v) for g, v in by_group.items()}
    layer.sort(key=lambda i: (centre[nodes[i]["group"]], nodes[i]["group"], want[i]))
    prev = None
    for i in layer:
        pos = want[i]
        if prev is not None:
            pos = max(pos, x[prev] + (nodes[prev]["w"] + nodes[i]["w"]) / 2 + GAP_X)
        x[i] = pos
        prev = i


def _group_boxes(nodes: list, groups: list) -> None:
    """Each group's box: around its nodes and its child groups' boxes (deepest first)."""
    boxes: dict = {}
    for node in nodes:
        g = node["group"]
        if g >= 0:
            b = [node["x"] - node["w"] / 2, node["y"] - node["h"] / 2,
                 node["x"] + node["w"] / 2, node["y"] + node["h"] / 2]
            boxes[g] = _union(boxes.get(g), b)
    for g in sorted(groups, key=lambda g: -g["depth"]):
        b = boxes.get(g["id"])
        if b is None:
            continue
        b = [b[0] - GROUP_PAD, b[1] - GROUP_PAD - GROUP_HEAD, b[2] + GROUP_PAD, b[3] + GROUP_PAD]
        g["box"] = [round(v, 1) for v in b]
        if g["parent"] >= 0:
            boxes[g["parent"]] = _union(boxes.get(g["parent"]), b)


def _union(a: list | None, b: list) -> list:
    return b if a is None else [min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3])]
