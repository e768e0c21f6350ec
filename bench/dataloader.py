"""DataLoader throughput with worker processes: large batches, where moving a batch from a
worker to the main process is most of the cost.

    python -m bench.dataloader [--batches 40] [--workers 2] [--batch-size 256] [--lib ember]

Each sample is a 3x64x64 float32 image (48 KB) sliced from an in-memory array, with an int
label; a batch of 256 is 12.6 MB. Prints the seconds per batch (median of 3 epochs, after one
warm-up epoch that starts the workers) for ember and torch, run one after the other.
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402


class Images:
    def __init__(self, lib, n: int) -> None:
        self.lib = lib
        self.x = np.random.default_rng(0).standard_normal((512, 3, 64, 64)).astype(np.float32)
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        return self.lib.from_numpy(self.x[i % 512]), i % 10


def seconds_per_batch(libname: str, batches: int, workers: int, batch_size: int) -> float:
    lib = importlib.import_module(libname)
    if libname == "torch":
        lib.set_num_threads(1)
    loader = lib.utils.data.DataLoader(Images(lib, batches * batch_size), batch_size=batch_size,
                                       num_workers=workers, persistent_workers=workers > 0)
    times = []
    for epoch in range(4):
        t0 = time.perf_counter()
        for x, _ in loader:
            assert x.shape == (batch_size, 3, 64, 64)
        if epoch:
            times.append((time.perf_counter() - t0) / batches)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=40)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--lib", action="append", choices=["ember", "torch"])
    args = ap.parse_args()
    for name in args.lib or ["ember", "torch"]:
        s = seconds_per_batch(name, args.batches, args.workers, args.batch_size)
        mb = args.batch_size * 3 * 64 * 64 * 4 / 2**20
        print(f"{name:6s} {args.workers} workers, {args.batch_size}x3x64x64 float32 "
              f"({mb:.1f} MB/batch): {s * 1e3:7.2f} ms/batch  {mb / s:8.0f} MB/s", flush=True)


if __name__ == "__main__":
    main()
