"""Smoke tests of examples/ (each under 30 s) and of the quickstart, asserting key outputs."""

import contextlib
import io
import os
import re
import runpy
import time

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_example(name: str) -> str:
    buf = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(buf):
        runpy.run_path(os.path.join(ROOT, "examples", name), run_name="__main__")
    assert time.perf_counter() - t0 < 30
    return buf.getvalue()


def test_autograd_tour():
    out = run_example("autograd_tour.py")
    assert "e.grad_fn: MulBackward0 -> ['AddBackward0', 'MulBackward0']" in out
    assert "de/da = 6.0 de/db = 16.0 de/dc = 6.0" in out
    assert "x.grad with gradient=[1, 0.1, 0.01]: [2.0, 0.4000000059604645, 0.05999999865889549]" \
        in out
    assert "d/dx x^3 at 3 = 27.0 | d2/dx2 = 18.0" in out
    assert "under no_grad: requires_grad = False grad_fn = None" in out


def test_hooks_tour_order_matches_torch():
    out = run_example("hooks_tour.py")
    order = re.findall(r"\d\. (.+)", out)
    assert order == ["tensor hook on y", "pre-hook of MulBackward0", "post-hook of MulBackward0",
                     "tensor hook on leaf x", "post-accumulate hook on x"]
    assert out.count("layer") >= 12


def test_custom_function():
    out = run_example("custom_function.py")
    assert "grad_fn: MyReLUBackward" in out
    assert "gradcheck MyReLU: True" in out and "gradgradcheck Cube: True" in out
    assert "gradcheck caught the wrong backward" in out


def test_clipping_accumulation():
    out = run_example("clipping_accumulation.py")
    norms = [float(v) for v in re.findall(r"norm[^:]*:\s+([\d.]+)", out)]
    assert abs(norms[0] - norms[1]) < 1e-5 and abs(norms[2] - 0.5) < 1e-4
    diff = float(re.search(r"difference after the update: ([\d.e+-]+)", out).group(1))
    assert diff < 1e-6


def test_checkpointing():
    out = run_example("checkpointing.py")
    plain = int(re.search(r"plain:\s+(\d+)", out).group(1))
    ckpt = int(re.search(r"checkpointed:\s*(\d+)", out).group(1))
    assert ckpt < plain and "same gradients: True" in out


def test_freezing():
    out = run_example("freezing.py")
    assert "trainable parameters: ['1.weight', '1.bias']" in out
    assert "backbone grad: None" in out and "backbone unchanged: True" in out


def test_compile_tour():
    out = run_example("compile_tour.py")
    assert "call 1:" in out and "grad_fn NllLossBackward0" in out
    assert out.count("grad_fn CompiledFunctionBackward") == 2
    assert "def forward(" in out and "def backward(" in out and "np_matmul" in out
    assert "graph breaks: 1" in out and "(needs_python)" in out
    eager = float(re.search(r"eager step +([\d.]+) us", out).group(1))
    compiled = float(re.search(r"compiled step +([\d.]+) us", out).group(1))
    assert eager > 0 and compiled > 0


@pytest.mark.skipif(not os.path.isdir("/usr/share/datasets/fashion-mnist")
                    and not os.environ.get("EMBER_DATASETS"), reason="no Fashion-MNIST here")
def test_quickstart_compiled_matches_eager(tmp_path):
    """--compile replays the same computation: the same loss lines and accuracy."""
    from ember.examples import quickstart

    outs = []
    for extra in ([], ["--compile"]):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            acc = quickstart.main(["--epochs", "1", "--limit", "1000", "--data-root",
                                   str(tmp_path / "data"), "--save", str(tmp_path / "m.pth"),
                                   "--seed", "0", "--lr", "0.05", *extra])
        outs.append((re.findall(r"^loss: .*$", buf.getvalue(), re.M), acc))
    assert outs[0] == outs[1] and outs[0][0]


@pytest.mark.skipif(not os.path.isdir("/usr/share/datasets/fashion-mnist")
                    and not os.environ.get("EMBER_DATASETS"), reason="no Fashion-MNIST here")
def test_quickstart_smoke(tmp_path):
    from ember.examples import quickstart

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        acc = quickstart.main(["--epochs", "1", "--limit", "2000", "--data-root",
                               str(tmp_path / "data"), "--save", str(tmp_path / "m.pth"),
                               "--seed", "0", "--lr", "0.05"])
    out = buf.getvalue()
    assert "NeuralNetwork(" in out and "loss: " in out and "[   64/ 2000]" in out
    assert re.search(r"Test Error: \n Accuracy: [\d.]+%, Avg loss: [\d.]+ \n", out)
    assert re.search(r'Predicted: "[^"]+", Actual: "Ankle boot"', out)
    assert acc > 0.3


@pytest.mark.skipif(not os.path.isdir("/usr/share/datasets/fashion-mnist")
                    and not os.environ.get("EMBER_DATASETS"), reason="no Fashion-MNIST here")
@pytest.mark.parametrize("shuffle", ["--shuffle", "--no-shuffle"])
def test_quickstart_replays_torchs_run(tmp_path, shuffle):
    # Same seed, same program in real torch (bench/quickstart_torch.py): same initial weights,
    # batches and updates, so the printed losses and the accuracy agree up to float rounding.
    from bench import quickstart_torch
    from ember.examples import quickstart

    args = ["--epochs", "1", "--limit", "7000", "--seed", "0", "--lr", "0.01", shuffle,
            "--data-root", str(tmp_path / "data")]
    runs = []
    for main, extra in ((quickstart.main, ["--save", str(tmp_path / "m.pth")]),
                        (quickstart_torch.main, [])):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            acc = main(args + extra)
        losses = [float(v) for v in re.findall(r"^loss: ([\d.]+)", buf.getvalue(), re.M)]
        avg = float(re.search(r"Avg loss: +([\d.]+)", buf.getvalue()).group(1))
        runs.append((acc, losses, avg))
    (e_acc, e_losses, e_avg), (t_acc, t_losses, t_avg) = runs
    assert len(e_losses) == len(t_losses) == 2
    np.testing.assert_allclose(e_losses, t_losses, rtol=1e-4)
    assert abs(e_avg - t_avg) < 1e-4 and abs(e_acc - t_acc) < 2e-3


def test_func_per_sample_grads():
    out = run_example("func_per_sample_grads.py")
    assert "linear_relu_stack.0.weight     per-sample grad shape (64, 512, 784)" in out
    assert "per-sample grads match the loop: True" in out
    assert "mean of per-sample grads = batch grad: True" in out


def test_func_ensemble():
    out = run_example("func_ensemble.py")
    assert "'0.weight': (5, 16, 8)" in out
    assert "same minibatch: output (5, 4, 3) matches the loop: True" in out
    assert "own minibatch:  output (5, 4, 3) matches the loop: True" in out
    assert "gradients flow to the stacked weights: True" in out


def test_func_hvp():
    out = run_example("func_hvp.py")
    assert out.count("max err") == 3
    assert "all three agree with the analytic H v: True" in out
    assert "Hessian is symmetric: True" in out
