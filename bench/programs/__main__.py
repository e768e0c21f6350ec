"""Time the real programs in ember and in torch, interleaved in one process, and print ratios.

    python -m bench.programs [--rounds N] [--only SUBSTRING] [--lib ember|torch]

Both libraries run on one thread (``torch.set_num_threads(1)``, ``OPENBLAS_NUM_THREADS=1``).
Each round builds every program afresh in ember and in torch (alternating which goes first),
runs two warm-up steps, then times a fixed number of steps; the table shows the best round's
wall time per step and the ratio ember / torch, the ratio of CPU times (a steadier estimate on a
loaded machine, where other processes take turns on the cores), and the last loss of each
library (the programs draw the same random numbers in both, so the losses agree to rounding).

The objects both libraries created at import are frozen (``gc.freeze()``) before timing: a
define-by-run graph in Python allocates enough objects to trigger full collections, and in one
process each would rescan torch's ~150,000 import-time objects as well as ember's (75 ms a
collection instead of 14 ms alone); frozen, the collector scans only what the programs made.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before NumPy loads BLAS

import torch  # noqa: E402

import ember  # noqa: E402
from bench.programs import PROGRAMS  # noqa: E402

WARMUP = 2


def time_steps(module, lib, steps: int) -> tuple[float, float, float]:
    """Build the program in ``lib``, warm up, and return the wall and CPU seconds per step
    and the last loss."""
    step = module.build(lib)
    for _ in range(WARMUP):
        step()
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(steps):
        loss = step()
    return (time.perf_counter() - t0) / steps, (time.process_time() - c0) / steps, loss


def main(argv=None) -> list:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--only", default="")
    p.add_argument("--lib", choices=("ember", "torch"), help="time one library only")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    gc.collect()
    gc.freeze()
    libs = {"ember": ember, "torch": torch}
    if args.lib:
        libs = {args.lib: libs[args.lib]}
    print(f"{'program':<29} {'ember':>9} {'torch':>9} {'ratio':>6} {'ember cpu':>10} "
          f"{'torch cpu':>10} {'ratio':>6} {'target':>7}      last loss (ember / torch)")
    rows = []
    for name, module, steps, target in PROGRAMS:
        if args.only not in name:
            continue
        module = importlib.import_module(f"bench.programs.{module}")
        best = {k: float("inf") for k in libs}
        cpu = dict(best)
        loss = {}
        for r in range(args.rounds):
            for k in (list(libs) if r % 2 == 0 else list(libs)[::-1]):
                t, c, loss[k] = time_steps(module, libs[k], steps)
                best[k], cpu[k] = min(best[k], t), min(cpu[k], c)
        rows.append(_row(name, best, cpu, loss, target))
    return rows


def _row(name: str, wall: dict, cpu: dict, loss: dict, target: float) -> tuple:
    def ms(t):
        return f"{t * 1e3:>6.1f} ms" if t else f"{'-':>9}"

    def ratio(times):
        return times["ember"] / times["torch"] if len(times) == 2 else None

    r, rc = ratio(wall), ratio(cpu)
    te, tt, ce, ct = wall.get("ember"), wall.get("torch"), cpu.get("ember"), cpu.get("torch")
    ok = "" if r is None else ("ok" if r <= target else "MISS")
    losses = " / ".join(f"{loss[k]:.6g}" for k in ("ember", "torch") if k in loss)
    rtext = [f"{x:>6.2f}" if x else f"{'-':>6}" for x in (r, rc)]
    print(f"{name:<29} {ms(te)} {ms(tt)} {rtext[0]} {ms(ce):>10} {ms(ct):>10} {rtext[1]} "
          f"{'<= ' + str(target):>7} {ok:<4} {losses}", flush=True)
    return name, te, tt, r, ce, ct, rc, target


if __name__ == "__main__":
    main()
