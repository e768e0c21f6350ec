"""Run a batch of fuzz programs and report the disagreements with torch, shrunk.

    python -m tests.fuzz --n 10000 --dtype float32          # the long run
    python -m tests.fuzz --program 1234 --dtype float64     # print (and check) one program
"""

from __future__ import annotations

import argparse
import sys
import time

from .compare import compare
from .generate import generate
from .shrink import shrink


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1000, help="programs to run")
    ap.add_argument("--start", type=int, default=0, help="index of the first program")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    ap.add_argument("--program", type=int, help="only this program: print it and its result")
    ap.add_argument("--shrink", type=int, default=5, help="shrink and print this many failures")
    ap.add_argument("--layout", action="store_true", help="also compare results' strides")
    args = ap.parse_args(argv)
    if args.program is not None:
        prog = generate(args.seed, args.program, args.dtype)
        print(prog.text())
        rep = compare(prog, args.layout)
        print("# skipped:", rep.skipped) if rep.skipped else None
        for d in rep.disagreements:
            print("#", d)
        return 1 if rep.disagreements else 0
    failures, skipped, t0 = [], 0, time.time()
    for i in range(args.start, args.start + args.n):
        prog = generate(args.seed, i, args.dtype)
        rep = compare(prog, args.layout)
        skipped += rep.skipped is not None
        if rep.disagreements:
            failures.append((i, prog, rep))
            print(f"program {i}: {rep.disagreements[0]}", file=sys.stderr)
    print(f"{args.n} programs ({args.dtype}, seed {args.seed}, from {args.start}) in "
          f"{time.time() - t0:.0f} s: {len(failures)} disagree, {skipped} skipped as "
          "ill-conditioned")
    for sig, ids in sorted(_classes(failures).items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(ids):4d}  {sig}  (programs {', '.join(map(str, ids[:8]))})")
    for i, prog, _ in failures[:args.shrink]:
        small = shrink(prog, layout=args.layout)
        print(f"\n# --- program {i}, shrunk ---\n{small.text()}")
        for d in compare(small, args.layout).disagreements:
            print("#", d)
    return 1 if failures else 0


def _classes(failures) -> dict:
    """Disagreements grouped by kind and, for exceptions, by what each library raised."""
    out: dict = {}
    for i, _, rep in failures:
        d = rep.disagreements[0]
        sig = d.kind
        if d.kind == "exception":
            t, _, e = d.detail.partition("; ember: ")
            sig += f" - torch: {t.removeprefix('torch: ')[:50]} / ember: {e[:60]}"
        out.setdefault(sig, []).append(i)
    return out


if __name__ == "__main__":
    sys.exit(main())
