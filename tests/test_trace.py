"""ember.autograd.trace: the backward pass as an ordered log of events."""

import numpy as np
import pytest

import ember


def small_graph():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    w = ember.tensor([3.0, -1.0], requires_grad=True)
    h = x * w
    h.register_hook(lambda g: g * 2)
    h.retain_grad()
    y = (h.exp() + h).sum()
    x.register_post_accumulate_grad_hook(lambda t: None)
    return x, w, h, y


def test_small_graph_event_by_event():
    x, w, h, y = small_graph()
    with ember.autograd.trace() as tr:
        y.backward()
    got = [(e.kind, e.node, e.output_nr, e.grads_in, e.grads_out) for e in tr.events]
    assert got == [
        ("node", "SumBackward0#1", None, [()], [(2,)]),
        ("node", "AddBackward0#1", None, [(2,)], [(2,), (2,)]),
        ("node", "ExpBackward0#1", None, [(2,)], [(2,)]),
        ("tensor_hook", "MulBackward0#1", 0, [(2,)], [(2,)]),
        ("retain_grad", "MulBackward0#1", 0, [(2,)], [(2,)]),
        ("node", "MulBackward0#1", None, [(2,)], [(2,), (2,)]),
        ("node", "AccumulateGrad#1", None, [(2,)], []),
        ("accumulate", "AccumulateGrad#1", None, [(2,)], []),
        ("post_accumulate_grad_hook", "AccumulateGrad#1", None, [(2,)], []),
        ("node", "AccumulateGrad#2", None, [(2,)], []),
        ("accumulate", "AccumulateGrad#2", None, [(2,)], []),
    ]
    assert [e.step for e in tr.events] == list(range(1, 12))
    assert tr.events[3].replaced and tr.events[3].hook.endswith("<lambda>")
    # norms are those of the stored .grad
    assert tr.events[7].norm == pytest.approx(float(np.linalg.norm(x.grad.numpy())))
    assert tr.events[10].norm == pytest.approx(float(np.linalg.norm(w.grad.numpy())))


def test_log_is_readable_text(capsys):
    *_, y = small_graph()
    with ember.autograd.trace() as tr:
        y.backward()
    lines = str(tr).splitlines()
    assert len(lines) == len(tr.events)
    assert lines[0].split() == ["1", "node", "SumBackward0#1", "grads", "[()]", "->", "[(2,)]"]
    assert "tensor_hook" in lines[3] and "output 0" in lines[3] and "replaced" in lines[3]
    assert lines[7].startswith("  8  accumulate") and "norm=" in lines[7]
    tr.print()
    assert capsys.readouterr().out.strip() == str(tr).strip()


def test_node_hooks_and_autograd_grad_capture():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    y.grad_fn.register_prehook(lambda go: None)
    y.grad_fn.register_hook(lambda gi, go: None)
    with ember.autograd.trace() as tr:
        (g,) = ember.autograd.grad(y.sum(), x)
    kinds = [(e.kind, e.node) for e in tr.events]
    assert kinds == [("node", "SumBackward0#1"), ("pre_hook", "MulBackward0#1"),
                     ("node", "MulBackward0#1"), ("post_hook", "MulBackward0#1"),
                     ("capture", "AccumulateGrad#1")]
    assert tr.events[-1].norm == pytest.approx(float(np.linalg.norm(g.numpy())))


def test_trace_off_outside_block_and_nesting():
    x = ember.tensor([1.0], requires_grad=True)
    with ember.autograd.trace() as outer:
        with ember.autograd.trace() as inner:
            (x * 2).sum().backward()
        (x * 3).sum().backward()
    (x * 4).sum().backward()
    assert len(inner.events) == 4  # Sum, Mul, AccumulateGrad, accumulate
    assert len(outer.events) == 4
    assert x.grad.item() == 9.0
