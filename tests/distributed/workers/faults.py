"""Failure cases, chosen by argv[1]; run by test_dist_faults.py."""

import os
import signal
import sys
import time
from datetime import timedelta

import ember
import ember.distributed as dist

mode = sys.argv[1]
rank = int(os.environ["RANK"])
if mode == "missing" and rank == 1:
    time.sleep(600)  # never joins: rank 0's init must time out, then the job comes down
# a short timeout only where it is what is tested: a loaded machine may start ranks slowly
dist.init_process_group("gloo", timeout=timedelta(seconds=3 if mode == "missing" else 60))
group = dist.new_group(timeout=timedelta(seconds=3))
if mode == "raise" and rank == 1:
    raise ValueError("rank one gave up")
if mode == "kill" and rank == 1:
    os.kill(os.getpid(), signal.SIGKILL)
if mode == "stuck" and rank == 1:
    time.sleep(600)  # never reaches the all_reduce
t = ember.ones(3)
dist.all_reduce(t, group=group)
print(f"rank {rank} finished", flush=True)
