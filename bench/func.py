"""Per-sample gradients of the quickstart MLP (batch 64): ember's ``vmap(grad)`` against one
ordinary training step's backward and against torch.func's ``vmap(grad)``.

    python -m bench.func [--rounds 5] [--batch 64]

One thread everywhere (OpenBLAS and torch); the workloads run interleaved, round by round, and
each row reports its best round, so the machine's load hits all rows alike.
"""

from __future__ import annotations

import argparse
import os
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before NumPy loads BLAS

import numpy as np  # noqa: E402
import torch  # noqa: E402

import ember  # noqa: E402
from ember.examples.quickstart import NeuralNetwork  # noqa: E402


class TorchMLP(torch.nn.Module):
    """The quickstart MLP in torch, with ember's parameter names."""

    def __init__(self) -> None:
        super().__init__()
        nn = torch.nn
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(nn.Linear(784, 512), nn.ReLU(),
                                               nn.Linear(512, 512), nn.ReLU(),
                                               nn.Linear(512, 10))

    def forward(self, x):
        return self.linear_relu_stack(self.flatten(x))


def per_sample(lib, model, x, y):
    """``vmap(grad(loss of one sample))`` over the batch, a callable."""
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, xi, yi):
        out = lib.func.functional_call(model, p, (xi.unsqueeze(0),))
        return lib.nn.functional.cross_entropy(out, yi.unsqueeze(0))
    fn = lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0, 0))
    return lambda: fn(params, x, y)


def backward_only(lib, model, x, y):
    """One training step's backward (the forward runs outside the timed part)."""
    def step():
        model.zero_grad()
        loss = lib.nn.functional.cross_entropy(model(x), y)
        t0 = time.perf_counter()
        loss.backward()
        return time.perf_counter() - t0
    return step


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--batch", type=int, default=64)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    xa = rng.standard_normal((args.batch, 1, 28, 28)).astype(np.float32)
    ya = rng.integers(0, 10, args.batch)
    ember.manual_seed(0)
    em, tm = NeuralNetwork(), TorchMLP()
    tm.load_state_dict({k: torch.tensor(v.numpy()) for k, v in em.state_dict().items()})
    xe, ye, xt, yt = ember.tensor(xa), ember.tensor(ya), torch.tensor(xa), torch.tensor(ya)
    rows = {
        "ember vmap(grad)": lambda f=per_sample(ember, em, xe, ye): timed(f),
        "torch.func vmap(grad)": lambda f=per_sample(torch, tm, xt, yt): timed(f),
        "ember backward (one step)": backward_only(ember, em, xe, ye),
        "torch backward (one step)": backward_only(torch, tm, xt, yt),
    }
    best = {k: float("inf") for k in rows}
    for _ in range(args.rounds + 1):  # the first round warms up
        for k, fn in rows.items():
            best[k] = min(best[k], fn())
    for k, v in best.items():
        print(f"{k:28s} {v * 1e3:9.2f} ms")
    e = best["ember vmap(grad)"]
    print(f"ember vmap(grad) / ember backward:      {e / best['ember backward (one step)']:.2f}"
          "  (target <= 3)")
    print(f"ember vmap(grad) / torch.func vmap(grad): {e / best['torch.func vmap(grad)']:.2f}"
          "  (target <= 2)")
    return best


if __name__ == "__main__":
    main()
