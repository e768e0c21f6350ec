"""The differential fuzzer (tests/fuzz): a fixed batch of random programs agrees with torch,
and the fuzzer itself finds, reports and shrinks a disagreement.

The long run is ``python -m tests.fuzz --n 10000 --dtype float32`` (and ``float64``).
"""

import numpy as np
import pytest
from fuzz import compare, generate, shrink
from fuzz.__main__ import main
from fuzz.compare import mismatch

import ember

N_PROGRAMS = 300


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fixed_batch_agrees_with_torch(dtype):
    failures = []
    for i in range(N_PROGRAMS):
        rep = compare(generate(0, i, dtype))
        if rep.disagreements:
            failures.append(f"program {i}: {rep.disagreements[0]}")
    assert not failures, "\n".join(failures) + "\n(python -m tests.fuzz --program N to see one)"


def test_programs_are_deterministic_valid_python():
    for i in (3, 17):
        p = generate(0, i, "float32")
        assert p.text() == generate(0, i, "float32").text()
        assert 3 <= len(p.statements) <= 12
        ns = {}
        exec(p.text(), ns)  # the printed program runs as it is, with real torch
        assert isinstance(ns["roots"], list)
    assert generate(0, 3, "float32").text() != generate(1, 3, "float32").text()


def test_batch_covers_the_op_families():
    text = "\n".join("\n".join(generate(0, i, "float32").statements) for i in range(200))
    for needle in (".view(", ".transpose(", ".expand(", ".narrow(", ".add_(", "] = ", "[[",
                   ".sum(", "torch.where(", ".clamp(", "torch.cat(", "torch.stack(", " @ ",
                   ".unsqueeze(", ".squeeze(", ".permute(", "torch.flatten(", ".select("):
        assert needle in text, needle
    shapes = [tuple(x.values.shape) for i in range(100) for x in generate(0, i).inputs]
    assert () in shapes and any(0 in s for s in shapes) and any(1 in s for s in shapes)


def test_a_wrong_op_is_found_and_shrunk(monkeypatch):
    # ember's tanh made wrong: the fuzzer must report it with a small program using tanh.
    monkeypatch.setattr(ember, "tanh", lambda x: ember.sigmoid(x))
    found = None
    for i in range(300):
        p = generate(0, i, "float32")
        if any("torch.tanh(" in s for s in p.statements) and compare(p).disagreements:
            found = p
            break
    assert found is not None
    small = shrink(found)
    assert len(small.statements) <= 2 and "torch.tanh(" in small.statements[-1]
    assert compare(small).disagreements


def test_tolerance_grows_where_torch_is_ill_conditioned():
    one = np.array([1.0], np.float32)
    # well conditioned (the references agree with torch): 1e-3 relative is a disagreement
    assert mismatch(one + 1e-3, one, [one.astype(np.float64), one], 1e-4)
    assert not mismatch(one + 1e-6, one, [one.astype(np.float64), one], 1e-4)
    # torch's own value moves by 0.4 under a perturbation: such an element is not compared
    assert not mismatch(one + 0.5, one, [np.array([1.4]), one], 1e-4)
    assert not mismatch(one + 0.5, one, [one.astype(np.float64), one + 0.2], 1e-4)
    # tiny results of order-1 computations: an absolute floor of RTOL / 100
    zero = np.zeros(1, np.float32)
    assert not mismatch(np.array([3e-8], np.float32), zero, [np.zeros(1), zero], 1e-4)
    # integers and booleans: equal, unless a reference run changes them too
    i = np.array([1, 2])
    assert mismatch(np.array([1, 3]), i, [i, i], 1e-4)
    assert not mismatch(np.array([1, 3]), i, [i, np.array([1, 3])], 1e-4)
    nan = np.array([np.nan], np.float32)
    assert not mismatch(nan, nan, [np.array([np.nan]), nan], 1e-4)
    assert mismatch(one, nan, [np.array([np.nan]), nan], 1e-4)


def test_command_line_runs_a_batch(capsys):
    assert main(["--n", "5", "--start", "200", "--shrink", "0"]) == 0
    assert "5 programs (float32" in capsys.readouterr().out
