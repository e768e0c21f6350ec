"""Hook execution order: each scenario records events in ember and in torch; the logs must match."""

import pytest
import torch

import ember


def _r(g):
    """A hook-visible gradient, as a comparable value."""
    if g is None:
        return None
    return [round(float(v), 4) for v in g.detach().reshape(-1).tolist()]


def _grads(gs):
    return tuple(_r(g) for g in gs)


def leaf_hooks(lib, log):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: log.append(("h1", _r(g))) or g * 2)
    x.register_hook(lambda g: log.append(("h2", _r(g))))
    x.register_post_accumulate_grad_hook(lambda t: log.append(("post", _r(t.grad))))
    acc = (x * 3).grad_fn.next_functions[0][0]
    acc.register_prehook(lambda go: log.append(("acc_pre", _grads(go))))
    acc.register_hook(lambda gi, go: log.append(("acc_post", _grads(gi), _grads(go))))
    (x * 3).sum().backward()
    log.append(("grad", _r(x.grad)))


def nonleaf_full_order(lib, log):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    z = y.exp()
    y.register_hook(lambda g: log.append(("t1", _r(g))) or g + 1)
    y.retain_grad()
    y.register_hook(lambda g: log.append(("t2", _r(g))))
    y.grad_fn.register_prehook(lambda go: log.append(("pre", _grads(go))))
    y.grad_fn.register_hook(lambda gi, go: log.append(("post", _grads(gi), _grads(go))))
    z.grad_fn.register_hook(lambda gi, go: log.append(("z_post", _grads(gi), _grads(go))))
    x.register_hook(lambda g: log.append(("x", _r(g))))
    z.sum().backward()
    log.append(("y.grad", _r(y.grad)))


def retain_before_hook(lib, log):
    x = lib.tensor([1.0, -1.0], requires_grad=True)
    y = x * x
    y.retain_grad()
    y.register_hook(lambda g: g * 10)
    y.sum().backward()
    log.append(("y.grad", _r(y.grad)))
    log.append(("x.grad", _r(x.grad)))


def hooks_with_autograd_grad(lib, log):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    x.register_hook(lambda g: log.append(("x", _r(g))) or g * 2)
    y.register_hook(lambda g: log.append(("y", _r(g))))
    x.register_post_accumulate_grad_hook(lambda t: log.append(("post_acc",)))
    y.grad_fn.register_hook(lambda gi, go: log.append(("node", _grads(gi))))
    (gx,) = lib.autograd.grad(y.sum(), x)
    log.append(("gx", _r(gx), x.grad is None))
    z = x * 5
    (gz,) = lib.autograd.grad((z * z).sum(), z)
    log.append(("gz", _r(gz)))


def prehook_and_posthook_replace(lib, log):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    w = lib.tensor([3.0, 4.0], requires_grad=True)
    y = x * w
    y.grad_fn.register_prehook(lambda go: (go[0] * 2,))
    y.grad_fn.register_hook(lambda gi, go: (gi[0], gi[1] * 0 if gi[1] is not None else None))
    y.sum().backward()
    log.append((_r(x.grad), _r(w.grad)))


def removal(lib, log):
    x = lib.tensor([1.0], requires_grad=True)
    h1 = x.register_hook(lambda g: log.append("a"))
    x.register_hook(lambda g: log.append("b"))
    y = x * 2
    h3 = y.grad_fn.register_prehook(lambda go: log.append("pre"))
    h1.remove()
    h3.remove()
    h3.remove()  # removing twice is harmless
    with x.register_post_accumulate_grad_hook(lambda t: log.append("post")):
        y.sum().backward(retain_graph=True)
    y.sum().backward()
    log.append(_r(x.grad))


def branching_order(lib, log):
    """Ready nodes run newest-first (by creation), as torch's ready queue does."""
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    a = x * 2
    b = x + 1
    c = x.exp()
    d = a.tanh()
    out = (c * b).sum() + d.sum() + (a * c).sum()
    for name, t in zip("xabcd", (x, a, b, c, d)):
        t.register_hook(lambda g, n=name: log.append(n))
        if t.grad_fn is not None:
            t.grad_fn.register_prehook(lambda go, n=name: log.append("node_" + n))
    out.backward()


def two_leaves_accumulate_order(lib, log):
    x = lib.tensor([1.0], requires_grad=True)
    w = lib.tensor([2.0], requires_grad=True)
    for name, t in (("x", x), ("w", w)):
        t.register_hook(lambda g, n=name: log.append("hook_" + n))
        t.register_post_accumulate_grad_hook(lambda t, n=name: log.append("acc_" + n))
    h = x * w
    (h * x + w).sum().backward()


def _halves(lib):
    class Halves(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x[:2] * 1, x[2:] * 1

        @staticmethod
        def backward(ctx, ga, gb):
            return lib.cat([ga, gb]) if hasattr(lib, "cat") else ga.new_tensor(
                ga.tolist() + gb.tolist())
    return Halves


def multi_output_node(lib, log):
    x = lib.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    a, b = _halves(lib).apply(x)
    b.register_hook(lambda g: log.append(("b", _r(g))))
    a.register_hook(lambda g: log.append(("a", _r(g))))
    a.grad_fn.register_prehook(lambda go: log.append(("pre", _grads(go))))
    (a * 2).sum().backward()
    log.append(("x", _r(x.grad)))


def hook_added_during_backward(lib, log):
    x = lib.tensor([1.0], requires_grad=True)
    y = x * 2
    z = y * 3

    def outer(g):
        log.append("outer")
        y.register_hook(lambda g: log.append("late"))
    z.register_hook(outer)
    z.sum().backward()


def retain_grad_accumulates(lib, log):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.sum().backward(retain_graph=True)
    (y * 3).sum().backward()
    log.append(_r(y.grad))
    x.retain_grad()  # a no-op on a leaf
    log.append(x.retains_grad)
    log.append(y.retains_grad)


def many_leaves_ready_together(lib, log):
    ws = [lib.tensor([float(i + 1)], requires_grad=True) for i in range(5)]
    for i, w in enumerate(ws):
        w.register_post_accumulate_grad_hook(lambda t, i=i: log.append(i))
    h = ws[0] * ws[1] * ws[2] + ws[3] * ws[4]
    (h * ws[2]).sum().backward()


def retain_grad_vs_node_prehook(lib, log):
    """torch 2.13 updates a retained .grad before node pre-hooks run (and they can't change it)."""
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    z = y * y
    y.retain_grad()
    y.grad_fn.register_prehook(lambda go: log.append(("pre", _r(y.grad))) or (go[0] * 10,))
    y.register_hook(lambda g: log.append(("tensor", _r(g))) or g + 1)
    z.sum().backward()
    log.append(("y.grad", _r(y.grad), "x.grad", _r(x.grad)))


def hooks_with_backward_inputs(lib, log):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    w = lib.tensor([3.0, 4.0], requires_grad=True)
    x.register_hook(lambda g: log.append(("x", _r(g))))
    w.register_hook(lambda g: log.append(("w", _r(g))))
    w.register_post_accumulate_grad_hook(lambda t: log.append(("w_acc", _r(t.grad))))
    h = x * w
    h.register_hook(lambda g: log.append(("h", _r(g))) or g * 2)
    (h * h).sum().backward(inputs=[w], retain_graph=True)
    log.append((_r(w.grad), x.grad is None))
    (h * h).sum().backward(inputs=[h])
    log.append((_r(h.grad), h.retains_grad))


def posthook_sees_unbroadcast_grads(lib, log):
    a = lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    b = lib.tensor([1.0, -1.0, 2.0], requires_grad=True)
    y = a * b
    y.grad_fn.register_hook(lambda gi, go: log.append([tuple(g.shape) for g in gi]))
    y.sum().backward()
    log.append(_r(b.grad))


def fan_out_hook_sees_summed_grad(lib, log):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2
    h.register_hook(lambda g: log.append(("h", _r(g))))
    x.register_hook(lambda g: log.append(("x", _r(g))))
    unused = x * 5
    unused.register_hook(lambda g: log.append("never"))
    out = (h * 3 + h.exp() + x).sum()
    out.backward(retain_graph=True)
    out.backward()
    log.append(_r(x.grad))


def captured_node_that_also_runs(lib, log):
    """autograd.grad w.r.t. h and x: h's node runs, so its hook fires once, after capture."""
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2
    h.register_hook(lambda g: log.append(("h", _r(g))) or g * 10)
    gh, gx = lib.autograd.grad((h * h).sum(), [h, x])
    log.append((_r(gh), _r(gx)))


SCENARIOS = [leaf_hooks, nonleaf_full_order, retain_before_hook, hooks_with_autograd_grad,
             prehook_and_posthook_replace, removal, branching_order, two_leaves_accumulate_order,
             multi_output_node, hook_added_during_backward, retain_grad_accumulates,
             many_leaves_ready_together, retain_grad_vs_node_prehook, hooks_with_backward_inputs,
             posthook_sees_unbroadcast_grads, fan_out_hook_sees_summed_grad,
             captured_node_that_also_runs]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda f: f.__name__)
def test_event_sequence_matches_torch(scenario):
    e_log, t_log = [], []
    scenario(ember, e_log)
    scenario(torch, t_log)
    assert e_log, "scenario recorded nothing"
    assert e_log == t_log


def test_hook_errors_match_torch():
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't "
                                               "require gradient"):
            lib.ones(2).register_hook(lambda g: g)
        y = lib.ones(2, requires_grad=True) * 2
        with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered "
                                               "on non-leaf tensors"):
            y.register_post_accumulate_grad_hook(lambda t: None)
        with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has "
                                               "requires_grad=False"):
            lib.ones(2).retain_grad()


def test_removable_handle_context_and_pickle():
    import pickle
    from collections import OrderedDict

    from ember.utils.hooks import RemovableHandle

    hooks = OrderedDict()
    h = RemovableHandle.add(hooks, print)
    assert h.id in hooks
    with h:
        pass
    assert h.id not in hooks
    h2 = RemovableHandle.add(hooks, len)
    h3 = pickle.loads(pickle.dumps(h2))
    assert h3.id == h2.id


def test_hooks_returning_bad_values_raise_like_torch():
    def myhook(g):
        return g.sum()

    cases = [
        lambda lib, x, h: h.register_hook(myhook),
        lambda lib, x, h: x.register_hook(lambda g: g.double()),
        lambda lib, x, h: x.register_hook(lambda g: 3),
        lambda lib, x, h: h.grad_fn.register_prehook(lambda go: (go[0].sum(),)),
        lambda lib, x, h: h.grad_fn.register_hook(lambda gi, go: (gi[0].sum(), None)),
    ]
    for case in cases:
        errs = []
        for lib in (ember, torch):
            x = lib.ones(3, requires_grad=True)
            h = x * 2
            case(lib, x, h)
            with pytest.raises((RuntimeError, TypeError)) as info:
                h.sum().backward()
            errs.append((type(info.value), str(info.value).replace("torch.", "ember.")))
        assert errs[0] == errs[1]


def multi_grad_hook(lib, log):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    w = lib.tensor([3.0], requires_grad=True)
    unused = lib.tensor([1.0], requires_grad=True)
    h = x * w
    g = lib.autograd.graph
    g.register_multi_grad_hook((x, h, unused), lambda gs: log.append(("all", [_r(t) for t in gs])))
    g.register_multi_grad_hook((x, h), lambda gr: log.append(("any", _r(gr))), mode="any")
    x.register_hook(lambda gr: log.append("x"))
    h.register_hook(lambda gr: log.append("h"))
    (h * h).sum().backward(retain_graph=True)
    lib.autograd.grad((h * h).sum(), [h])
    handle = g.register_multi_grad_hook((w,), lambda gs: log.append("w"))
    handle.remove()
    (h * 2).sum().backward()


def test_multi_grad_hook_matches_torch():
    e_log, t_log = [], []
    multi_grad_hook(ember, e_log)
    multi_grad_hook(torch, t_log)
    assert e_log == t_log and e_log
