"""In-process checks against torch: DistributedSampler's shards, DDP's bucket assignment, the
engine's end-of-backward callbacks, SyncBatchNorm outside a group, and the API's errors before
init_process_group (none of these start MPI)."""

import importlib.util
import itertools
import subprocess
import sys

import numpy as np
import pytest
import torch
from launch import ROOT, needs_mpi

import ember
import ember.distributed as dist
from ember.nn.parallel._reducer import compute_bucket_assignment_by_size
from ember.utils.data import DistributedSampler


@pytest.mark.parametrize("n", [1, 2, 5, 7, 10, 33, 64])
def test_sampler_shards_are_torchs(n):
    combos = itertools.product([1, 2, 3, 4, 8], [True, False], [0, 41], [0, 1, 5],
                               [True, False])
    for replicas, shuffle, seed, epoch, drop_last in combos:
        for rank in range(replicas):
            ours = DistributedSampler(range(n), replicas, rank, shuffle, seed, drop_last)
            theirs = torch.utils.data.DistributedSampler(range(n), replicas, rank, shuffle, seed,
                                                         drop_last)
            ours.set_epoch(epoch)
            theirs.set_epoch(epoch)
            assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_sampler_errors():
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval"):
        DistributedSampler(range(4), num_replicas=2, rank=2)
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DistributedSampler(range(4))


def test_bucket_assignment_is_torchs():
    rng = np.random.default_rng(0)
    for _ in range(200):
        k = int(rng.integers(1, 9))
        sizes = rng.integers(1, 400, k)
        indices = list(rng.permutation(k)) if rng.random() < 0.5 else None
        # (with indices, torch appends the open buckets of several dtypes in its hash map's
        # order: compare one dtype there)
        dtypes = rng.choice(["float32", "float64"], k) if indices is None else ["float32"] * k
        limits = sorted(int(x) for x in rng.integers(8, 3000, int(rng.integers(1, 3))))
        ours = [ember.zeros(int(s), dtype=getattr(ember, d)) for s, d in zip(sizes, dtypes)]
        theirs = [torch.zeros(int(s), dtype=getattr(torch, d)) for s, d in zip(sizes, dtypes)]
        want, _ = torch.distributed._compute_bucket_assignment_by_size(
            theirs, limits, [False] * k, [int(i) for i in indices] if indices else [])
        got = compute_bucket_assignment_by_size(ours, limits,
                                                [int(i) for i in indices] if indices else None)
        assert got == want, (sizes, dtypes, limits, indices)


@pytest.mark.parametrize("lib", [ember, torch])
def test_queue_callback_runs_after_every_node_and_hook(lib):
    log = []
    w = lib.ones(3, requires_grad=True)
    w.register_post_accumulate_grad_hook(lambda p: log.append("post-accumulate"))

    def hook(g):
        lib.autograd.Variable._execution_engine.queue_callback(
            lambda: log.append(("callback", w.grad is not None)))
        log.append("tensor hook")

    y = w * 2
    y.register_hook(hook)
    y.sum().backward()
    assert log == ["tensor hook", "post-accumulate", ("callback", True)]
    with pytest.raises(RuntimeError, match="Final callbacks can only be installed during "
                                           "backward pass."):
        lib.autograd.Variable._execution_engine.queue_callback(lambda: None)


def test_sync_batchnorm_without_a_group_is_batchnorm():
    torch.manual_seed(0)
    x = torch.randn(4, 3, 5)
    theirs = torch.nn.SyncBatchNorm(3)
    ours = ember.nn.SyncBatchNorm(3)
    for m in (theirs, ours):
        m.train()
    got = ours(ember.tensor(x.numpy()))
    np.testing.assert_allclose(got.detach().numpy(), theirs(x).detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(ours.running_var.numpy(), theirs.running_var.numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match=r"expected at least 2D input \(got 1D input\)"):
        ours(ember.ones(3))


def test_convert_sync_batchnorm_matches_torch():
    def build(lib):
        nn = lib.nn
        return nn.Sequential(nn.Conv2d(1, 3, 1), nn.BatchNorm2d(3),
                             nn.Sequential(nn.BatchNorm1d(2, momentum=None)))
    ours, theirs = build(ember), build(torch)
    conv_ours = ember.nn.SyncBatchNorm.convert_sync_batchnorm(ours)
    conv_theirs = torch.nn.SyncBatchNorm.convert_sync_batchnorm(theirs)
    assert repr(conv_ours) == repr(conv_theirs)
    assert conv_ours[1].weight is ours[1].weight and conv_ours[1].running_mean is \
        ours[1].running_mean


def test_api_before_init_matches_torch():
    assert repr(dist.ReduceOp.SUM) == repr(torch.distributed.ReduceOp.SUM)
    assert [int(getattr(dist.ReduceOp, n)) for n in ("SUM", "AVG", "PRODUCT", "MIN", "MAX",
                                                     "BAND", "BOR", "BXOR")] == \
        [int(getattr(torch.distributed.ReduceOp, n)) for n in ("SUM", "AVG", "PRODUCT", "MIN",
                                                               "MAX", "BAND", "BOR", "BXOR")]
    assert dist.Backend("GLOO") == torch.distributed.Backend("GLOO") == "gloo"
    assert not dist.is_initialized() and dist.GroupMember.NON_GROUP_MEMBER == -100
    assert dist.default_pg_timeout == torch.distributed.default_pg_timeout
    for call in (dist.get_rank, dist.get_world_size, lambda: dist.all_reduce(ember.ones(1)),
                 dist.barrier):
        with pytest.raises(ValueError, match="Default process group has not been initialized, "
                                             "please make sure to call init_process_group."):
            call()
    assert issubclass(dist.DistBackendError, RuntimeError)


@needs_mpi
def test_init_without_a_launcher_says_how_to_start():
    code = ("import ember.distributed as d\n"
            "try:\n    d.init_process_group('gloo', world_size=2, rank=0)\n"
            "except RuntimeError as e:\n    print(e)\n"
            "print(d.is_nccl_available())\n"
            "try:\n    d.init_process_group('nccl')\n"
            "except RuntimeError as e:\n    print(e)\n"
            "d.init_process_group('gloo', world_size=1, rank=0)\n"
            "print(d.get_rank(), d.get_world_size(), d.get_backend())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=60).stdout
    assert "not started by an MPI launcher" in out and "ember-run --nproc-per-node 2" in out
    if importlib.util.find_spec("cupy") is None:
        assert "False\nthe nccl backend needs CuPy built with NCCL and a CUDA GPU" in out
    assert out.strip().endswith("0 1 gloo")
