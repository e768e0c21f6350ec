"""ember.viz.explore's page in a real headless browser: Debian's Chromium driven by Playwright.

Skipped, with the reason, where Playwright or Chromium is missing (CI installs both:
``pip install playwright`` and ``apt-get install chromium``; Playwright's own browser download
is not used). ``EMBER_CHROMIUM`` names another Chromium binary.
"""

import inspect
import json
import os
import re
import shutil
import textwrap
import time

import numpy as np
import pytest
import torch
import viz_graphs

import ember
from ember.ops.linalg import Addmm
from ember.viz import _layout

sync_api = pytest.importorskip("playwright.sync_api",
                               reason="needs Playwright for Python: pip install playwright")
CHROMIUM = os.environ.get("EMBER_CHROMIUM") or shutil.which("chromium") or \
    shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip("needs Chromium: apt-get install chromium", allow_module_level=True)
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)  # a fresh profile each
        yield b
        b.close()


@pytest.fixture
def tab(browser):
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.set_default_timeout(10_000)
    errors: list = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    yield page
    page.close()
    assert errors == []


def open_page(tab, path) -> tuple[dict, float]:
    """Load the page; return its embedded data and the seconds until it had drawn."""
    t = time.perf_counter()
    tab.goto(path.resolve().as_uri())
    tab.wait_for_selector("body[data-ready='1']", timeout=30_000)
    took = time.perf_counter() - t
    html = path.read_text(encoding="utf-8")
    blob = re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S)
    return json.loads(blob.group(1)), took


def step_through(tab, n: int) -> list:
    """Press next until the end; the event text shown at each press."""
    shown = []
    tab.click("#first")
    for _ in range(n):
        tab.click("#next")
        shown.append(tab.inner_text("#event-text").strip())
    tab.click("#next")
    assert tab.inner_text("#counter") == f"done, {n} / {n}"
    return shown


def trace_lines(backward) -> list:
    with ember.autograd.trace() as tr:
        backward()
    return [str(e).strip() for e in tr.events]


def test_quickstart_mlp(tab, tmp_path):
    model, X, y, loss_fn = viz_graphs.mlp()
    path = ember.viz.explore(lambda: loss_fn(model(X), y), tmp_path / "mlp.html",
                             params=dict(model.named_parameters()))
    data, _ = open_page(tab, path)
    title = {g["id"]: g["title"] for g in data["groups"]}
    (last,) = [n for n in data["nodes"] if n["name"] == "AddmmBackward0"
               and title[n["group"]] == "linear_relu_stack.4 (Linear)"]
    tab.click(f"[data-id='{last['id']}']")
    assert tab.inner_text("#node-name") == "AddmmBackward0"
    text = tab.inner_text("#node")
    lines, line = inspect.getsourcelines(Addmm.forward)
    assert f"forward ember/ops/linalg.py:{line}" in text
    assert tab.inner_text("#node pre.src").rstrip() == textwrap.dedent("".join(lines)).rstrip()
    t_model = viz_graphs.torch_mlp(model)
    t_loss = torch.nn.functional.cross_entropy(t_model(torch.from_numpy(X.numpy())),
                                               torch.from_numpy(y.numpy()))
    t_addmm = t_loss.grad_fn.next_functions[0][0].next_functions[0][0]
    assert t_addmm.name() == "AddmmBackward0"
    saved = tab.inner_text("#saved")
    for t in (t_addmm._saved_mat1, t_addmm._saved_mat2):
        assert "(" + ", ".join(map(str, t.shape)) + ")" in saved

    model2, X2, y2, loss_fn2 = viz_graphs.mlp()
    want = trace_lines(lambda: loss_fn2(model2(X2), y2).backward())
    assert step_through(tab, len(data["events"])) == want

    rows = tab.query_selector_all("#grad-rows tr")
    grads = dict(model2.named_parameters())
    assert len(rows) == len(grads)
    for row in rows:
        name = row.query_selector(".link").inner_text().split()[1]
        g = grads[name].grad.numpy()
        norm = float(row.query_selector(".norm").inner_text())
        assert norm == pytest.approx(float(np.linalg.norm(g)), rel=1e-5)
        shown = row.query_selector(".preview").inner_text().strip("[]…, ").split(", ")
        np.testing.assert_allclose([float(v) for v in shown], g.reshape(-1)[:8], rtol=1e-3,
                                   atol=1e-7)


def test_fan_out_and_hooks(tab, tmp_path):
    x, y, z = viz_graphs.fanout_hooks()
    data, _ = open_page(tab, ember.viz.explore(z, tmp_path / "hooks.html"))
    (mul,) = [n for n in data["nodes"] if n["name"] == "MulBackward0" and n["hooks"]]
    tab.click(f"[data-id='{mul['id']}']")
    text = tab.inner_text("#node")
    for kind, code in [("tensor hook (output 0)", "g + 1"), ("retain_grad (output 0)", None),
                       ("pre-hook", "lambda gout: None"), ("post-hook", "lambda gin, gout")]:
        assert kind in text and (code is None or code in text)
    assert text.index("tensor hook") < text.index("retain_grad") < text.index("pre-hook") \
        < text.index("post-hook")

    x2, y2, z2 = viz_graphs.fanout_hooks()
    want = trace_lines(z2.backward)
    assert step_through(tab, len(data["events"])) == want
    # while CosBackward0 runs, SinBackward0 waits in the queue and y's buffer holds a part
    k = next(i for i, line in enumerate(want) if "CosBackward0" in line)
    tab.click("#first")
    for _ in range(k + 1):
        tab.click("#next")
    queue = tab.inner_text("#queue")
    assert "SinBackward0" in queue.split("input buffers")[0]
    assert tab.query_selector(f"#queue table [data-node='{mul['id']}']") is not None
    assert tab.query_selector(f".node.running[data-id='{data['events'][k]['node']}']")
    # at y's node: the buffer after y's hook, as numpy computes it
    k = next(i for i, line in enumerate(want) if line.split()[1:3] == ["node", "MulBackward0#2"])
    tab.click("#first")
    for _ in range(k + 1):
        tab.click("#next")
    yv = y2.detach().numpy().astype(np.float64)
    shown = float(tab.query_selector("#event .norm").inner_text())
    assert shown == pytest.approx(np.linalg.norm(np.cos(2 * yv) + 2), rel=1e-5)


def test_nan_is_marked(tab, tmp_path):
    x = ember.tensor([0.0, 1.0], requires_grad=True)
    data, _ = open_page(tab, ember.viz.explore((x.sqrt() * 0).sum(), tmp_path / "nan.html"))
    warn = tab.inner_text("#warn")
    assert "Function 'SqrtBackward0' returned nan values in its 0th output." in warn
    tab.click("[data-anomaly='0']")
    assert tab.inner_text("#node-name") == "SqrtBackward0"
    assert tab.query_selector(".node.flagged.selected") is not None
    assert "nan" in tab.inner_text("#grad-table")


def test_layered_layout_and_collapsed_modules(tab, tmp_path, monkeypatch):
    monkeypatch.setattr(_layout, "find_dot", lambda: None)
    ember.manual_seed(0)
    layers = [m for _ in range(70) for m in (ember.nn.Linear(3, 3), ember.nn.Tanh())]
    model = ember.nn.Sequential(*layers)
    path = ember.viz.explore(lambda: model(ember.randn(2, 3)).sum(), tmp_path / "deep.html",
                             params=dict(model.named_parameters()))
    data, _ = open_page(tab, path)
    assert data["layout"]["engine"] == "layered" and len(data["nodes"]) > 400
    assert "layout: layered" in tab.inner_text("#summary")
    assert tab.query_selector(".cgroup") is not None  # too many boxes: modules start collapsed
    tab.click("#fit")
    tab.click("#expand-all")
    tab.wait_for_function("document.querySelectorAll('.cgroup').length === 0")
    tab.click("#last")
    assert tab.inner_text("#counter").startswith("done")
    tab.click("#collapse-all")
    tab.wait_for_function("document.querySelectorAll('.node').length < 5")


def test_ten_thousand_nodes_open_fast(tab, tmp_path):
    x, out = viz_graphs.chain(10_001)
    data, took = open_page(tab, ember.viz.explore(out, tmp_path / "big.html"))
    assert len(data["nodes"]) >= 10_000
    assert took < 3.0, f"the page took {took:.2f} s to open"
    tab.click("#last")
    assert tab.inner_text("#counter") == f"done, {len(data['events'])} / {len(data['events'])}"
    tab.click("#first")
    tab.click("#next")
    assert "SumBackward0#1" in tab.inner_text("#event-text")
    tab.click(".node.running")
    assert tab.inner_text("#node-name") == "SumBackward0"
