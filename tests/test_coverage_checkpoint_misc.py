"""utils.checkpoint's helpers and selective checkpointing, utils.hooks' serialization warning,
against torch 2.13."""

from __future__ import annotations

import contextlib
import functools
import io
import pickle
import warnings

import numpy as np
import pytest
import torch
from oracle import arr, assert_same, same

import ember
from ember.ops.linalg import Mm


def test_noop_context_fn():
    for lib in (ember, torch):
        ctxs = lib.utils.checkpoint.noop_context_fn()
        assert len(ctxs) == 2 and all(isinstance(c, contextlib.nullcontext) for c in ctxs)
    assert ember.utils.checkpoint.checkpoint.__kwdefaults__["context_fn"] is \
        ember.utils.checkpoint.noop_context_fn
    same(lambda L: L.utils.checkpoint.checkpoint(lambda x: x, L.ones(1, requires_grad=True),
                                                 use_reentrant=True,
                                                 context_fn=L.utils.checkpoint.noop_context_fn))
    same(lambda L: L.utils.checkpoint.checkpoint(lambda x: x, L.ones(1, requires_grad=True),
                                                 use_reentrant=True, context_fn=lambda: None))


def test_detach_variable():
    for lib in (ember, torch):
        a, b = lib.ones(2, requires_grad=True) * 2, lib.ones(2)
        out = lib.utils.checkpoint.detach_variable((a, b, 3))
        assert out[2] == 3 and out[0].requires_grad and out[0].is_leaf
        assert not out[1].requires_grad and out[0] is not a
    same(lambda L: L.utils.checkpoint.detach_variable([L.ones(1)]))


def test_check_backward_validity():
    for lib in (ember, torch):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            lib.utils.checkpoint.check_backward_validity([lib.ones(1), 2])
            lib.utils.checkpoint.check_backward_validity([lib.ones(1, requires_grad=True)])
        assert [str(w.message) for w in rec] == \
            ["None of the inputs have requires_grad=True. Gradients will be None"]
        assert rec[0].filename == __file__


def test_early_stop_and_debug_contexts():
    x = arr(3, 4)
    grads = []
    for lib in (ember, torch):
        ck = lib.utils.checkpoint
        t = lib.tensor(x, requires_grad=True)
        with ck.set_checkpoint_early_stop(False), ck.set_checkpoint_debug_enabled(None):
            out = ck.checkpoint(lambda v: (v.sin() * v).exp(), t, use_reentrant=False)
        with ck.set_checkpoint_debug_enabled(False):
            out.sum().backward()
        grads.append(t.grad)
    assert_same(*grads)
    assert ember.utils.checkpoint._EARLY_STOP == [None] and ember.utils.checkpoint._DEBUG == [None]
    with pytest.raises(ZeroDivisionError), ember.utils.checkpoint.set_checkpoint_early_stop(True):
        1 / 0
    assert ember.utils.checkpoint._EARLY_STOP == [None]


def test_device_states():
    for lib in (ember, torch):
        ck = lib.utils.checkpoint
        assert ck.get_device_states(lib.ones(2), [lib.ones(1)], {"a": 3}) == ([], [])
        assert ck.set_device_states([], []) is None
        assert ck.set_device_states([0], [lib.ones(1)], device_type="meta") is None
        assert ck.DefaultDeviceType.get_device_type() == "cpu"
        ck.DefaultDeviceType.set_device_type("meta")
        try:
            assert ck.DefaultDeviceType.get_device_type() == "meta"
            assert ck.set_device_states([0], [lib.ones(1)]) is None
        finally:
            ck.DefaultDeviceType.set_device_type("cpu")


def test_policy_and_context_types():
    same(lambda L: [(p.name, p.value) for p in L.utils.checkpoint.CheckpointPolicy])
    same(lambda L: L.utils.checkpoint.CheckpointPolicy.PREFER_RECOMPUTE)
    same(lambda L: vars(L.utils.checkpoint.SelectiveCheckpointContext(is_recompute=False)))
    same(lambda L: L.utils.checkpoint.SelectiveCheckpointContext(False))
    same(lambda L: L.utils.checkpoint.create_selective_checkpoint_contexts(3))
    same(lambda L: L.utils.checkpoint.create_selective_checkpoint_contexts(["mm"]))
    for name in ("CheckpointPolicy", "SelectiveCheckpointContext", "DefaultDeviceType",
                 "create_selective_checkpoint_contexts"):
        assert getattr(ember.utils.checkpoint, name).__module__ == "ember.utils.checkpoint"


def _fn(lib, x, y):
    return lib.sigmoid(lib.matmul(lib.matmul(x, y), y)) * y


def _policy(lib, saved, mm):
    def policy(ctx, op, *args, **kwargs):
        saved.append(ctx.op_output is not None and not ctx.is_recompute)
        CP = lib.utils.checkpoint.CheckpointPolicy
        return CP.MUST_SAVE if op is mm else CP.PREFER_RECOMPUTE
    return policy


@pytest.mark.parametrize("as_list", [False, True])
def test_selective_checkpoint_values_and_grads(as_list):
    x, y = arr(4, 4), arr(4, 4)
    results = []
    for lib, mm in ((ember, Mm), (torch, torch.ops.aten.mm.default)):
        seen: list = []
        policy = [mm] if as_list else _policy(lib, seen, mm)
        ctx = functools.partial(lib.utils.checkpoint.create_selective_checkpoint_contexts,
                                policy)
        xs, ys = lib.tensor(x, requires_grad=True), lib.tensor(y, requires_grad=True)
        out = lib.utils.checkpoint.checkpoint(functools.partial(_fn, lib), xs, ys,
                                              use_reentrant=False, context_fn=ctx)
        u = lib.tensor(np.random.default_rng(0).standard_normal((4, 4)).astype("float32"))
        out.backward(u)
        results.append((out, xs.grad, ys.grad))
        assert all(seen)
    for e, t in zip(*results):
        assert_same(e, t)


def _mm_calls(policy_ops: list) -> int:
    """How many Mm ops run in backward: the gradients', plus the recomputation's."""
    x = ember.rand(4, 4, requires_grad=True)
    y = ember.rand(4, 4, requires_grad=True)
    ctx = functools.partial(ember.utils.checkpoint.create_selective_checkpoint_contexts,
                            policy_ops)
    out = ember.utils.checkpoint.checkpoint(functools.partial(_fn, ember), x, y,
                                            use_reentrant=False, context_fn=ctx)
    with ember.autograd.profiler.profile() as prof:
        out.sum().backward()
    return sum(e.name == "aten::mm" for e in prof.function_events)


def test_selective_checkpoint_saves_compute():
    assert _mm_calls([Mm]) + 2 == _mm_calls([])


def test_selective_checkpoint_create_graph():
    """With create_graph the recomputed graph is kept, so the kept ops run again: the second
    derivatives are those of the block without checkpointing (torch refuses a second backward
    through a selective checkpoint; ember keeps the recomputed graph)."""
    x, y = arr(3, 3), arr(3, 3)
    res = []
    for lib, sac in ((ember, True), (torch, False)):
        xs, ys = lib.tensor(x, requires_grad=True), lib.tensor(y, requires_grad=True)
        if sac:
            ctx = functools.partial(lib.utils.checkpoint.create_selective_checkpoint_contexts,
                                    [Mm])
            out = lib.utils.checkpoint.checkpoint(functools.partial(_fn, lib), xs, ys,
                                                  use_reentrant=False, context_fn=ctx)
        else:
            out = _fn(lib, xs, ys)
        (gx,) = lib.autograd.grad(out.sum(), xs, create_graph=True)
        (ggy,) = lib.autograd.grad((gx * gx).sum(), ys)
        res.append((gx, ggy))
    for e, t in zip(*res):
        assert_same(e, t, atol=1e-4, rtol=1e-3)


@pytest.mark.parametrize("allow", [False, True])
def test_selective_checkpoint_mutation(allow):
    def fn(lib, x, y):
        z = lib.matmul(x, y)
        w = z.sin()
        z.mul_(2)  # the kept output changes after it was kept
        return w * z

    def run(lib, mm):
        ctx = functools.partial(lib.utils.checkpoint.create_selective_checkpoint_contexts,
                                [mm], allow_cache_entry_mutation=allow)
        x = lib.tensor(arr(3, 3, rng=np.random.default_rng(1)), requires_grad=True)
        out = lib.utils.checkpoint.checkpoint(functools.partial(fn, lib), x, lib.ones(3, 3),
                                              use_reentrant=False, context_fn=ctx)
        out.sum().backward()
        return x.grad

    outcomes = []
    for lib, mm in ((ember, Mm), (torch, torch.ops.aten.mm.default)):
        try:
            outcomes.append(run(lib, mm))
        except RuntimeError as e:
            outcomes.append(str(e))
    if allow:
        assert_same(*outcomes)
    else:
        assert outcomes[0] == outcomes[1] == ("Tensor cached during selective activation "
                                              "checkpoint has been mutated")


def test_selective_checkpoint_keeps_profiler():
    """The contexts pass ops on to a profiler that was recording before them."""
    ctx = functools.partial(ember.utils.checkpoint.create_selective_checkpoint_contexts, [Mm])
    x = ember.rand(3, 3, requires_grad=True)
    with ember.autograd.profiler.profile() as prof:
        ember.utils.checkpoint.checkpoint(functools.partial(_fn, ember), x, x,
                                          use_reentrant=False, context_fn=ctx)
    names = [e.name for e in prof.function_events]
    assert names.count("aten::mm") == 2 and "aten::sigmoid" in names


def _save_warnings(lib, hook):
    t = lib.ones(2, requires_grad=True)
    t.register_hook(hook)
    u = t * 2
    u.register_hook(hook)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        lib.save(t, io.BytesIO())
        pickle.dumps(t)
        lib.save(u.detach(), io.BytesIO())
    return [str(w.message).split(" on tensor")[1] for w in rec], len(rec)


def test_warn_if_has_hooks():
    def hook(g):
        return g

    e, t = _save_warnings(ember, hook), _save_warnings(torch, hook)
    assert e == t and t[1] == 2
    silent = ember.utils.hooks.unserializable_hook(hook)
    assert silent is hook and hook.__torch_unserializable__ is True
    assert _save_warnings(ember, silent)[1] == _save_warnings(torch, silent)[1] == 0
    for lib in (ember, torch):
        x = lib.ones(2, requires_grad=True)
        x.register_hook(lambda g: g)
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            lib.utils.hooks.warn_if_has_hooks(x)
            lib.utils.hooks.warn_if_has_hooks(lib.ones(2))
        assert len(rec) == 1 and "will not be serialized" in str(rec[0].message)


def test_graph_exec_group():
    for lib in (ember, torch):
        G = lib.utils.checkpoint.GraphExecGroup
        g = G()
        with g as h:
            assert h is g and G._get_current_group() is g
            with pytest.raises(RuntimeError, match="GraphExecGroup contexts cannot be nested"):
                with G():
                    pass
        assert G._get_current_group() is None
    # two backward calls over disjoint parts of one checkpointed region, in a group
    grads = []
    for lib in (ember, torch):
        x = lib.tensor(arr(3, rng=np.random.default_rng(2)), requires_grad=True)
        y = lib.tensor(arr(3, rng=np.random.default_rng(3)), requires_grad=True)
        a, b = lib.utils.checkpoint.checkpoint(lambda u, v: (u.sin() * 2, v.cos() * 3), x, y,
                                               use_reentrant=False)
        with lib.utils.checkpoint.GraphExecGroup():
            a.sum().backward()
            b.sum().backward()
        grads.append((x.grad, y.grad))
    for e, t in zip(*grads):
        assert_same(e, t)


def test_sac_ignored_ops():
    """An op in SAC_IGNORED_OPS is neither kept nor asked about: it runs in the
    recomputation even under an everything-saving policy."""
    from ember.ops.pointwise import Sigmoid

    ck = ember.utils.checkpoint
    assert ck.SAC_IGNORED_OPS == set() and isinstance(torch.utils.checkpoint.SAC_IGNORED_OPS, set)

    def sigmoids(asked: list) -> int:
        def policy(ctx, op, *args, **kwargs):
            asked.append(op)
            return ck.CheckpointPolicy.MUST_SAVE

        x = ember.rand(3, 3, requires_grad=True)
        out = ck.checkpoint(functools.partial(_fn, ember), x, x, use_reentrant=False,
                            context_fn=functools.partial(
                                ck.create_selective_checkpoint_contexts, policy))
        with ember.autograd.profiler.profile() as prof:
            out.sum().backward()
        return sum(e.name == "aten::sigmoid" for e in prof.function_events)

    asked: list = []
    assert sigmoids(asked) == 0 and Sigmoid in asked
    ck.SAC_IGNORED_OPS.add(Sigmoid)
    try:
        asked = []
        assert sigmoids(asked) == 1 and Sigmoid not in asked
    finally:
        ck.SAC_IGNORED_OPS.discard(Sigmoid)
