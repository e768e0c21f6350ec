"""bench/programs: each real program trains in ember as in torch (same seed, same losses).

The programs draw the same random numbers in both libraries (initialisation, dropout,
batches), so their losses agree to rounding step after step; this also checks ember's fast
paths (fused cells, backward on arrays) against torch in whole programs.
"""

import importlib

import pytest
import torch

import ember
from bench.programs import PROGRAMS

STEPS = 2


@pytest.mark.parametrize("module", [m for _, m, _, _ in PROGRAMS])
def test_program_losses_match_torch(module):
    prog = importlib.import_module(f"bench.programs.{module}")
    theirs = prog.build(torch)
    expected = [theirs() for _ in range(STEPS)]
    ours = prog.build(ember)
    got = [ours() for _ in range(STEPS)]
    assert all(isinstance(v, float) for v in got)
    assert got == pytest.approx(expected, rel=1e-4, abs=1e-6)


def test_runner_prints_ratios(capsys):
    from bench.programs.__main__ import main

    rows = main(["--rounds", "1", "--only", "siamese"])
    out = capsys.readouterr().out
    assert "siamese CNN" in out and len(rows) == 1
    name, te, tt, ratio, *_ = rows[0]
    assert te > 0 and tt > 0 and ratio == pytest.approx(te / tt)
