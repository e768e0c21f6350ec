"""Autocast regions against torch's: nesting, enabled=False inside, the decorator, the weight-cast
cache, gradients, a training loop, threads, custom_fwd/custom_bwd, and the deprecated
torch.cuda.amp / torch.cpu.amp names with the seed note's mixed-precision block."""

from __future__ import annotations

import glob
import os
import re
import threading
import warnings

import numpy as np
import pytest
import torch
from oracle import same

import ember

RNG = np.random.default_rng(0)
X = RNG.standard_normal((8, 6)).astype(np.float32)
W = RNG.standard_normal((4, 6)).astype(np.float32)


def _dt(t) -> str:
    return str(t.dtype).split(".")[1]


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


def test_nesting_disabling_and_restoring():
    def run(L):
        a, b = L.tensor(X), L.tensor(W).t()
        out = [_dt(a @ b)]
        with L.autocast("cpu"):
            out.append(_dt(a @ b))
            with L.autocast("cpu", enabled=False):
                out += [_dt(a @ b), L.is_autocast_enabled("cpu"), _dt((a @ b).float() @ b)]
            with L.autocast("cpu", dtype=L.float16):
                out += [_dt(a @ b), _dt(L.mm(a, b.double().float()))]
            out += [_dt(a @ b), L.is_autocast_enabled("cpu"), L.get_autocast_dtype("cpu")]
        out += [_dt(a @ b), L.is_autocast_enabled("cpu"), L.is_autocast_enabled()]
        L.set_autocast_enabled("cpu", True)
        try:
            out.append(_dt(a @ b))
        finally:
            L.set_autocast_enabled("cpu", False)
        return out + [_dt(a @ b)]

    same(run)


def test_decorator_and_nested_functions():
    def run(L):
        @L.autocast("cpu")
        def f(a, b):
            return L.nn.functional.linear(a, b), L.is_autocast_enabled("cpu")

        y, on = f(L.tensor(X), L.tensor(W))
        return _dt(y), on, L.is_autocast_enabled("cpu")

    same(run)


def _casts(out):
    """The ToCopyBackward0 nodes an op's output reaches in one step (its casts)."""
    nodes = []
    for n, _ in out.grad_fn.next_functions:
        while n is not None and type(n).__name__ == "TBackward0":
            n = n.next_functions[0][0]
        nodes.append(n)
    return nodes


@pytest.mark.parametrize("cache", [True, False])
def test_weight_casts_are_cached_per_region(cache):
    def run(L):
        w = L.tensor(W, requires_grad=True)
        x = L.tensor(X)
        plain = L.tensor(W)  # no grad: not cached
        with L.autocast("cpu", cache_enabled=cache):
            y1, y2 = L.mm(x, w.t()), L.nn.functional.linear(x, w)
            p1, p2 = L.mm(x, plain.t()), L.mm(x, plain.t())
            v1, v2 = L.mm(x, (w * 1).t()), L.mm(x, (w * 1).t())  # not a leaf
            same_w = _casts(y1)[1] is _casts(y2)[2]
            same_p = p1.grad_fn is None and p2.grad_fn is None
            same_v = _casts(v1)[1] is _casts(v2)[1]
        with L.autocast("cpu", cache_enabled=cache):
            again = _casts(L.mm(x, w.t()))[1] is _casts(y1)[1]
        (y1.float().sum() + y2.float().sum()).backward()
        return same_w, same_p, same_v, again, L.is_autocast_cache_enabled(), _dt(w.grad)

    same(run)


def test_cache_cleared_explicitly_and_no_grad_casts_reused():
    """torch's caveat, kept: a weight first cast under no_grad is reused without history."""
    def run(L):
        w = L.tensor(W, requires_grad=True)
        x = L.tensor(X)
        with L.autocast("cpu"):
            with L.no_grad():
                L.mm(x, w.t())
            y = L.mm(x, w.t())
            stale = y.requires_grad
            L.clear_autocast_cache()
            fresh = L.mm(x, w.t()).requires_grad
        return stale, fresh

    same(run)


def test_gradients_of_float32_parameters_stay_float32():
    def run(L):
        L.manual_seed(0)
        model = L.nn.Sequential(L.nn.Conv2d(2, 3, 3, padding=1), L.nn.ReLU(), L.nn.Flatten(),
                                L.nn.Linear(3 * 4 * 4, 5))
        _copy_params(L, model)
        x = L.tensor(IMAGES)
        with L.autocast("cpu"):
            out = model(x)
            loss = L.nn.functional.cross_entropy(out, L.tensor([1, 3]))
        loss.backward()
        return [(_dt(out), _dt(loss))] + [(_dt(p.grad), p.grad.detach().numpy())
                                          for p in model.parameters()]

    e, t = run(ember), run(torch)
    assert e[0] == t[0] == ("bfloat16", "float32")
    for (ed, eg), (td, tg) in zip(e[1:], t[1:]):
        assert ed == td == "float32"
        np.testing.assert_allclose(eg, tg, rtol=3e-2, atol=3e-2 * np.abs(tg).max())


IMAGES = np.random.default_rng(7).standard_normal((2, 2, 4, 4)).astype(np.float32)


def _copy_params(L, model, seed: int = 3) -> None:
    rng = np.random.default_rng(seed)
    with L.no_grad():
        for p in model.parameters():
            p.copy_(L.tensor(rng.uniform(-0.3, 0.3, tuple(p.shape)), dtype=p.dtype))


def _train(L, steps: int = 30):
    model = L.nn.Sequential(L.nn.Linear(20, 32), L.nn.ReLU(), L.nn.Linear(32, 32), L.nn.Tanh(),
                            L.nn.Linear(32, 5))
    _copy_params(L, model)
    rng = np.random.default_rng(11)
    x = L.tensor(rng.standard_normal((64, 20)), dtype=L.float32)
    y = L.tensor(rng.integers(0, 5, 64))
    opt = L.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        with L.autocast("cpu", dtype=L.bfloat16):
            loss = L.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses)


def test_training_loop_under_autocast_matches_torch():
    e, t = _train(ember), _train(torch)
    assert t[-1] < 0.5 * t[0]  # it learns
    np.testing.assert_allclose(e, t, atol=2e-2)


def test_backward_inside_the_region_and_out_argument():
    def run(L):
        w = L.tensor(W, requires_grad=True)
        x = L.tensor(X)
        with L.autocast("cpu"):
            y = L.nn.functional.linear(x, w)
            y.float().pow(2).sum().backward()
            res = L.empty(8, 4)
            L.mm(x, w.detach().t(), out=res)  # out= overloads are not autocast
        return _dt(y), _dt(w.grad), _dt(res)

    same(run)


def test_autocast_is_per_thread():
    def run(L):
        seen = []
        a, b = L.tensor(X), L.tensor(W).t()

        def work():
            seen.append(_dt(a @ b))
            with L.autocast("cpu"):
                seen.append(_dt(a @ b))

        with L.autocast("cpu", dtype=L.float16):
            t = threading.Thread(target=work)
            t.start()
            t.join()
            seen.append(_dt(a @ b))
        return seen

    same(run)


def test_custom_fwd_and_bwd():
    def run(L):
        seen = []

        class Mul(L.autograd.Function):
            @staticmethod
            @L.amp.custom_fwd(device_type="cpu", cast_inputs=L.float32)
            def forward(ctx, a, b):
                seen.append((_dt(a), L.is_autocast_enabled("cpu"), _dt(a @ b)))
                ctx.save_for_backward(a, b)
                return a @ b

            @staticmethod
            @L.amp.custom_bwd(device_type="cpu")
            def backward(ctx, g):
                a, b = ctx.saved_tensors
                seen.append(L.is_autocast_enabled("cpu"))
                return g @ b.t(), a.t() @ g

        a = L.tensor(X, requires_grad=True)
        with L.autocast("cpu"):
            out = Mul.apply(a.bfloat16(), L.tensor(W).t())
        out.sum().backward()
        return seen, _dt(out), _dt(a.grad)

    same(run)


# --- torch.cuda.amp / torch.cpu.amp and the seed note's block ------------------------------------
SEED_BLOCK = """\
scaler = torch.cuda.amp.GradScaler()  # Automatic gradient scaling

with torch.cuda.amp.autocast():
    outputs = model(inputs)
    loss = criterion(outputs, targets)

scaler.scale(loss).backward()
scaler.unscale_(optimizer)  # Required before clipping
torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
scaler.step(optimizer)
scaler.update()
"""


def test_seed_block_is_the_notes():
    notes = glob.glob(os.path.join(os.path.dirname(__file__), "..", "..", "shared", "seeds",
                                   "*.txt"))
    if not notes:
        pytest.skip("../shared/seeds not present")
    found = [b for p in notes
             for b in re.findall(r"```python\n(.*?)```", open(p, encoding="utf-8").read(), re.S)]
    assert SEED_BLOCK in found


def _seed_run(L, block: str):
    model = L.nn.Sequential(L.nn.Linear(6, 16), L.nn.ReLU(), L.nn.Linear(16, 3))
    _copy_params(L, model)
    ns = {"torch": L, "model": model, "criterion": L.nn.CrossEntropyLoss(),
          "optimizer": L.optim.SGD(model.parameters(), lr=0.5),
          "inputs": L.tensor(X), "targets": L.tensor([0, 1, 2, 0, 1, 2, 0, 1])}
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        exec(block, ns)
    msgs = [(x.category.__name__, str(x.message)) for x in w]
    return (msgs, _dt(ns["outputs"]), ns["loss"].item(), ns["scaler"].is_enabled(),
            ns["scaler"].get_scale(), [p.detach().numpy().copy() for p in model.parameters()])


@pytest.mark.skipif(ember.cuda.is_available(), reason="torch's answer without a GPU")
def test_seed_mixed_precision_block_behaves_as_torch():
    e, t = _seed_run(ember, SEED_BLOCK), _seed_run(torch, SEED_BLOCK)
    assert e[:2] == t[:2] and e[3:5] == t[3:5]
    assert abs(e[2] - t[2]) < 1e-6
    for ep, tp in zip(e[5], t[5]):
        np.testing.assert_allclose(ep, tp, rtol=1e-5, atol=1e-6)
    # Without a GPU both disable themselves: the block is a plain float32 step.
    plain = _seed_run(torch, SEED_BLOCK.replace("torch.cuda.amp.GradScaler()", "torch.amp."
                                                "GradScaler('cpu', enabled=False)").replace(
        "torch.cuda.amp.autocast()", "torch.autocast('cpu', enabled=False)"))
    for ep, pp in zip(e[5], plain[5]):
        np.testing.assert_allclose(ep, pp, rtol=1e-5, atol=1e-6)


def test_cpu_amp_names_cast_and_scale():
    block = SEED_BLOCK.replace("cuda", "cpu")
    e, t = _seed_run(ember, block), _seed_run(torch, block)
    assert e[:2] == t[:2] == (e[0], "bfloat16") and e[3:5] == t[3:5]
    assert abs(e[2] - t[2]) < 2e-2
    for ep, tp in zip(e[5], t[5]):
        np.testing.assert_allclose(ep, tp, rtol=2e-2, atol=2e-2)


def test_deprecated_names_are_torchs_classes():
    def run(L):
        return [(c.__name__, issubclass(c, base), c.__mro__[1].__name__)
                for c, base in ((L.cuda.amp.autocast, L.autocast),
                                (L.cpu.amp.autocast, L.amp.autocast),
                                (L.cuda.amp.GradScaler, L.amp.GradScaler),
                                (L.cpu.amp.GradScaler, L.amp.GradScaler))]

    same(run)
    same(lambda L: _quiet(lambda: L.cuda.amp.autocast(dtype=L.bfloat16)._enabled))
    same(lambda L: (L.cpu.is_available(), L.cpu.device_count(), L.cpu.current_device()))
    same(lambda L: L.cuda.amp.amp_definitely_not_available())


def test_compiled_module_under_autocast_casts_the_current_weights():
    """ember.compile captures the casts (not the region's cached ones): after optimizer steps
    the compiled output still equals the eager one."""
    ember.manual_seed(0)
    m = ember.nn.Linear(6, 4)
    c = _quiet(lambda: ember.compile(m))
    opt = ember.optim.SGD(m.parameters(), lr=0.5)
    x = ember.tensor(X)
    for _ in range(4):
        with ember.autocast("cpu"):
            m(x)  # an eager call first: the weight's cast is cached in this region
            y = c(x)
            ref = m(x)
        assert y.dtype is ember.bfloat16
        np.testing.assert_array_equal(y.float().detach().numpy(), ref.float().detach().numpy())
        y.float().sum().backward()
        opt.step()
        opt.zero_grad()


@pytest.mark.skipif(not os.path.isdir("/usr/share/datasets/fashion-mnist")
                    and not os.environ.get("EMBER_DATASETS"), reason="no Fashion-MNIST here")
def test_quickstart_amp_reaches_float32_accuracy(tmp_path):
    import contextlib
    import io

    from ember.examples import quickstart

    accs = []
    for extra in ([], ["--amp"]):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            accs.append(quickstart.main(["--epochs", "2", "--limit", "3000", "--seed", "0",
                                         "--lr", "0.05", "--data-root", str(tmp_path / "data"),
                                         "--save", str(tmp_path / "m.pth"), *extra]))
        assert re.search(r"Accuracy: [\d.]+%", buf.getvalue())
    assert accs[0] > 0.6 and abs(accs[1] - accs[0]) < 0.01, accs


def _float16_scaled_run(L, steps: int = 12):
    """float32 weights, a float16 autocast region, and a scale large enough that the float16
    gradients of the backward overflow: the scaler skips those steps and backs off until they
    are finite, then grows again (GradScaler on real float16 gradients, here on the CPU)."""
    model = L.nn.Sequential(L.nn.Linear(20, 32), L.nn.ReLU(), L.nn.Linear(32, 5))
    _copy_params(L, model)
    rng = np.random.default_rng(11)
    x = L.tensor(rng.standard_normal((64, 20)), dtype=L.float32)
    y = L.tensor(rng.integers(0, 5, 64))
    opt = L.optim.SGD(model.parameters(), lr=0.2)
    scaler = L.amp.GradScaler("cpu", init_scale=2.0**24, growth_interval=3)
    trace = []
    for _ in range(steps):
        opt.zero_grad()
        with L.autocast("cpu", dtype=L.float16):
            loss = L.nn.functional.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)  # as before clipping
        finite = all(bool(p.grad.isfinite().all()) for p in model.parameters())
        scaler.step(opt)
        scaler.update()
        trace.append((scaler.get_scale(), finite, _dt(model[0].weight.grad), loss.item()))
    return trace


def test_grad_scaler_on_float16_gradients_matches_torch():
    e, t = _float16_scaled_run(ember), _float16_scaled_run(torch)
    assert [s[:3] for s in e] == [s[:3] for s in t]
    assert not t[0][1] and t[-1][1]  # overflowed steps first, then finite ones
    np.testing.assert_allclose([s[3] for s in e], [s[3] for s in t], rtol=1e-3)


def test_grad_scaler_refuses_float16_parameters():
    def run(L):
        p = L.nn.Parameter(L.ones(3, dtype=L.float16))
        s = L.amp.GradScaler("cpu")
        s.scale(p.sum()).backward()
        s.unscale_(L.optim.SGD([p], lr=0.1))

    same(run, match="Attempting to unscale FP16 gradients")
