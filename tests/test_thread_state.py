"""Autograd state that torch keeps per thread is per thread in ember: saved-tensor hooks and
their disabling, non-reentrant checkpointing, autograd.trace, autocast, grad mode."""

import threading

import numpy as np
import pytest
import torch

import ember
import ember.utils.checkpoint as ecp


def _in_thread(fn):
    """Run ``fn`` in another thread; return its result or raise its exception."""
    out = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            out["error"] = exc

    t = threading.Thread(target=run)
    t.start()
    t.join(30)
    assert not t.is_alive(), "thread hung"
    if "error" in out:
        raise out["error"]
    return out["value"]


def _packs_in_other_thread(lib) -> int:
    """Hooks pushed here; the tensors saved by an op in another thread."""
    packed = []
    with lib.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        _in_thread(lambda: lib.randn(3, requires_grad=True).exp())
    return len(packed)


def test_saved_tensors_hooks_are_per_thread():
    assert _packs_in_other_thread(ember) == _packs_in_other_thread(torch) == 0


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_disable_saved_tensors_hooks_is_per_thread(lib):
    graph = lib.autograd.graph
    with graph.disable_saved_tensors_hooks("disabled here"):
        with pytest.raises(RuntimeError, match="disabled here"):
            with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass

        def other():
            with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                return 1
        assert _in_thread(other) == 1


def _block(lib, x, w):
    return ((x * w).sin() * w).exp()


def _train_step(lib, seed: int):
    rng = np.random.default_rng(seed)
    x = lib.tensor(rng.standard_normal((8, 5)).astype(np.float32), requires_grad=True)
    w = lib.tensor(rng.standard_normal(5).astype(np.float32), requires_grad=True)
    return x, w


def test_non_reentrant_checkpoint_in_one_thread_leaves_another_alone():
    """One thread trains through a non-reentrant checkpoint while another trains plainly;
    both get the gradients of a plain single-threaded run."""
    start = threading.Barrier(2)
    results = {}

    def worker(name: str, use_checkpoint: bool):
        for step in range(30):
            x, w = _train_step(ember, step)
            if step == 0:
                start.wait()
            if use_checkpoint:
                y = ecp.checkpoint(lambda a, b: _block(ember, a, b), x, w, use_reentrant=False)
            else:
                y = _block(ember, x, w)
            y.sum().backward()
            results.setdefault(name, []).append(w.grad.numpy().copy())

    threads = [threading.Thread(target=worker, args=("cp", True)),
               threading.Thread(target=worker, args=("plain", False))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(results["cp"]) == len(results["plain"]) == 30
    for step in range(30):
        x, w = _train_step(torch, step)
        _block(torch, x, w).sum().backward()
        np.testing.assert_allclose(results["cp"][step], w.grad.numpy(), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(results["plain"][step], w.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_trace_records_only_its_own_thread():
    with ember.autograd.trace() as tr:
        _in_thread(lambda: ember.randn(3, requires_grad=True).exp().sum().backward())
    assert tr.events == []
    with ember.autograd.trace() as tr:
        ember.randn(3, requires_grad=True).exp().sum().backward()
    assert tr.events


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_autocast_state_is_per_thread(lib):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib.autocast("cpu", dtype=lib.float16, cache_enabled=False):
            state = _in_thread(lambda: (lib.is_autocast_enabled("cpu"),
                                        lib.get_autocast_dtype("cpu"),
                                        lib.is_autocast_cache_enabled()))
            assert lib.is_autocast_enabled("cpu")
    assert state == (False, lib.bfloat16, True)


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_grad_mode_is_per_thread(lib):
    with lib.no_grad(), lib.inference_mode():
        state = _in_thread(lambda: (lib.is_grad_enabled(), lib.is_inference_mode_enabled()))
    assert state == (True, False)
