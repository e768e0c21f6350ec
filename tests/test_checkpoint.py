"""Activation checkpointing: same values and grads as a plain run, fewer saved tensors."""

import gc
import warnings
import weakref

import numpy as np
import pytest
import torch
import torch.utils.checkpoint as tcp
from oracle import arr

import ember
import ember.utils.checkpoint as ecp
from ember.autograd.graph import OUT, PACKED

CALLS = []
KEEP = []


def block(lib, x, w):
    CALLS.append(1)
    p = x * w
    KEEP.append(weakref.ref(p))  # sin saves its input: a plain run keeps it alive
    h = p.sin()
    noise = lib.rand_like(h)  # checks that recomputation sees the same random numbers
    return (h * noise + h.exp()) * w


def saved_tensor_count(t) -> int:
    """Tensors held as saved values by the nodes reachable from ``t``."""
    seen, stack, n = set(), [t.grad_fn], 0
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        saved = node._saved if isinstance(node._saved, tuple) else ()
        n += sum(1 for s, _ in saved if s is not None and s is not PACKED)
        n += sum(1 for s, _ in saved if s is OUT)
        stack.extend(nxt for nxt, _ in node.next_functions)
    return n


def run(lib, mode, x_arr, w_arr, seed=0):
    """mode: None (plain), True (reentrant), False (non-reentrant)."""
    lib.manual_seed(seed)
    x = lib.tensor(x_arr, requires_grad=True)
    w = lib.tensor(w_arr, requires_grad=True)
    if mode is None:
        y = block(lib, x, w)
    else:
        cp = ecp if lib is ember else tcp
        y = cp.checkpoint(lambda a, b: block(lib, a, b), x, w, use_reentrant=mode)
    out = (y * y).sum()
    return x, w, y, out


X, W = arr(4, 3), arr(3)


def assert_same(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", [True, False])
def test_grads_equal_plain_run_and_torch(mode):
    res = {}
    for lib in (ember, torch):
        x0, w0, y0, o0 = run(lib, None, X, W)
        o0.backward()
        x, w, y, o = run(lib, mode, X, W)
        assert_same(y, y0)
        o.backward()
        assert_same(x.grad, x0.grad)
        assert_same(w.grad, w0.grad)
        res[lib] = (type(y.grad_fn).__name__, x.grad, w.grad)
    assert res[ember][0] == res[torch][0]  # CheckpointFunctionBackward / MulBackward0


@pytest.mark.parametrize("mode", [True, False])
def test_block_is_recomputed_once_and_intermediates_dropped(mode):
    CALLS.clear()
    KEEP.clear()
    _, _, y, out = run(ember, mode, X, W)
    gc.collect()
    assert KEEP[0]() is None  # the block's intermediate is not kept by the graph
    assert len(CALLS) == 1
    out.backward()
    assert len(CALLS) == 2


def test_plain_run_keeps_intermediates():
    KEEP.clear()
    _, _, y, out = run(ember, None, X, W)
    gc.collect()
    assert KEEP[0]() is not None


@pytest.mark.parametrize("mode", [True, False])
def test_fewer_saved_tensors(mode):
    _, _, y0, _ = run(ember, None, X, W)
    _, _, y, _ = run(ember, mode, X, W)
    assert saved_tensor_count(y) < saved_tensor_count(y0)
    assert saved_tensor_count(y) <= 2  # at most the block's inputs


def test_non_reentrant_supports_autograd_grad_and_double_backward():
    def grads(lib, mode):
        x = lib.tensor(X.astype(np.float64), requires_grad=True)
        f = lambda a: (a.sin() * a).exp()  # noqa: E731
        y = f(x) if mode is None else (ecp if lib is ember else tcp).checkpoint(
            f, x, use_reentrant=False)
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        (g2,) = lib.autograd.grad(g.sum(), x)
        return g, g2
    ref = grads(ember, None)
    for got in (grads(ember, False), grads(torch, False)):
        for a, b in zip(ref, got):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10)


def test_checkpoint_sequential_matches_plain():
    for lib in (ember, torch):
        cp = ecp if lib is ember else tcp
        w1, w2 = lib.tensor(arr(3), requires_grad=True), lib.tensor(arr(3), requires_grad=True)
        fns = [lambda t, w=w1: t * w, lambda t: t.tanh(), lambda t, w=w2: t * w, lambda t: t.exp()]
        x = lib.tensor(X, requires_grad=True)
        y0 = x
        for f in fns:
            y0 = f(y0)
        g0 = lib.autograd.grad(y0.sum(), [x, w1, w2])
        for reentrant in (False, True):
            y = cp.checkpoint_sequential(fns, 2, x, use_reentrant=reentrant)
            assert_same(y, y0)
            y.sum().backward()
            for t, g in zip((x, w1, w2), g0):
                assert_same(t.grad, g)
                t.grad = None


def test_missing_use_reentrant_warns_like_torch():
    msgs = []
    for cp in (ecp, tcp):
        x = (ember if cp is ecp else torch).ones(2, requires_grad=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            y = cp.checkpoint(lambda a: a * 2, x)
        msgs.append((str(w[-1].message), type(y.grad_fn).__name__))
    assert msgs[0] == msgs[1]


def test_no_input_requires_grad_warns():
    for cp, lib in ((ecp, ember), (tcp, torch)):
        with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
            y = cp.checkpoint(lambda a: a * 2, lib.ones(2), use_reentrant=True)
        assert not y.requires_grad


def test_saved_tensors_hooks_roundtrip():
    packed = []
    x = ember.tensor(arr(3), requires_grad=True)

    def pack(t):
        packed.append(tuple(t.shape))
        return t.detach().numpy().copy()

    with ember.autograd.graph.saved_tensors_hooks(pack, ember.from_numpy):
        y = (x.exp() * x).sum()
    assert packed  # exp saved its output, mul its inputs
    y.backward()
    x2 = ember.tensor(x.detach().numpy(), requires_grad=True)
    (x2.exp() * x2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), x2.grad.numpy(), rtol=1e-6)


def test_save_on_cpu_and_disable_saved_tensors_hooks_like_torch():
    for lib in (ember, torch):
        g = lib.autograd.graph
        with g.disable_saved_tensors_hooks("no hooks here"):
            with pytest.raises(RuntimeError, match="no hooks here"):
                with g.saved_tensors_hooks(lambda t: t, lambda t: t):
                    pass
        with g.saved_tensors_hooks(lambda t: t, lambda t: t):
            pass  # allowed again outside
        x = lib.ones(2, requires_grad=True)
        with g.save_on_cpu():
            y = (x * x).sum()
        y.backward()
        assert x.grad.tolist() == [2.0, 2.0]


def test_recomputation_that_saves_differently_raises_checkpoint_error():
    for lib, cp in ((ember, ecp), (torch, tcp)):
        state = {"n": 0}

        def fn(a, state=state):
            state["n"] += 1
            return (a * a).exp() if state["n"] == 1 else a.exp()  # fewer saves the 2nd time

        x = lib.ones(2, requires_grad=True)
        y = cp.checkpoint(fn, x, use_reentrant=False)
        with pytest.raises(cp.CheckpointError, match="A different number of tensors was saved"):
            y.sum().backward()
        with pytest.raises(ValueError, match="determinism_check should be one of"):
            cp.checkpoint(fn, x, use_reentrant=False, determinism_check="strict")


def test_context_fn_wraps_forward_and_recompute():
    for lib, cp in ((ember, ecp), (torch, tcp)):
        seen = []

        class Ctx:
            def __init__(self, name):
                self.name = name

            def __enter__(self, seen=seen):
                seen.append(self.name)

            def __exit__(self, *exc):
                return None

        x = lib.ones(2, requires_grad=True)
        y = cp.checkpoint(lambda a: a.exp(), x, use_reentrant=False,
                          context_fn=lambda: (Ctx("fwd"), Ctx("recompute")))
        y.sum().backward()
        assert seen == ["fwd", "recompute"]
        with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
            cp.checkpoint(lambda a: a.exp(), x, use_reentrant=True, context_fn=lambda: (
                Ctx("a"), Ctx("b")))
