"""Mixed precision on the CPU: the cost of an autocast (bfloat16) training step against the float32
step, and the memory of the activations saved for backward, in ember and in torch.

    OPENBLAS_NUM_THREADS=1 python -m bench.amp [--repeat N]

Rows: the quickstart MLP and the modules note's CNN (bench/workloads.py), one training step on a
batch of 64, float32 and under ``autocast("cpu", dtype=bfloat16)``; the two are timed in
alternating rounds (best of each), so a busy machine slows both alike.
"""

from __future__ import annotations

import argparse
import os
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before NumPy loads BLAS

import torch  # noqa: E402

import ember  # noqa: E402
from bench.workloads import cnn_train, mlp_train  # noqa: E402


def _amp_step(lib, factory, amp: bool):
    """The workload's step with its forward and loss (and the optimizer step, which has no
    listed op) under autocast when ``amp``."""
    return factory(lib, wrap=lib.autocast("cpu", dtype=lib.bfloat16, enabled=amp))


def paired_times(f32, amp, repeat: int) -> tuple[float, float]:
    """Best per-step time of each, from alternating rounds of about 0.1 s."""
    for f in (f32, amp, f32, amp):
        f()
    t0 = time.perf_counter()
    f32()
    n = max(1, int(0.1 / max(time.perf_counter() - t0, 1e-6)))
    best = [float("inf"), float("inf")]
    for _ in range(repeat):
        for i, f in enumerate((f32, amp)):
            t0 = time.perf_counter()
            for _ in range(n):
                f()
            best[i] = min(best[i], (time.perf_counter() - t0) / n)
    return best[0], best[1]


def _from_weights(t) -> bool:
    """Whether a saved tensor is a parameter, or a view / cast of one (not an activation)."""
    node = t.grad_fn
    if node is None:
        return t.requires_grad
    while type(node).__name__ in ("TBackward0", "ToCopyBackward0", "ViewBackward0"):
        node = node.next_functions[0][0]
    return type(node).__name__ == "AccumulateGrad"


def saved_bytes(lib, factory, amp: bool) -> tuple[int, int]:
    """Bytes of the tensors one forward saves for backward: (activations, all)."""
    sizes: dict = {}

    def pack(t):
        sizes[id(t)] = (t.numel() * t.element_size(), _from_weights(t), t)
        return t

    step = _amp_step(lib, factory, amp)
    with lib.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        step()
    acts = sum(n for n, w, _ in sizes.values() if not w)
    return acts, sum(n for n, _, _ in sizes.values())


def main(argv=None) -> list:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=15)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    rows = []
    print(f"{'workload':<22} {'lib':<6} {'float32':>9} {'autocast':>9} {'ratio':>6} "
          f"{'saved act. f32':>15} {'bf16':>9}")
    for name, factory in (("MLP train step", mlp_train), ("CNN train step", cnn_train)):
        for lib in (ember, torch):
            lib.manual_seed(0)
            t32, tamp = paired_times(_amp_step(lib, factory, False),
                                     _amp_step(lib, factory, True), args.repeat)
            a32, aamp = saved_bytes(lib, factory, False)[0], saved_bytes(lib, factory, True)[0]
            print(f"{name:<22} {lib.__name__:<6} {t32 * 1e3:>6.2f} ms {tamp * 1e3:>6.2f} ms "
                  f"{tamp / t32:>6.2f} {a32 / 1024:>11.0f} KiB {aamp / 1024:>5.0f} KiB")
            rows.append((name, lib.__name__, t32, tamp, a32, aamp))
    return rows


if __name__ == "__main__":
    main()
