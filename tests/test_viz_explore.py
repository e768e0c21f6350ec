"""ember.viz.explore's data, without a browser: the graph, groups, saved tensors, sources, hooks,
the backward's events in the engine's order, buffers, leaf grads, NaN markers and the layout."""

import inspect
import json
import os
import re
import textwrap
from collections import Counter

import numpy as np
import pytest
import torch
import viz_graphs

import ember
from ember.viz import _layout
from ember.viz.explore import build, page

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(ember.__file__)))


def explored_mlp(**kw):
    model, X, y, loss_fn = viz_graphs.mlp()
    got = []
    data = build(lambda: got.append(loss_fn(model(X), y)) or got[0],
                 params=dict(model.named_parameters()), **kw)
    return data, model, got[0]


def walk(root):
    """Every backward node reachable from ``root`` (each once) and the edges between them."""
    seen, stack, edges = [root], [root], []
    while stack:
        fn = stack.pop()
        for k, (nxt, _) in enumerate(fn.next_functions):
            if nxt is not None:
                edges.append((type(nxt).__name__, type(fn).__name__, k))
                if nxt not in seen:
                    seen.append(nxt)
                    stack.append(nxt)
    return seen, edges


def by_name(data, name):
    return [n for n in data["nodes"] if n["name"] == name]


def test_nodes_and_edges_are_the_graphs():
    data, model, loss = explored_mlp()
    fns, edges = walk(loss.grad_fn)
    nodes = data["nodes"]
    assert Counter(n["name"] for n in nodes if n["kind"] == "fn") == \
        Counter(type(f).__name__ for f in fns)
    got = Counter((nodes[e["src"]]["name"], nodes[e["dst"]]["name"], e["input"])
                  for e in data["edges"] if nodes[e["src"]]["kind"] == "fn"
                  and nodes[e["dst"]]["kind"] == "fn")
    assert got == Counter(edges)
    leaves = {n["name"]: n for n in nodes if n["kind"] == "leaf"}
    assert set(leaves) == {k for k, _ in model.named_parameters()}
    for k, p in model.named_parameters():
        assert leaves[k]["tensor"]["shape"] == list(p.shape)
    assert [n["kind"] for n in nodes].count("output") == 1


def test_groups_are_the_module_calls():
    data, model, _ = explored_mlp()
    groups = data["groups"]
    title = {g["id"]: g["title"] for g in groups}
    parent = {g["title"]: title.get(g["parent"]) for g in groups}
    assert parent == {"NeuralNetwork": None, "linear_relu_stack (Sequential)": "NeuralNetwork",
                      **{f"linear_relu_stack.{i} ({t})": "linear_relu_stack (Sequential)"
                         for i, t in enumerate(["Linear", "ReLU", "Linear", "ReLU", "Linear"])},
                      "CrossEntropyLoss": None}  # Flatten made no node: no group
    where = Counter((n["name"], title.get(n["group"])) for n in data["nodes"])
    for i in (0, 2, 4):
        assert where["AddmmBackward0", f"linear_relu_stack.{i} (Linear)"] == 1
        assert where["TBackward0", f"linear_relu_stack.{i} (Linear)"] == 1
        assert where[f"linear_relu_stack.{i}.weight", f"linear_relu_stack.{i} (Linear)"] == 1
        assert where["AccumulateGrad", f"linear_relu_stack.{i} (Linear)"] == 2
    assert where["ReluBackward0", "linear_relu_stack.1 (ReLU)"] == 1
    assert where["NllLossBackward0", "CrossEntropyLoss"] == 1
    assert where["output 0", None] == 1


def test_saved_tensors_have_torchs_shapes():
    data, model, _ = explored_mlp(run_backward=False)
    _, X, y, _ = viz_graphs.mlp()
    t_loss = torch.nn.functional.cross_entropy(viz_graphs.torch_mlp(model)(
        torch.from_numpy(X.numpy())), torch.from_numpy(y.numpy()))
    t_shapes: Counter = Counter()
    stack, seen = [t_loss.grad_fn], set()
    while stack:
        fn = stack.pop()
        if fn in seen or fn is None:
            continue
        seen.add(fn)
        stack += [n for n, _ in fn.next_functions]
        if fn.name() in ("AddmmBackward0", "ReluBackward0"):
            t_shapes[fn.name(), tuple(sorted(tuple(getattr(fn, a).shape) for a in dir(fn)
                                             if a.startswith("_saved_") and
                                             isinstance(getattr(fn, a), torch.Tensor)))] += 1
    e_shapes = Counter((n["name"], tuple(sorted(tuple(r["value"]["shape"])
                                                for r in n["saved"]["tensors"] if r["value"])))
                       for n in data["nodes"] if n["name"] in ("AddmmBackward0", "ReluBackward0"))
    assert e_shapes == t_shapes
    for n in by_name(data, "AddmmBackward0"):
        assert n["saved"]["state"] == "live"
        for r in n["saved"]["tensors"]:
            assert r["value"] is None and "not saved" in r["note"] or \
                r["version"] == r["now"] and r["value"]["dtype"] == "float32"


def test_saved_tensors_freed_and_modified():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    y.sum().backward()
    data = build(y.sum(), run_backward=False)
    assert by_name(data, "ExpBackward0")[0]["saved"]["state"] == "freed"
    a = x * 1
    b = a.sin()
    a.mul_(2)  # b's saved input is now stale: backward would raise
    (row,) = by_name(build(b.sum(), run_backward=False), "SinBackward0")[0]["saved"]["tensors"]
    assert row["now"] == row["version"] + 1


def test_sources_are_read_from_the_files_they_name():
    data, _, _ = explored_mlp(run_backward=False)
    assert data["sources"]
    for src in data["sources"].values():
        for part in ("forward", "backward"):
            s = src[part]
            if s is None:
                continue
            with open(os.path.join(ROOT, s["file"])) as f:
                lines = f.read().splitlines()
            n = s["code"].count("\n") + 1
            assert textwrap.dedent("\n".join(lines[s["line"] - 1:s["line"] - 1 + n])) == s["code"]
            assert re.search(rf"def {part}\b|def _call\b", s["code"])
    addmm = data["sources"][by_name(data, "AddmmBackward0")[0]["src"]]
    assert addmm["forward"]["file"] == os.path.join("ember", "ops", "linalg.py")
    acc = data["sources"][by_name(data, "AccumulateGrad")[0]["src"]]
    assert acc["forward"] is None and "var._grad" in acc["backward"]["code"]


class Square(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


def test_custom_function_shows_the_users_code():
    x = ember.tensor([1.0, 3.0], requires_grad=True)
    data = build(Square.apply(x).sum())
    (node,) = by_name(data, "SquareBackward")
    src = data["sources"][node["src"]]
    assert src["forward"]["code"] == textwrap.dedent(inspect.getsource(Square.forward)).rstrip()
    assert src["backward"]["line"] == inspect.getsourcelines(Square.backward)[1]
    assert src["backward"]["file"].endswith("test_viz_explore.py")
    assert [r["name"] for r in node["saved"]["tensors"]] == ["saved_tensors[0]"]


def test_events_are_the_traces_in_the_engines_order():
    data, _, _ = explored_mlp()
    model, X, y, loss_fn = viz_graphs.mlp()
    with ember.autograd.trace() as tr:
        loss_fn(model(X), y).backward()
    assert [e["text"] for e in data["events"]] == [str(e).strip() for e in tr.events]
    steps = data["steps"]
    assert steps[0]["node"] == -1 and steps[0]["ready"] == [by_name(data, "NllLossBackward0")[0]
                                                            ["id"]]
    for j in range(1, len(steps)):  # each node popped is the head of the queue before it
        assert steps[j]["node"] == steps[j - 1]["ready"][0]
    assert steps[-1]["ready"] == []
    for ev in data["events"]:
        assert ev["node"] == steps[ev["step"]]["node"]


def test_leaf_grads_match_torch():
    data, model, _ = explored_mlp()
    _, X, y, _ = viz_graphs.mlp()
    t_model = viz_graphs.torch_mlp(model)
    torch.nn.functional.cross_entropy(t_model(torch.from_numpy(X.numpy())),
                                      torch.from_numpy(y.numpy())).backward()
    t_grads = {"linear_relu_stack." + k[2:]: p.grad for k, p in t_model.named_parameters()}
    for n in data["nodes"]:
        if n["kind"] == "leaf":
            g = t_grads[n["name"]].numpy()
            assert n["grad"]["norm"] == pytest.approx(float(np.linalg.norm(g)), rel=1e-4)
            shown = [float(v) for v in n["grad"]["preview"].strip("[]…, ").split(", ")]
            np.testing.assert_allclose(shown, g.reshape(-1)[:8], rtol=1e-3, atol=1e-7)
            assert not n["grad"]["bad"]
    assert data["anomalies"] == []


def test_fan_out_buffers_and_hooks():
    x, y, z = viz_graphs.fanout_hooks()
    data = build(z)
    (mul,) = [n for n in by_name(data, "MulBackward0") if n["hooks"]]  # y's (not sin * cos)
    kinds = [h["kind"] for h in mul["hooks"]]
    assert kinds == ["tensor hook (output 0)", "retain_grad (output 0)", "pre-hook", "post-hook"]
    assert "g + 1" in mul["hooks"][0]["src"]["code"]
    assert mul["hooks"][0]["src"]["file"].endswith("viz_graphs.py")
    acc = by_name(data, "AccumulateGrad")[0]
    assert [h["kind"] for h in acc["hooks"]] == ["tensor hook (output 0)",
                                                 "post-accumulate-grad hook"]
    x2, y2, z2 = viz_graphs.fanout_hooks()
    with ember.autograd.trace() as tr:
        z2.backward()
    assert [e["text"] for e in data["events"]] == [str(e).strip() for e in tr.events]
    # y feeds three ops: its buffer is written three times, the last write holds dz/dy
    writes = [s["buffers"][str(mul["id"])][0] for s in data["steps"]
              if str(mul["id"]) in s["buffers"]]
    assert len(writes) == 3
    yv = y2.detach().numpy().astype(np.float64)
    dzdy = np.cos(2 * yv) + 1
    assert writes[-1]["norm"] == pytest.approx(np.linalg.norm(dzdy), rel=1e-5)
    assert writes[0]["norm"] != pytest.approx(writes[-1]["norm"])
    (ev,) = [e for e in data["events"] if e["kind"] == "node" and e["node"] == mul["id"]]
    assert ev["in"][0]["norm"] == pytest.approx(np.linalg.norm(dzdy + 1), rel=1e-5)  # y's hook
    np.testing.assert_allclose(y2.grad.numpy(), dzdy + 1, rtol=1e-5)
    (leaf,) = [n for n in data["nodes"] if n["kind"] == "leaf"]
    assert leaf["grad"]["norm"] == pytest.approx(float(np.linalg.norm(x.grad.numpy())))


def test_nan_marker_is_what_detect_anomaly_reports():
    def graph():
        x = ember.tensor([0.0, 1.0], requires_grad=True)
        return x, (x.sqrt() * 0).sum()

    x, z = graph()
    data = build(z)
    x2, z2 = graph()
    with pytest.raises(RuntimeError) as err, pytest.warns(UserWarning):
        with ember.autograd.detect_anomaly():
            z2.backward()
    first = data["anomalies"][0]
    assert first["message"] == str(err.value)
    assert data["nodes"][first["node"]]["name"] == "SqrtBackward0"
    assert data["events"][first["event"]]["kind"] == "node"
    (leaf,) = [n for n in data["nodes"] if n["kind"] == "leaf"]
    assert leaf["grad"]["bad"] == "nan" and leaf["grad"]["norm"] is None
    assert any(a["node"] == leaf["id"] for a in data["anomalies"])
    json.dumps(data, allow_nan=False)  # the page's JSON stays valid


def test_backward_options():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    w = ember.tensor([3.0, 4.0], requires_grad=True)
    data = build((x * w).sum(), run_backward=False)
    assert data["events"] == [] and data["steps"] == []
    assert [n["grad"] for n in data["nodes"] if n["kind"] == "leaf"] == [None, None]
    assert by_name(data, "MulBackward0")[0]["saved"]["state"] == "live"
    data = build((x * w).sum(), params={"x": x, "w": w}, inputs=[w])
    grads = {n["name"]: n["grad"] for n in data["nodes"] if n["kind"] == "leaf"}
    assert grads["x"] is None and grads["w"]["preview"] == "[1, 2]"
    assert x.grad is None and w.grad.tolist() == [1.0, 2.0]
    with pytest.raises(TypeError, match="outputs must be a Tensor"):
        build([1.0])


def boxes_ok(data):
    nodes = data["nodes"]
    for e in data["edges"]:  # inputs above the nodes that use them
        assert nodes[e["src"]]["y"] < nodes[e["dst"]]["y"]
        assert e["path"].startswith("M")
    rects = [(n["x"] - n["w"] / 2, n["y"] - n["h"] / 2, n["x"] + n["w"] / 2, n["y"] + n["h"] / 2)
             for n in nodes]
    for i, a in enumerate(rects):
        for b in rects[i + 1:]:
            assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], (a, b)
    for n, r in zip(nodes, rects):
        g = n["group"]
        while g >= 0:  # a node sits inside its module's box and all around it
            box = data["groups"][g]["box"]
            assert box[0] <= r[0] and box[1] <= r[1] and r[2] <= box[2] and r[3] <= box[3]
            g = data["groups"][g]["parent"]


@pytest.mark.parametrize("engine", ["dot", "layered"])
def test_layout(engine, monkeypatch):
    if engine == "dot" and _layout.find_dot() is None:
        pytest.skip("Graphviz's dot is not installed (apt-get install graphviz)")
    if engine == "layered":
        monkeypatch.setattr(_layout, "find_dot", lambda: None)
    data, _, _ = explored_mlp()
    assert data["layout"]["engine"] == engine
    boxes_ok(data)
    x, y, z = viz_graphs.fanout_hooks()
    data = build(z)
    assert data["layout"]["engine"] == engine
    boxes_ok(data)


def test_big_graph_gets_the_layered_layout():
    x, out = viz_graphs.chain(_layout.DOT_MAX_NODES + 100)
    data = build(out)
    assert data["layout"]["engine"] == "layered"
    assert len(data["nodes"]) > _layout.DOT_MAX_NODES
    ys = sorted(n["y"] for n in data["nodes"])
    assert len(set(ys)) == len(ys)  # a chain: one node per rank


def test_page_is_self_contained_and_carries_the_data():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: "</script><!--" and g)  # source text that must not end the data
    data = build(y.sum())
    html = page(data)
    assert not re.search(r"<script[^>]+src|<link|@import|url\(http", html, re.I)
    m = re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S)
    assert json.loads(m.group(1)) == json.loads(json.dumps(data))
    assert html.count("<script") == 2 and html.count("<style") == 1


def test_explore_writes_the_page(tmp_path):
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    path = ember.viz.explore((x * x).sum(), tmp_path / "g.html")
    assert path == tmp_path / "g.html" and "MulBackward0" in path.read_text()
    assert x.grad.tolist() == [2.0, 4.0]


@pytest.mark.skipif(not os.path.isdir("/usr/share/datasets/fashion-mnist")
                    and not os.environ.get("EMBER_DATASETS"), reason="no Fashion-MNIST here")
def test_quickstart_explore(tmp_path, capsys):
    from ember.examples import quickstart

    page_path = tmp_path / "graph.html"
    quickstart.main(["--epochs", "0", "--limit", "128", "--data-root", str(tmp_path / "data"),
                     "--save", str(tmp_path / "m.pth"), "--explore", str(page_path)])
    assert f"Wrote {page_path}" in capsys.readouterr().out
    html = page_path.read_text()
    data = json.loads(re.search(r'id="data">(.*?)</script>', html, re.S).group(1))
    assert {g["title"] for g in data["groups"]} >= {"NeuralNetwork", "linear_relu_stack.4 (Linear)"}
    assert data["events"][-1]["text"].split()[1:3] == ["accumulate", "AccumulateGrad#6.grad"]
    assert sum(n["kind"] == "leaf" and n["grad"] is not None for n in data["nodes"]) == 6


def test_hooks_tour_explore(tmp_path, monkeypatch, capsys):
    import runpy

    page_path = tmp_path / "hooks.html"
    monkeypatch.setattr("sys.argv", ["hooks_tour.py", "--explore", str(page_path)])
    runpy.run_path(os.path.join(ROOT, "examples", "hooks_tour.py"), run_name="__main__")
    order = re.findall(r"\d\. (.+)", capsys.readouterr().out)
    assert order == ["tensor hook on y", "pre-hook of MulBackward0", "post-hook of MulBackward0",
                     "tensor hook on leaf x", "post-accumulate hook on x"]  # as without a page
    data = json.loads(re.search(r'id="data">(.*?)</script>', page_path.read_text(), re.S)
                      .group(1))
    assert [e["kind"] for e in data["events"]] == [
        "node", "tensor_hook", "retain_grad", "pre_hook", "node", "post_hook", "tensor_hook",
        "node", "accumulate", "post_accumulate_grad_hook"]
