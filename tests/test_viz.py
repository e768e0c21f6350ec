"""ember.viz: make_dot against torchviz and a walk of next_functions; print_graph's tree."""

import re
import sys
from collections import Counter

import pytest
import torch
from oracle import arr

import ember
import ember.viz as viz


def program(lib):
    w = lib.tensor(arr(3, 2), requires_grad=True)
    b = lib.tensor(arr(2), requires_grad=True)
    x = lib.tensor(arr(4, 3))
    h = (x.matmul(w) + b).tanh()
    out = (h * h.exp()).sum()
    return out, {"weight": w, "bias": b}


def walk(t):
    """Every (child, parent) edge and node type name under ``t.grad_fn``."""
    edges, names, seen, stack = Counter(), Counter(), set(), [t.grad_fn]
    while stack:
        fn = stack.pop()
        if fn in seen:
            continue
        seen.add(fn)
        names[type(fn).__name__] += 1
        for nxt, _ in fn.next_functions:
            if nxt is not None:
                edges[(type(nxt).__name__, type(fn).__name__)] += 1
                stack.append(nxt)
    return edges, names


def parse(dot):
    """Node labels by id and labelled edges from a Digraph's source."""
    labels, edges = {}, Counter()
    for line in dot.body:
        m = re.match(r'\s*(\d+) \[label=(?:"(.*?)"|([^ \]]+))', line, re.S)
        if m:
            labels[m.group(1)] = (m.group(2) or m.group(3) or "").replace("\\n", "\n")
    for line in dot.body:
        m = re.match(r"\s*(\d+) -> (\d+)", line)
        if m:
            edges[(labels[m.group(1)].split("\n")[0], labels[m.group(2)].split("\n")[0])] += 1
    return labels, edges


def test_make_dot_edges_match_next_functions_walk():
    pytest.importorskip("graphviz")
    out, params = program(ember)
    labels, edges = parse(viz.make_dot(out, params=params))
    g_edges, g_names = walk(out)
    fn_edges = Counter({k: v for k, v in edges.items() if k[0] in g_names and k[1] in g_names})
    assert fn_edges == g_edges
    assert Counter(lab for lab in labels.values() if lab in g_names) == g_names
    assert "weight\n (3, 2)" in labels.values() and "bias\n (2)" in labels.values()
    assert "\n ()" in labels.values()  # the output, green
    assert sum(edges[(n, "AccumulateGrad")] for n in ("weight", "bias")) == 2


def test_make_dot_matches_torchviz():
    pytest.importorskip("graphviz")
    torchviz = pytest.importorskip("torchviz")
    e_out, e_params = program(ember)
    t_out, t_params = program(torch)
    e_labels, e_edges = parse(viz.make_dot(e_out, params=e_params))
    t_labels, t_edges = parse(torchviz.make_dot(t_out, params=t_params))
    assert Counter(e_labels.values()) == Counter(t_labels.values())
    assert e_edges == t_edges


def test_make_dot_show_saved_and_attrs():
    pytest.importorskip("graphviz")
    x = ember.tensor(arr(3), requires_grad=True)
    y = x.exp().sum()
    dot = viz.make_dot(y, show_saved=True, show_attrs=True)
    labels, edges = parse(dot)
    assert "result\n (3)" in labels.values()  # ExpBackward0 saves its output
    assert any(lab.startswith("ExpBackward0\n") and "[saved tensor]" in lab
               for lab in labels.values())
    assert "orange" in dot.source


def test_make_dot_custom_function_saved_tensors_always_shown():
    pytest.importorskip("graphviz")

    class Sq(ember.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 2 * a * g

    x = ember.tensor(arr(2), requires_grad=True)
    labels, _ = parse(viz.make_dot(Sq.apply(x)))
    assert "SqBackward" in labels.values()
    assert list(labels.values()).count("\n (2)") >= 2  # output and the saved input


def test_make_dot_without_graphviz_explains(monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)  # makes `import graphviz` fail
    out, _ = program(ember)
    with pytest.raises(ImportError, match="pip install graphviz"):
        viz.make_dot(out)


def test_make_dot_deep_graph_no_recursion():
    pytest.importorskip("graphviz")
    x = ember.ones(1, requires_grad=True)
    y = x
    for _ in range(3000):
        y = y * 1.0
    labels, _ = parse(viz.make_dot(y))
    assert len(labels) == 3000 + 3


def test_print_graph(capsys):
    w = ember.tensor(arr(3), requires_grad=True)
    h = w * 2
    out = (h * h.exp()).sum()
    viz.print_graph(out, params={"w": w})
    assert capsys.readouterr().out.splitlines() == [
        "SumBackward0",
        "  MulBackward0",
        "    MulBackward0",
        "      AccumulateGrad -> w (3)",
        "    ExpBackward0",
        "      MulBackward0 (see above)",
    ]


def test_lazy_attribute():
    assert ember.viz is viz
