"""Every collective, ReduceOp and dtype against NumPy, on 2 and 4 ranks (ember-run)."""

import pytest
from launch import launch, needs_mpi, ok

pytestmark = needs_mpi


@pytest.mark.parametrize("nproc", [1, 2, 4])
def test_collectives_against_numpy(nproc):
    out = ok(launch("collectives.py", nproc))
    for r in range(nproc):
        assert f"rank {r}: " in out and "checks passed" in out
