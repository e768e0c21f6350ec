"""ember-run sets torchrun's variables; plain mpiexec works too; faults end the job cleanly:
a crashing or killed rank brings the others down naming it, a missing rank times out."""

import json
import re

import pytest
from launch import launch, needs_mpi, ok

pytestmark = needs_mpi


def _envs(out: str) -> list:
    return sorted((json.loads(m) for m in re.findall(r"ENV (.*)", out)),
                  key=lambda e: int(e["env"]["RANK"]))


@pytest.mark.parametrize("launcher", ["ember", "mpiexec"])
def test_torchrun_environment(launcher):
    envs = _envs(ok(launch("env.py", 2, "--lr", "0.1", launcher=launcher)))
    assert [e["env"]["RANK"] for e in envs] == ["0", "1"]
    for e in envs:
        assert e["env"]["WORLD_SIZE"] == "2" and e["env"]["LOCAL_WORLD_SIZE"] == "2"
        assert e["env"]["LOCAL_RANK"] == e["env"]["RANK"]
        assert e["argv"] == ["--lr", "0.1"]
        if launcher == "ember":
            assert e["env"]["MASTER_ADDR"] == "127.0.0.1" and e["env"]["MASTER_PORT"] == "29500"


def test_crashing_rank_brings_the_others_down():
    res = launch("faults.py", 4, "raise", timeout=60)
    assert res.code not in (0, None) and not res.leftovers, res.out
    assert "[rank1]: ValueError: rank one gave up" in res.out
    assert re.search(r"rank\s+: 1 \(local_rank: 1\)", res.out) and "FAILED" in res.out
    assert "finished" not in res.out


def test_killed_rank_brings_the_others_down():
    res = launch("faults.py", 2, "kill", timeout=60)
    assert res.code not in (0, None) and not res.leftovers, res.out
    assert "FAILED" in res.out and "finished" not in res.out


def test_rank_missing_from_a_collective_times_out():
    res = launch("faults.py", 2, "stuck", timeout=60)
    assert res.code not in (0, None) and not res.leftovers, res.out
    assert "[rank0]: ember.distributed.work.DistBackendError" in res.out
    assert "Watchdog caught collective operation timeout" in res.out
    assert "OpType=ALL_REDUCE" in res.out and "Timeout(ms)=3000" in res.out


def test_rank_missing_from_init_times_out():
    res = launch("faults.py", 2, "missing", timeout=60)
    assert res.code not in (0, None) and not res.leftovers, res.out
    assert "DistStoreError" in res.out and "Timed out after 3 seconds" in res.out


def test_two_nodes_from_a_hostfile(tmp_path):
    """--nnodes with --hostfile: one MPI job over the hosts, ranks placed node by node (both
    hosts are this machine here)."""
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost:2\n127.0.0.1:2\n")
    res = launch("env.py", 2, launcher="ember", ember_args=["--nnodes", "2", "--hostfile",
                                                             str(hosts)])
    envs = _envs(ok(res))
    assert [(e["env"]["RANK"], e["env"]["LOCAL_RANK"]) for e in envs] == \
        [("0", "0"), ("1", "1"), ("2", "0"), ("3", "1")]
    assert {e["env"]["WORLD_SIZE"] for e in envs} == {"4"}
    assert {e["env"]["MASTER_ADDR"] for e in envs} == {"localhost"}
