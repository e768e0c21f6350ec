"""Module hooks vs torch: order, replacement of inputs/outputs/grads, removal, full backward."""

import numpy as np
import pytest
import torch

import ember

X = np.random.default_rng(3).standard_normal((2, 3)).astype(np.float32)


def model(lib):
    lin = lib.nn.Linear(3, 2)
    with lib.no_grad():
        lin.weight.copy_(lib.tensor(np.arange(6, dtype=np.float32).reshape(2, 3) / 10))
        lin.bias.copy_(lib.tensor(np.array([0.1, -0.2], dtype=np.float32)))
    return lin


def both(fn):
    return fn(ember), fn(torch)


def _np(x):
    if x is None:
        return None
    return x.detach().numpy().round(5).tolist()


def test_forward_hook_order_and_replacement():
    def run(lib):
        m = model(lib)
        log = []
        m.register_forward_pre_hook(lambda mod, args: log.append("pre1"))
        m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
        m.register_forward_pre_hook(lambda mod, args: log.append("pre0"), prepend=True)
        m.register_forward_hook(lambda mod, args, out: log.append(("fwd", _np(out))))
        m.register_forward_hook(lambda mod, args, out: out + 1)
        m.register_forward_hook(lambda mod, args, kwargs, out: log.append(("kw", kwargs)),
                                with_kwargs=True)
        out = m(lib.tensor(X))
        return log, _np(out)
    assert both(run)[0] == both(run)[1]


def test_pre_hook_single_value_and_kwargs_replacement():
    def run(lib):
        class M(lib.nn.Module):
            def forward(self, x, scale=1.0):
                return x * scale

        m = M()
        m.register_forward_pre_hook(lambda mod, args: args[0] + 1)
        m.register_forward_pre_hook(lambda mod, args, kw: (args, {"scale": 3.0}),
                                    with_kwargs=True)
        return _np(m(lib.tensor(X), scale=2.0))
    e, t = both(run)
    assert e == t


def test_bad_kwargs_pre_hook_result():
    def run(lib):
        m = model(lib)
        m.register_forward_pre_hook(lambda mod, a, k: 5, with_kwargs=True)
        try:
            m(lib.tensor(X))
        except RuntimeError as exc:
            return str(exc)
    e, t = both(run)
    assert e == t


def test_handles_remove_hooks():
    m = model(ember)
    log = []
    h1 = m.register_forward_hook(lambda *a: log.append(1))
    h2 = m.register_forward_pre_hook(lambda *a: log.append(2), with_kwargs=True)
    m(ember.tensor(X))
    h1.remove()
    h2.remove()
    m(ember.tensor(X))
    assert log == [2, 1]
    assert not m._forward_hooks and not m._forward_pre_hooks_with_kwargs
    with m.register_forward_hook(lambda *a: log.append(3)):
        m(ember.tensor(X))
    m(ember.tensor(X))
    assert log == [2, 1, 3]


def test_always_call_hook_runs_on_error():
    def run(lib):
        class Boom(lib.nn.Module):
            def forward(self, x):
                raise ValueError("boom")

        m = Boom()
        log = []
        m.register_forward_hook(lambda mod, a, out: log.append(out), always_call=True)
        m.register_forward_hook(lambda mod, a, out: log.append("never"))
        with pytest.raises(ValueError):
            m(lib.ones(1))
        return log
    assert both(run)[0] == both(run)[1] == [None]


def _full_backward(lib, x_requires_grad=True, replace=False, pre_replace=False):
    m = model(lib)
    log = []

    def pre(mod, gout):
        log.append(("pre", [_np(g) for g in gout]))
        if pre_replace:
            return tuple(g * 2 for g in gout)

    def hook(mod, gin, gout):
        log.append(("full", [_np(g) for g in gin], [_np(g) for g in gout]))
        if replace:
            return tuple(g * 10 if g is not None else None for g in gin)

    m.register_full_backward_pre_hook(pre)
    m.register_full_backward_hook(hook)
    x = lib.tensor(X, requires_grad=x_requires_grad)
    u = lib.tensor(np.array([[1.0, -2.0], [0.5, 3.0]], dtype=np.float32))
    out = m(x)
    log.append(("out_fn", out.grad_fn.name()))
    out.backward(u)
    return log, _np(x.grad), _np(m.weight.grad)


@pytest.mark.parametrize("replace", [False, True])
@pytest.mark.parametrize("pre_replace", [False, True])
def test_full_backward_hooks_match_torch(replace, pre_replace):
    e, t = both(lambda lib: _full_backward(lib, replace=replace, pre_replace=pre_replace))
    assert e == t


def test_full_backward_hook_when_input_needs_no_grad():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e, t = both(lambda lib: _full_backward(lib, x_requires_grad=False))
    assert e == t


def test_full_backward_hook_multiple_inputs_and_outputs():
    def run(lib):
        class Two(lib.nn.Module):
            def forward(self, a, b, k):
                return a * b, a + k

        m = Two()
        log = []
        m.register_full_backward_hook(
            lambda mod, gin, gout: log.append(([_np(g) for g in gin], [_np(g) for g in gout])))
        a = lib.tensor(X, requires_grad=True)
        b = lib.tensor(X + 1)
        o1, o2 = m(a, b, 2.0)
        (o1.sum() + (o2 * 3).sum()).backward()
        return log, _np(a.grad)
    e, t = both(run)
    assert e == t


def test_nested_modules_backward_hook_order():
    def run(lib):
        seq = lib.nn.Sequential(lib.nn.Linear(3, 3), lib.nn.Tanh(), lib.nn.Linear(3, 1))
        log = []
        for i, mod in enumerate(seq):
            mod.register_full_backward_hook(lambda m, gi, go, i=i: log.append(("b", i)))
            mod.register_full_backward_pre_hook(lambda m, go, i=i: log.append(("p", i)))
            mod.register_forward_hook(lambda m, a, o, i=i: log.append(("f", i)))
        seq(lib.randn(2, 3, requires_grad=True)).sum().backward()
        return log
    e, t = both(run)
    assert e == t


def test_legacy_backward_hook_and_mixing_error():
    def run(lib):
        m = model(lib)
        log = []
        m.register_backward_hook(lambda mod, gin, gout: log.append(len(gin)))
        with pytest.warns(FutureWarning, match="forward contains multiple autograd Nodes"):
            out = m(lib.tensor(X, requires_grad=True))
        out.sum().backward()
        try:
            m.register_full_backward_hook(lambda *a: None)
        except RuntimeError as exc:
            log.append(str(exc))
        return log
    e, t = both(run)
    assert e == t


def test_backward_hook_grad_count_error():
    def run(lib):
        m = model(lib)
        m.register_full_backward_hook(lambda mod, gin, gout: (gin[0], gin[0]))
        try:
            m(lib.tensor(X, requires_grad=True)).sum().backward()
        except RuntimeError as exc:
            return str(exc)
    e, t = both(run)
    assert e == t and "invalid number of grad_input" in e


def test_global_module_hooks():
    def run(lib):
        mm = lib.nn.modules.module
        log = []
        handles = [
            mm.register_module_forward_pre_hook(
                lambda m, a: log.append(("gpre", type(m).__name__))),
            mm.register_module_forward_hook(lambda m, a, o: log.append(("gfwd", type(m).__name__))),
            mm.register_module_full_backward_hook(
                lambda m, gi, go: log.append(("gbwd", type(m).__name__))),
            mm.register_module_full_backward_pre_hook(
                lambda m, go: log.append(("gbpre", type(m).__name__))),
        ]
        try:
            seq = lib.nn.Sequential(lib.nn.Linear(3, 2), lib.nn.Tanh())
            seq[0].register_forward_hook(lambda m, a, o: log.append(("own", "Linear")))
            seq(lib.ones(1, 3, requires_grad=True)).sum().backward()
            try:
                mm.register_module_backward_hook(lambda *a: None)
            except RuntimeError as exc:
                log.append(str(exc))
        finally:
            for h in handles:
                h.remove()
        lib.nn.Linear(1, 1)(lib.ones(1, 1))
        return log
    e, t = both(run)
    assert e == t


def test_global_registration_hooks():
    mm = ember.nn.modules.module
    seen = []
    hs = [mm.register_module_parameter_registration_hook(lambda m, n, v: seen.append(("p", n))),
          mm.register_module_buffer_registration_hook(lambda m, n, v: seen.append(("b", n))),
          mm.register_module_module_registration_hook(lambda m, n, v: seen.append(("m", n)))]
    try:
        s = ember.nn.Sequential(ember.nn.Linear(1, 1))
        s.register_buffer("buf", ember.ones(1))
    finally:
        for h in hs:
            h.remove()
    assert seen == [("p", "weight"), ("p", "bias"), ("m", "0"), ("b", "buf")]
