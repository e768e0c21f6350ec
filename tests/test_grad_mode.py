"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode; thread-local as in torch."""

import threading

import pytest
import torch

import ember


def _same(fn):
    e, t = fn(ember), fn(torch)
    assert e == t, f"ember {e!r} != torch {t!r}"


def test_context_managers_nest_and_restore():
    def run(lib):
        x = lib.ones(2, requires_grad=True)
        out = []
        with lib.no_grad():
            out.append((x * 2).requires_grad)
            with lib.enable_grad():
                out.append((x * 2).requires_grad)
            out.append(lib.is_grad_enabled())
        out.append(lib.is_grad_enabled())
        with lib.set_grad_enabled(False):
            out.append((x * 2).requires_grad)
        out.append(lib.is_grad_enabled())
        lib.set_grad_enabled(False)  # as a plain call it switches immediately
        out.append(lib.is_grad_enabled())
        lib.set_grad_enabled(True)
        with lib.inference_mode():
            out.append(((x * 2).requires_grad, lib.is_grad_enabled()))
        with lib.inference_mode(False):
            out.append((x * 2).requires_grad)
        return out
    _same(run)


def test_decorators():
    def run(lib):
        x = lib.ones(2, requires_grad=True)

        @lib.no_grad()
        def f(t):
            return (t * 2).requires_grad

        @lib.enable_grad()
        def g(t):
            return (t * 2).requires_grad

        @lib.no_grad()
        def gen(t):
            yield (t * 2).requires_grad
            yield lib.is_grad_enabled()

        @lib.set_grad_enabled(False)
        def h(t):
            return (t * 2).requires_grad

        lib.set_grad_enabled(True)  # the decorator's construction switched it off
        with lib.no_grad():
            inner = g(x)
        return [f(x), inner, list(gen(x)), lib.is_grad_enabled(), h(x), lib.is_grad_enabled()]
    _same(run)


def test_exception_inside_block_restores_mode():
    for lib in (ember, torch):
        with pytest.raises(ValueError):
            with lib.no_grad():
                raise ValueError
        assert lib.is_grad_enabled()


def test_grad_mode_is_thread_local():
    def run(lib):
        seen = {}

        def worker():
            seen["start"] = lib.is_grad_enabled()
            lib.set_grad_enabled(False)
            seen["after"] = lib.is_grad_enabled()

        with lib.no_grad():
            t = threading.Thread(target=worker)
            t.start()
            t.join()
            seen["main_inside"] = lib.is_grad_enabled()
        seen["main_after"] = lib.is_grad_enabled()
        return seen
    _same(run)


def test_no_grad_in_thread_does_not_leak_into_main():
    x = ember.ones(2, requires_grad=True)
    barrier = threading.Barrier(2)
    results = []

    def worker():
        with ember.no_grad():
            barrier.wait()  # main computes while this thread is inside no_grad
            barrier.wait()

    t = threading.Thread(target=worker)
    t.start()
    barrier.wait()
    results.append((x * 2).requires_grad)
    barrier.wait()
    t.join()
    assert results == [True]


def test_backward_inside_no_grad_still_works():
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = (x * x).sum()
        with lib.no_grad():
            y.backward()
        return x.grad.tolist()
    _same(run)
