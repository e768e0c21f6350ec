"""Every collective, ReduceOp and dtype against NumPy, on 2 and 4 ranks (ember-run)."""

import pytest
from launch import launch, needs_mpi, ok

pytestmark = needs_mpi


@pytest.mark.parametrize("nproc", [1, 2, 4])
def test_collectives_against_numpy(nproc):
    out = ok(launch("collectives.py", nproc))
    for r in range(nproc):
        assert f"rank {r}: " in out and "checks passed" in out


def test_blocking_all_reduce_makes_two_mpi_calls_and_hands_over_on_timeout():
    out = ok(launch("calls.py", 2))
    assert "rank 0: call checks passed" in out and "rank 1: call checks passed" in out
