"""Distributed benchmarks: all_reduce against raw mpi4py, and a CNN DDP step against torch.

    python -m bench.distributed [--steps 20] [--only allreduce|ddp]

1. ``all_reduce`` of float32 buffers from 4 KB to 64 MB on 2 ranks: ember's blocking
   ``dist.all_reduce`` next to mpi4py's ``Allreduce`` (both in place, on the same array),
   called alternately, one call each in turn; the median time per call of each.
2. One training step of a small CNN under DDP, one thread per rank: ember (ember-run, MPI)
   against torch (torchrun, gloo), on 1 and 2 ranks; the scaling efficiency is the 2-rank
   throughput over twice the 1-rank throughput.

Each measurement runs in its own job; the ranks print JSON lines that this driver collects.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = [4 << 10, 64 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[len(xs) // 2]


def _timed(fns: list, comm, seconds: float = 1.0, least: int = 15) -> list[float]:
    """Median seconds per call of each of ``fns``, called in turn, one call each per turn, so
    that they share whatever else the machine is doing at that moment (rounds of many calls
    of one, then of the other, compare the machine's load as much as the calls on a shared
    machine). Rank 0 sets the number of turns, so every rank makes the same calls."""
    for fn in fns:
        fn()
    comm.Barrier()
    t0 = time.perf_counter()
    for fn in fns:
        fn()
    turns = comm.bcast(max(least, int(seconds / max(time.perf_counter() - t0, 1e-6))), root=0)
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(turns):
        for fn, ts in zip(fns, times):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
    return [_median(ts) for ts in times]


def worker_allreduce() -> None:
    import numpy as np
    from mpi4py import MPI

    import ember
    import ember.distributed as dist

    dist.init_process_group("gloo")
    comm = MPI.COMM_WORLD
    for size in SIZES:
        a = np.ones(size // 4, np.float32)
        t = ember.Tensor._make(a)
        raw, ours = _timed([lambda a=a: comm.Allreduce(MPI.IN_PLACE, a),
                            lambda t=t: dist.all_reduce(t)], comm)
        if comm.rank == 0:
            _emit({"bench": "allreduce", "bytes": size, "raw": raw, "ember": ours})


def worker_ddp(framework: str, steps: int) -> None:
    if framework == "ember":
        import ember as torch
    else:
        import torch
    torch.set_num_threads(1)
    nn = torch.nn
    dist = torch.distributed
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 16, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3),
                          nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32 * 5 * 5, 128),
                          nn.ReLU(), nn.Linear(128, 10))
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    x, y = torch.randn(32, 1, 28, 28), torch.randint(0, 10, (32,))

    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(ddp(x), y).backward()
        opt.step()

    for _ in range(3):
        step()
    dist.barrier()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    if dist.get_rank() == 0:
        _emit({"bench": "ddp", "framework": framework, "ranks": dist.get_world_size(),
               "step": min(times), "batch": 32})
    dist.destroy_process_group()


def _emit(record: dict) -> None:
    sys.stdout.write("BENCH " + json.dumps(record) + "\n")
    sys.stdout.flush()


def _job(nproc: int, args: list[str], launcher: str = "ember") -> list[dict]:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    if launcher == "ember":
        cmd = [sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", str(nproc)]
    else:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc-per-node", str(nproc)]
    out = subprocess.run([*cmd, "-m", "bench.distributed", *args], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    if out.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stdout[-3000:]}{out.stderr[-3000:]}")
    return [json.loads(line[6:]) for line in out.stdout.splitlines() if line.startswith("BENCH ")]


def report_allreduce() -> None:
    print("all_reduce, 2 ranks, float32 (median ms per call; ratio = ember / raw mpi4py "
          "Allreduce)")
    print(f"{'size':>8} {'mpi4py':>10} {'ember':>10} {'ratio':>6}")
    for r in _job(2, ["--worker", "allreduce"]):
        size = r["bytes"]
        label = f"{size >> 20} MB" if size >= 1 << 20 else f"{size >> 10} KB"
        print(f"{label:>8} {r['raw'] * 1e3:10.3f} {r['ember'] * 1e3:10.3f} "
              f"{r['ember'] / r['raw']:6.2f}")


def report_ddp(steps: int) -> None:
    step = {}
    for framework, launcher in (("torch", "torchrun"), ("ember", "ember")):
        for ranks in (1, 2):
            (r,) = _job(ranks, ["--worker", "ddp", "--framework", framework,
                                "--steps", str(steps)], launcher)
            step[framework, ranks] = r["step"]
    print("\nCNN DDP training step (batch 32 per rank, one thread per rank; best ms)")
    print(f"{'':8} {'1 rank':>8} {'2 ranks':>8} {'scaling efficiency':>19}")
    for fw in ("torch", "ember"):
        eff = step[fw, 1] / step[fw, 2]  # (2 b / t2) / (2 * b / t1)
        print(f"{fw:8} {step[fw, 1] * 1e3:8.1f} {step[fw, 2] * 1e3:8.1f} {eff:19.2f}")
    print(f"ember / torch, 2 ranks: {step['ember', 2] / step['torch', 2]:.2f}x")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--worker", choices=["allreduce", "ddp"])
    p.add_argument("--framework", default="ember")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--only", choices=["allreduce", "ddp"])
    args = p.parse_args()
    if args.worker == "allreduce":
        worker_allreduce()
    elif args.worker == "ddp":
        worker_ddp(args.framework, args.steps)
    else:
        if args.only in (None, "allreduce"):
            report_allreduce()
        if args.only in (None, "ddp"):
            report_ddp(args.steps)


if __name__ == "__main__":
    main()
