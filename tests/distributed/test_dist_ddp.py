"""DDP on 2 and 4 ranks equals single-process training on the concatenated batch (SGD with
momentum, Adam, BatchNorm, SyncBatchNorm, small buckets, bucket views), no_sync, checkpoints,
unused parameters, join; and a seeded DDP program gives torch's losses."""

import re

import pytest
from launch import launch, needs_mpi, ok

pytestmark = needs_mpi


@pytest.mark.parametrize("nproc", [2, 4])
def test_ddp_equals_single_process(nproc, tmp_path):
    out = ok(launch("ddp.py", nproc, str(tmp_path), timeout=240))
    for r in range(nproc):
        for what in ("DDP equals single-process training", "no_sync ok",
                     "checkpoint, unused parameters, errors ok", "join ok"):
            assert f"rank {r}: {what}" in out


def _losses(out: str) -> dict:
    return {(int(r), int(s)): float(v) for r, s, v in re.findall(r"LOSS (\d) (\d+) (\S+)", out)}


def test_same_losses_as_torch_gloo():
    theirs = _losses(ok(launch("cross.py", 2, launcher="torchrun", env={"FRAMEWORK": "torch"},
                               timeout=180)))
    ours = _losses(ok(launch("cross.py", 2, env={"FRAMEWORK": "ember"})))
    assert len(theirs) == 2 * 12 and ours.keys() == theirs.keys()
    for key, v in theirs.items():
        assert ours[key] == pytest.approx(v, rel=1e-5, abs=1e-6), key
