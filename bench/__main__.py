"""Run every workload in ember and in torch (one thread each) and print time ratios.

    OPENBLAS_NUM_THREADS=1 python -m bench [--repeat N] [--only SUBSTRING] [--device cuda]
                                           [--no-compiled] [--torch-compile] [--mode M]

Eager rows compare eager ember with eager torch; "compiled" rows run ember.compile'd steps
against eager torch (``--torch-compile`` adds torch.compile's time for the op chain, which
inductor fuses; it compiles C++, so it takes a minute). With ``--device cuda`` both run on the
GPU (ember through CuPy); the CPU targets do not apply there.
"""

from __future__ import annotations

import argparse
import functools
import os
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before NumPy loads BLAS

import torch  # noqa: E402

import ember  # noqa: E402
from bench.workloads import COMPILED, WORKLOADS, op_chain  # noqa: E402


def best_time(step, repeat: int, min_time: float = 0.2, sync=lambda: None) -> float:
    """Best per-call time over ``repeat`` rounds, each long enough to time reliably; ``sync``
    waits for queued GPU work, so a round ends when its work has."""
    step()
    step()
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        sync()
        if time.perf_counter() - t0 >= min_time / 4 or n >= 1024:
            break
        n *= 2
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        sync()
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def main(argv=None) -> list:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--only", default="")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--no-compiled", action="store_true", help="eager rows only")
    p.add_argument("--torch-compile", action="store_true")
    p.add_argument("--mode", default=None, help='ember.compile mode for the compiled rows '
                   '(on cuda, "reduce-overhead" replays CUDA graphs)')
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    gpu = args.device == "cuda"
    rows = []
    print(f"{'workload':<34} {'ember':>11} {'torch':>11} {'ratio':>7} {'target':>7}")
    plan = [(w, False) for w in WORKLOADS] + ([] if args.no_compiled else
                                              [(w, True) for w in COMPILED])
    for (name, factory, per, target), compiled in plan:
        if args.only not in name:
            continue
        ember.manual_seed(0)
        torch.manual_seed(0)
        wrap = functools.partial(ember.compile, mode=args.mode) if compiled else (lambda f: f)
        te = best_time(factory(ember, args.device, wrap=wrap), args.repeat,
                       sync=ember.cuda.synchronize if gpu else lambda: None) / per
        tt = best_time(factory(torch, args.device), args.repeat,
                       sync=torch.cuda.synchronize if gpu else lambda: None) / per
        rows.append(_row(name, te, tt, target, gpu))
    if args.torch_compile and "op chain" in (args.only or "op chain"):
        te = best_time(op_chain(ember, args.device, wrap=ember.compile), args.repeat) / 200
        tt = best_time(op_chain(torch, args.device, wrap=torch.compile), args.repeat) / 200
        rows.append(_row("compiled op chain vs torch.compile", te, tt, 2.0, gpu))
    return rows


def _row(name: str, te: float, tt: float, target: float, gpu: bool) -> tuple:
    ratio = te / tt
    unit, scale = ("us", 1e6) if te < 1e-3 else ("ms", 1e3)
    goal = "-" if gpu else f"<= {target}"  # the targets are for the CPU
    ok = "" if gpu else ("ok" if ratio <= target else "MISS")
    print(f"{name:<34} {te * scale:>8.2f} {unit} {tt * scale:>8.2f} {unit} {ratio:>7.2f} "
          f"{goal:>7} {ok}")
    return name, te, tt, ratio, target


if __name__ == "__main__":
    main()
