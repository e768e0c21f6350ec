"""ember.compile, the global flags and ember.amp, compared with torch's CPU build."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
import torch
from oracle import assert_same, outcome, same

import ember


def _model(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Linear(4, 2))


def same_exactly(fn) -> None:
    """Same result repr, or the same exception class name and the same whole message."""
    t, e = outcome(fn, torch), outcome(fn, ember)
    if t[0] == "error":
        t, e = (t[0], t[1].__name__, t[2]), (e[0], e[1].__name__, e[2]) if e[0] == "error" else e
    assert e == t


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


# --- compile ----------------------------------------------------------------------------------
def test_compiled_module_looks_like_torch():
    for lib in (ember, torch):
        c = _quiet(lambda lib=lib: lib.compile(_model(lib)))
        assert type(c).__name__ == "OptimizedModule"
        assert isinstance(c, lib.nn.Module)
    same(lambda lib: _quiet(lambda: lib.compile(_model(lib))))  # the repr
    same(lambda lib: list(_quiet(lambda: lib.compile(_model(lib))).state_dict()))
    same(lambda lib: [n for n, _ in _quiet(lambda: lib.compile(_model(lib))).named_parameters()])
    same(lambda lib: len(_quiet(lambda: lib.compile(_model(lib)))))
    same(lambda lib: len(_quiet(lambda: lib.compile(lib.nn.Linear(2, 2)))))
    same(lambda lib: _quiet(lambda: lib.compile(lib.nn.Linear(2, 3))).out_features)


def test_compiled_module_shares_state_with_original():
    m = _model(ember)
    c = ember.compile(m)
    assert c._orig_mod is m
    assert all(a is b for a, b in zip(c.parameters(), m.parameters()))
    assert c.training and m.training
    assert c.eval() is c and not m.training and not c.training
    m.train()
    assert c.training
    c.foo = 3  # attribute writes go to the original
    assert m.foo == 3 and "foo" not in c.__dict__
    c.requires_grad_(False)
    assert not m[0].weight.requires_grad


def test_compiled_outputs_and_grads_equal_eager():
    x = np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32)
    for lib in (ember, torch):
        m = _model(lib)
        c = _quiet(lambda lib=lib, m=m: lib.compile(m))
        xe = lib.tensor(x)
        m(xe).pow(2).sum().backward()
        eager = [p.grad.clone() for p in m.parameters()]
        m.zero_grad()
        out = c(xe)
        out.pow(2).sum().backward()
        for g, p in zip(eager, m.parameters()):
            np.testing.assert_array_equal(g.numpy(), p.grad.numpy())
        if lib is ember:
            e_out = out
        else:
            assert_same(e_out, out, what="compiled output")


def test_compiled_state_dict_round_trip_and_pickle():
    e = ember.compile(_model(ember))
    res = ember.compile(_model(ember)).load_state_dict(e.state_dict())
    assert repr(res) == "<All keys matched successfully>"
    with pytest.raises(RuntimeError, match="Unexpected key"):
        _model(ember).load_state_dict(e.state_dict())
    back = pickle.loads(pickle.dumps(e))
    assert type(back).__name__ == "OptimizedModule"
    assert list(back.state_dict()) == list(e.state_dict())


def test_compile_function_and_decorators():
    def f(x):
        return x * 2

    for lib in (ember, torch):
        cf = _quiet(lambda lib=lib: lib.compile(f))
        assert cf is not f and cf.__wrapped__ is f and cf.__name__ == "f"
        assert _quiet(lambda lib=lib: lib.compile(f, disable=True)) is f

        @lib.compile
        def g(x):
            return x + 1

        @lib.compile(mode="reduce-overhead")
        def h(x):
            return x - 1

        assert g.__name__ == "g" and h.__name__ == "h"
        t = lib.ones(2)
        assert _quiet(lambda g=g, h=h, t=t: (g(t) + h(t)).tolist()) == [2.0, 2.0]


def test_module_compile_in_place():
    same(lambda lib: (_model(lib).compile(), list(_model(lib).state_dict())))
    m = _model(ember)
    assert m.compile() is None and m._compiled_call_impl is not None
    assert list(m.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    back = pickle.loads(pickle.dumps(m))  # torch drops the compiled call on pickling
    assert "_compiled_call_impl" not in back.__dict__


@pytest.mark.parametrize("kw", [
    dict(mode="bad"), dict(mode=3), dict(mode="default", options={"a": 1}),
    dict(backend="nope"), dict(dynamic="x"), dict(options=[1]),
    dict(backend="nope", disable=True),
])
def test_compile_errors(kw):
    def f(x):
        return x

    same_exactly(lambda lib: lib.compile(f, **kw))


def test_compile_more_errors():
    same(lambda lib: lib.compile(3), match="A callable function is expected")
    same(lambda lib: lib.compile(3, disable=True), match="A callable function is expected")
    same(lambda lib: lib.compile()(None), match="Model can't be None")
    same_exactly(lambda lib: lib.compile(lambda x: x, backend="nope"))
    same(lambda lib: lib.compile(lambda x: x, mode="x", options={}), match="Either mode")


# --- flags ------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["high", "medium", "highest", "HIGH", "low", 3, None])
def test_matmul_precision(value):
    def run(lib):
        before = lib.get_float32_matmul_precision()
        try:
            lib.set_float32_matmul_precision(value)
            return lib.get_float32_matmul_precision(), lib.backends.cuda.matmul.allow_tf32
        finally:
            lib.set_float32_matmul_precision(before)

    same(run, match="expects a str")


def test_allow_tf32_is_a_view_of_matmul_precision():
    def run(lib):
        lib.backends.cuda.matmul.allow_tf32 = True
        a = lib.get_float32_matmul_precision()
        lib.backends.cuda.matmul.allow_tf32 = False
        return a, lib.get_float32_matmul_precision()

    same(run)


@pytest.mark.parametrize("args,kw", [
    ((True,), {}), ((True,), {"warn_only": True}), ((False,), {"warn_only": True}),
    (("x",), {}), ((1,), {}), ((None,), {}), ((True,), {"warn_only": 1}), ((), {}),
])
def test_deterministic_algorithms(args, kw):
    def run(lib):
        try:
            lib.use_deterministic_algorithms(*args, **kw)
            return (lib.are_deterministic_algorithms_enabled(),
                    lib.is_deterministic_algorithms_warn_only_enabled(),
                    lib.get_deterministic_debug_mode())
        finally:
            lib.use_deterministic_algorithms(False)

    same(run, match="must be bool" if args and args[0] is not True else None)


@pytest.mark.parametrize("mode", ["default", "warn", "error", 0, 1, 2, 3, "x", 1.0])
def test_deterministic_debug_mode(mode):
    def run(lib):
        try:
            lib.set_deterministic_debug_mode(mode)
            return lib.get_deterministic_debug_mode(), lib.are_deterministic_algorithms_enabled()
        finally:
            lib.set_deterministic_debug_mode(0)

    same(run, match="debug_mode")


@pytest.mark.parametrize("n", [3, 0, -1, 1.5, "2", True])
def test_num_threads(n):
    def run(lib):
        before = lib.get_num_threads()
        try:
            lib.set_num_threads(n)
            return lib.get_num_threads()
        finally:
            lib.set_num_threads(before)

    same(run, match="set_num_threads expects")
    same(lambda lib: lib.set_num_interop_threads(n) if n != 3 else None, match="expects")


# --- autocast ---------------------------------------------------------------------------------
def test_autocast_state():
    def run(lib):
        out = [lib.is_autocast_enabled("cpu"), lib.get_autocast_dtype("cpu"),
               lib.get_autocast_dtype("cuda"), lib.is_autocast_enabled()]
        with lib.autocast("cpu") as ac:
            out += [type(ac).__name__, lib.is_autocast_enabled("cpu"),
                    lib.is_autocast_enabled(), lib.get_autocast_dtype("cpu")]
            with lib.autocast("cpu", enabled=False):
                out.append(lib.is_autocast_enabled("cpu"))
            out.append(lib.is_autocast_enabled("cpu"))
        with lib.amp.autocast("cpu", dtype=lib.float16):
            out.append(lib.get_autocast_dtype("cpu"))

        @lib.autocast("cpu")
        def f():
            return lib.is_autocast_enabled("cpu")

        return out + [f(), lib.is_autocast_enabled("cpu"), lib.get_autocast_dtype("cpu")]

    same(run)


@pytest.mark.parametrize("args,kw", [
    (("cuda",), {}), (("cpu",), {"dtype": "float64"}), (("cpu",), {"dtype": "int32"}),
    (("xyz",), {}), ((3,), {}),
])
def test_autocast_disabling_and_errors(args, kw):
    if args == ("cuda",) and ember.cuda.is_available():
        pytest.skip("torch's answer for a machine without CUDA")
    def run(lib):
        kws = {k: getattr(lib, v) for k, v in kw.items()}
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with lib.autocast(*args, **kws):
                on = lib.is_autocast_enabled(args[0])
        return on, [str(x.message) for x in w if "does not cast" not in str(x.message)]

    same(run, match="Expected")


# --- GradScaler -------------------------------------------------------------------------------
def _scaler_run(lib, inf_steps, **scaler_kw):
    """Train a tiny model with a GradScaler, injecting inf/nan into the grads at some steps."""
    lib.manual_seed(0)
    model = lib.nn.Linear(3, 2)
    with lib.no_grad():
        model.weight.copy_(lib.tensor([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6]]))
        model.bias.copy_(lib.tensor([0.01, -0.02]))
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    scaler = lib.amp.GradScaler("cpu", **scaler_kw)
    x = lib.tensor(np.arange(12, dtype=np.float32).reshape(4, 3) / 10)
    trace = []
    for step in range(9):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        scaler.scale(loss).backward()
        if step in inf_steps:
            model.weight.grad[0, 0] = float("inf") if step % 2 else float("nan")
        if step == 4:
            scaler.unscale_(opt)  # explicit unscale before step, as for grad clipping
        ret = scaler.step(opt)
        scaler.update()
        trace.append((scaler.get_scale(), ret, scaler.state_dict(),
                      model.weight.detach().numpy().copy(), model.bias.detach().numpy().copy()))
    return trace


@pytest.mark.parametrize("kw", [
    dict(init_scale=2.0**16, growth_interval=2),
    dict(init_scale=1000.0, growth_factor=1.7, backoff_factor=0.3, growth_interval=3),
    dict(init_scale=3.0e38, growth_interval=1),  # growth overflows float32: scale kept
    dict(enabled=False),
])
def test_grad_scaler_sequence_matches_torch(kw):
    inf_steps = {1, 2, 6}
    e, t = _scaler_run(ember, inf_steps, **kw), _scaler_run(torch, inf_steps, **kw)
    for step, (es, ts) in enumerate(zip(e, t)):
        assert es[0] == ts[0] and type(es[0]) is type(ts[0]), (step, es[0], ts[0])
        assert es[1] == ts[1]
        assert es[2] == ts[2], (step, es[2], ts[2])
        if kw.get("enabled", True):  # with the scaler off, the NaN/inf steps are taken
            np.testing.assert_allclose(es[3], ts[3], rtol=1e-6, err_msg=f"weight, step {step}")
            np.testing.assert_allclose(es[4], ts[4], rtol=1e-6, err_msg=f"bias, step {step}")


def test_grad_scaler_api_and_errors():
    def run(lib):
        s = lib.amp.GradScaler("cpu", init_scale=8.0)
        p = lib.nn.Parameter(lib.ones(2))
        opt = lib.optim.SGD([p], lr=1.0)
        out = [s.get_scale(), s.state_dict(), s.is_enabled()]
        out.append(s.scale([p.sum(), (p.sum(), p.sum() * 2)]))
        s.scale(p.sum()).backward()
        s.unscale_(opt)
        out.append(p.grad.clone())
        try:
            s.unscale_(opt)
        except RuntimeError as exc:
            out.append(str(exc))
        s.step(opt)
        try:
            s.step(opt)
        except RuntimeError as exc:
            out.append(str(exc))
        s.update(4.0)
        out.append(s.get_scale())
        s2 = lib.amp.GradScaler("cpu")
        s2.load_state_dict(s.state_dict())
        out += [s2.state_dict(), pickle.loads(pickle.dumps(s)).state_dict()]
        return out

    same(run)
    same(lambda lib: lib.amp.GradScaler("cpu").step(lib.optim.SGD([lib.ones(1)])),
         match="Attempted step but _scale is None")
    same(lambda lib: lib.amp.GradScaler("cpu", growth_factor=1.0), match="growth factor")
    same(lambda lib: lib.amp.GradScaler("cpu", backoff_factor=1.0), match="backoff factor")
    same(lambda lib: lib.amp.GradScaler("cpu").scale([3]), match="outputs must be a Tensor")
    same(lambda lib: lib.amp.GradScaler("cpu").load_state_dict({}), match="state dict is empty")


@pytest.mark.skipif(ember.cuda.is_available(), reason="torch's answer without CUDA")
def test_grad_scaler_cuda_disables_itself():
    def run(lib):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            s = lib.amp.GradScaler()
        t = lib.ones(2)
        return s.is_enabled(), s.scale(t) is t, s.get_scale(), s.state_dict(), \
            [str(x.message) for x in w]

    same(run)
