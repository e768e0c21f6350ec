"""``python -m ember.distributed.run`` / ``ember-run``: torchrun's command line over MPI.

    ember-run --nproc-per-node 4 train.py --epochs 3

starts 4 ranks through the MPI launcher (MPICH's ``mpiexec``) with the variables torchrun sets
(``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``, ``MASTER_ADDR``,
``MASTER_PORT``, ...). One MPI job spans every node, so a multi-node run is launched once:
``--nnodes 2 --nproc-per-node 4 --hostfile hosts`` (or inside a Slurm allocation, where
``mpiexec`` finds the nodes itself). If a rank fails, MPI stops the others and this prints
the rank and its error, as torchrun does.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


def get_args_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description="ember's torchrun-compatible launcher (over MPI)")
    p.add_argument("--nnodes", default="1", help="number of nodes, or MIN:MAX (MAX is used)")
    p.add_argument("--nproc-per-node", "--nproc_per_node", default="1",
                   help="ranks per node: an int, or auto/cpu (one per CPU core)")
    p.add_argument("--node-rank", "--node_rank", type=int, default=0)
    p.add_argument("--master-addr", "--master_addr", default="127.0.0.1")
    p.add_argument("--master-port", "--master_port", type=int, default=29500)
    p.add_argument("--standalone", action="store_true", help="single node, a free port")
    p.add_argument("--rdzv-backend", "--rdzv_backend", default="static",
                   help="accepted for torchrun command lines; MPI does the rendezvous")
    p.add_argument("--rdzv-endpoint", "--rdzv_endpoint", default="")
    p.add_argument("--rdzv-id", "--rdzv_id", default="none")
    p.add_argument("--max-restarts", "--max_restarts", type=int, default=0)
    p.add_argument("--hostfile", default=None,
                   help="MPICH hostfile (one 'host[:slots]' a line) for several nodes")
    p.add_argument("--mpiexec", default=None, help="the MPI launcher (default: the one beside "
                   "this Python, else mpiexec on PATH)")
    p.add_argument("-m", "--module", action="store_true", help="run the script as a module")
    p.add_argument("--no-python", "--no_python", action="store_true")
    p.add_argument("training_script")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return p


def _mpiexec(choice: str | None) -> str:
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    found = choice or (beside if os.path.exists(beside) else shutil.which("mpiexec"))
    if not found:
        sys.exit("ember-run: no mpiexec found; pip install \"ember[distributed]\" (mpich)")
    return found


def _nproc(value: str) -> int:
    if value in ("auto", "cpu", "gpu"):
        return os.cpu_count() or 1
    return int(value)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_env(args, rank: int, nproc: int, nnodes: int) -> dict[str, str]:
    """What torchrun puts in rank ``rank``'s environment."""
    world = nproc * nnodes
    return {
        "RANK": str(rank), "LOCAL_RANK": str(rank % nproc), "WORLD_SIZE": str(world),
        "LOCAL_WORLD_SIZE": str(nproc), "GROUP_RANK": str(rank // nproc),
        "GROUP_WORLD_SIZE": str(nnodes), "ROLE_RANK": str(rank), "ROLE_WORLD_SIZE": str(world),
        "ROLE_NAME": "default", "MASTER_ADDR": args.master_addr,
        "MASTER_PORT": str(args.master_port), "TORCHELASTIC_RUN_ID": args.rdzv_id,
        "TORCHELASTIC_RESTART_COUNT": "0", "TORCHELASTIC_MAX_RESTARTS": "0",
    }


def build_command(args) -> tuple[list[str], int]:
    """The mpiexec command line (one MPMD segment per rank, each with its environment)."""
    nnodes = int(str(args.nnodes).split(":")[-1])
    nproc = _nproc(args.nproc_per_node)
    if args.max_restarts:
        sys.exit("ember-run: --max-restarts is not supported: a failed MPI job is not restarted")
    if args.node_rank != 0:
        sys.exit("ember-run: an MPI job is launched once, from one node: run ember-run on the "
                 "first node only, with --hostfile (or inside a Slurm allocation)")
    if nnodes > 1 and not args.hostfile and "SLURM_JOB_ID" not in os.environ:
        sys.exit("ember-run: --nnodes > 1 needs --hostfile (or a Slurm allocation)")
    if args.standalone:
        args.master_addr, args.master_port = "127.0.0.1", _free_port()
    if args.hostfile and args.master_addr == "127.0.0.1":
        with open(args.hostfile) as f:
            args.master_addr = f.readline().split(":")[0].strip() or "127.0.0.1"
    cmd = [_mpiexec(args.mpiexec)]
    if args.hostfile:
        cmd += ["-f", args.hostfile]
    if nnodes > 1:
        cmd += ["-ppn", str(nproc)]
    program = [] if args.no_python else [sys.executable, "-u"] + (["-m"] if args.module else [])
    program += [args.training_script, *args.training_script_args]
    for rank in range(nproc * nnodes):
        if rank:
            cmd.append(":")
        cmd += ["-n", "1"]
        for k, v in rank_env(args, rank, nproc, nnodes).items():
            cmd += ["-env", k, v]
        cmd += program
    return cmd, nproc


def _report(script: str, errors: str, code: int, nproc: int) -> None:
    """torchrun's failure summary: the first rank that failed and its error."""
    found = sorted((os.path.getmtime(os.path.join(errors, f)), f) for f in os.listdir(errors))
    line = "=" * 60
    out = [line, f"{script} FAILED", "-" * 60, "Root Cause (first observed failure):"]
    if found:
        _, name = found[0]
        rank = int(name[4:-4])
        with open(os.path.join(errors, name)) as f:
            error = f.read().strip()
        out += [f"  rank      : {rank} (local_rank: {rank % nproc})", f"  host      : "
                f"{socket.gethostname()}", f"  exitcode  : {code}", f"  error     : {error}"]
        others = [int(f[4:-4]) for _, f in found[1:]]
        if others:
            out.append(f"Other failures: ranks {others}")
    else:
        out += [f"  exitcode  : {code}", "  error     : a rank died without a Python traceback "
                "(a signal or os._exit); see the MPI launcher's report above"]
    print("\n".join(["ember.distributed.run: ChildFailedError:", *out, line]), file=sys.stderr)


def run(args) -> int:
    cmd, nproc = build_command(args)
    env = dict(os.environ)
    if nproc > 1 and "OMP_NUM_THREADS" not in env:
        env["OMP_NUM_THREADS"] = "1"  # as torchrun: ranks sharing a node don't oversubscribe it
    errors = tempfile.mkdtemp(prefix="ember-run-")
    env["EMBER_ERROR_DIR"] = errors
    proc = subprocess.Popen(cmd, env=env, start_new_session=True, preexec_fn=_die_with_parent)

    def forward(sig, _frame):
        _signal_group(proc.pid, sig)
    old = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        code = proc.wait()
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        time.sleep(0.05)
        _signal_group(proc.pid, signal.SIGKILL)  # anything the launcher left behind
    if code != 0:
        _report(args.training_script, errors, code, nproc)
    shutil.rmtree(errors, ignore_errors=True)
    return code


def _die_with_parent() -> None:
    """In the child: get SIGTERM if the launcher dies, even by SIGKILL (Linux), so that the MPI
    launcher can take its ranks down instead of leaving them running."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def main(argv: list[str] | None = None) -> None:
    sys.exit(run(get_args_parser().parse_args(argv)))


if __name__ == "__main__":
    main()
