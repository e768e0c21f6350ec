"""Backward saves only what the gradients that will run read (torch's derivatives.yaml rule):
valid torch programs that modify a tensor in place after using it run, and chains keep only
the intermediates their gradients need. Every oracle ``check`` also compares the number of
tensors packed through saved_tensors_hooks with torch's (``oracle.check_saved``)."""

import gc
import weakref

import numpy as np
import pytest
import torch
from oracle import arr

import ember


def _overwrite_row(lib, x):
    y = x.clone()
    y[0] = y[1] * 2
    return y.pow(2)


def _overwrite_with_product(lib, x, w):
    y = x.clone()
    y[0] = y[1] @ w
    return y * 3


def _recurrence(lib, x):
    y = x.clone()
    for i in range(1, y.shape[0]):
        y[i] = y[i - 1] * 0.5 + y[i]
    return y


def _linear_weight_changed(lib, x, w, b):
    out = lib.nn.functional.linear(x, w, b)
    with lib.no_grad():
        w.mul_(2)
    return out


def _scalar_product_of_view(lib, x):
    y = x * 1
    v = y[0]
    z = v * 2.0  # saves nothing: the changed y is not needed
    y.add_(1)
    return z + y.sum()


PROGRAMS = [
    (_overwrite_row, [(4, 3)], [0]),
    (_overwrite_with_product, [(4, 3), (3, 3)], [0]),
    (_recurrence, [(5, 3)], [0]),
    (_linear_weight_changed, [(4, 3), (2, 3), (2,)], [1, 2]),
    (_scalar_product_of_view, [(3, 2)], [0]),
]


@pytest.mark.parametrize("fn,shapes,grad", PROGRAMS, ids=lambda p: getattr(p, "__name__", ""))
def test_inplace_after_use_runs_as_in_torch(fn, shapes, grad):
    arrays = [arr(*s) for s in shapes]
    u = None
    results = {}
    for lib in (torch, ember):
        ts = [lib.tensor(a.copy(), requires_grad=i in grad) for i, a in enumerate(arrays)]
        out = fn(lib, *ts)
        if u is None:
            u = np.random.default_rng(0).standard_normal(tuple(out.shape)).astype(np.float32)
        out.backward(lib.tensor(u))
        results[lib.__name__] = [out.detach().numpy()] + [ts[i].grad.numpy() for i in grad]
    for e, t in zip(results["ember"], results["torch"]):
        np.testing.assert_allclose(e, t, rtol=1e-5, atol=1e-6)


def test_modified_saved_input_still_raises():
    """What a gradient does read stays version-checked."""
    for lib in (torch, ember):
        x = lib.randn(3, requires_grad=True)
        w = lib.randn(3, requires_grad=True)
        y = w * 1
        out = x * y  # x's gradient reads y
        y.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.sum().backward()


def _alive_after_chain(lib, n: int) -> int:
    x = lib.randn(3, requires_grad=True)
    y = x * 1
    refs = []
    for _ in range(n):
        y = y * 0.5
        refs.append(weakref.ref(y))
    gc.collect()
    return sum(r() is not None for r in refs)


def test_scalar_chain_keeps_only_the_last_intermediate():
    assert _alive_after_chain(ember, 100) == _alive_after_chain(torch, 100) == 1


@pytest.mark.parametrize("need", [(True, False), (False, True), (True, True)])
def test_matmul_saves_each_operand_for_the_other(need):
    """``x @ w`` with only ``w`` requiring grad saves ``x`` and not ``w``; and so on."""
    counts = {}
    for lib in (torch, ember):
        a = lib.randn(4, 3, requires_grad=need[0])
        b = lib.randn(3, 2, requires_grad=need[1])
        shapes = []

        def pack(t, shapes=shapes):
            shapes.append(tuple(t.shape))
            return t

        with lib.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            a @ b
        counts[lib.__name__] = sorted(shapes)
    assert counts["ember"] == counts["torch"]
    assert counts["ember"] == sorted([(4, 3)] * need[1] + [(3, 2)] * need[0])


def test_harness_fails_when_ember_saves_what_torch_does_not(monkeypatch):
    """oracle.check is strict: a save torch does not make fails the test."""
    from oracle import check

    from ember.ops.pointwise import Mul

    monkeypatch.setattr(Mul, "save_for", None)  # save both operands whatever needs grad
    with pytest.raises(AssertionError, match="ember saves 2 tensors for backward, torch 1"):
        check(lambda m, x, w: x * w, arr(3), arr(3))


def test_harness_runs_backward_for_each_choice_of_inputs(monkeypatch):
    """A plan that skips what a gradient reads is caught by the per-subset backward."""
    from oracle import check

    from ember.ops.pointwise import Mul

    monkeypatch.setattr(Mul, "save_for", ((0,), (1,)))  # each operand for its own gradient
    with pytest.raises((TypeError, AttributeError)):
        check(lambda m, x, w: x * w, arr(3), arr(3))


@pytest.mark.parametrize("need", [(True, False), (False, True)])
def test_unsaved_entries_read_as_none_like_torch(need):
    def saved(lib):
        x = lib.randn(3, requires_grad=need[0])
        w = lib.randn(3, requires_grad=need[1])
        node = (x * w).grad_fn
        return node._saved_self is None, node._saved_other is None

    assert saved(ember) == saved(torch) == (not need[1], not need[0])


@pytest.mark.parametrize("op", [
    lambda lib, x: x.sort(1), lambda lib, x: x.max(1), lambda lib, x: x.topk(2),
    lambda lib, x: x.cummax(1), lambda lib, x: lib.nn.functional.max_pool1d(
        x.unsqueeze(0), 2, return_indices=True)])
def test_saved_indices_are_version_checked_like_torch(op):
    """Value-selecting ops save their indices output: writing into it breaks backward."""
    messages = []
    for lib in (torch, ember):
        x = lib.tensor(arr(3, 4), requires_grad=True)
        values, indices = op(lib, x)
        indices.zero_()
        with pytest.raises(RuntimeError, match="modified by an inplace operation") as info:
            values.sum().backward()
        messages.append(str(info.value).split(";")[0].split(": ")[-1])
    assert messages[0].replace("torch.", "") == messages[1].replace("ember.", "")


def _cell(kind: str):
    """``nn.<kind>`` (3 -> 4) run with its parameters given as inputs."""
    def fn(m, x, h, wi, wh, bi, bh):
        c = getattr(m.nn, kind)(3, 4)
        for name, t in zip(("weight_ih", "weight_hh", "bias_ih", "bias_hh"), (wi, wh, bi, bh)):
            delattr(c, name)
            setattr(c, name, t)
        return c(x, (h, h * 0.5) if kind == "LSTMCell" else h)
    return fn


@pytest.mark.parametrize("kind,gates", [("RNNCell", 1), ("LSTMCell", 4), ("GRUCell", 3)])
def test_fused_cells_save_what_torchs_composite_cells_save(kind, gates):
    """ember fuses a cell's gate math into one node; it saves what torch's CPU composite saves,
    for every choice of inputs requiring grad (oracle.check), and backward matches."""
    from oracle import check

    check(_cell(kind), arr(2, 3), arr(2, 4), arr(gates * 4, 3), arr(gates * 4, 4),
          arr(gates * 4), arr(gates * 4), atol=1e-5)
