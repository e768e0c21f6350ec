"""The nccl backend on a GPU, in one process (world size 1: NCCL refuses two ranks on one
GPU, and the machines ember was tested on had one). Collectives on CUDA tensors, their
errors on CPU tensors, and a DDP step. Skipped where no GPU is (CI)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import ember

pytestmark = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a GPU (CuPy)")

SCRIPT = textwrap.dedent("""
    import numpy as np
    import ember
    import ember.distributed as dist

    dist.init_process_group("nccl")
    assert dist.get_backend() == "nccl" and dist.get_world_size() == 1
    t = ember.arange(4.0, device="cuda")
    for op in (dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.AVG):
        dist.all_reduce(t, op=op)
    assert t.device.type == "cuda" and t.cpu().tolist() == [0.0, 1.0, 2.0, 3.0]
    dist.broadcast(t, src=0)
    out = [ember.zeros(4, device="cuda")]
    dist.all_gather(out, t)
    assert out[0].cpu().tolist() == t.cpu().tolist()
    big = ember.empty(4, device="cuda")
    dist.all_gather_into_tensor(big, t)
    work = dist.all_reduce(t, async_op=True)
    work.wait()
    assert work.is_completed()
    try:
        dist.all_reduce(ember.ones(2))
    except RuntimeError as e:
        print("cpu tensor:", str(e).splitlines()[0])
    else:
        raise AssertionError("a CPU tensor on the nccl backend must raise")
    model = ember.nn.Linear(4, 2).cuda()
    ddp = ember.nn.parallel.DistributedDataParallel(model)
    ddp(ember.ones(3, 4, device="cuda")).sum().backward()
    assert model.weight.grad.device.type == "cuda"
    np.testing.assert_allclose(model.weight.grad.cpu().numpy(), 3.0)
    dist.destroy_process_group()
    print("nccl ok")
""")


def test_nccl_backend_in_one_process():
    env = dict(os.environ, RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1",
               MASTER_PORT="29533")
    res = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0 and "nccl ok" in res.stdout, res.stdout + res.stderr
