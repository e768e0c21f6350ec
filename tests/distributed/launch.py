"""Run a worker script on N ranks (ember-run, plain mpiexec, or torchrun) and make sure that
nothing it started outlives it: every process gets a tag in its environment, and any tagged
process still alive afterwards is reported and killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workers")

needs_mpi = pytest.mark.skipif(
    not os.path.exists(os.path.join(os.path.dirname(sys.executable), "mpiexec"))
    or __import__("importlib").util.find_spec("mpi4py") is None,
    reason="needs mpi4py and MPICH (pip install -e '.[distributed]')")


@dataclass
class Result:
    code: int | None  # None: killed after the time limit
    out: str
    leftovers: list[int]


def _tagged(tag: str) -> list[int]:
    found = []
    needle = f"EMBER_TEST_TAG={tag}".encode()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    found.append(int(pid))
        except OSError:
            continue
    return found


def launch(worker: str, nproc: int, *args: str, timeout: float = 120, launcher: str = "ember",
           env: dict | None = None, ember_args: list[str] | None = None) -> Result:
    tag = uuid.uuid4().hex
    script = os.path.join(WORKERS, worker)
    full = dict(os.environ, EMBER_TEST_TAG=tag, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
                PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]),
                **(env or {}))
    if launcher == "ember":
        cmd = [sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", str(nproc),
               *(ember_args or [])]
    elif launcher == "mpiexec":
        cmd = [os.path.join(os.path.dirname(sys.executable), "mpiexec"), "-n", str(nproc),
               sys.executable]
    else:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc-per-node", str(nproc)]
    proc = subprocess.Popen([*cmd, script, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=full, cwd=ROOT,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _kill(_tagged(tag))  # the ranks hold the output pipe open
        out, code = proc.communicate()[0], None
    time.sleep(0.2)  # let the launcher's last kills land before looking
    left = _tagged(tag)
    _kill(left)
    return Result(code, out, left)


def _kill(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def ok(result: Result) -> str:
    """The output of a run that must have succeeded (else fail with what it printed)."""
    assert result.code == 0, f"exit code {result.code}:\n{result.out[-6000:]}"
    assert not result.leftovers, f"processes left behind: {result.leftovers}"
    return result.out
