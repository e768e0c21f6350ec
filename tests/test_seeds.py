"""Every example in the seed notes (../shared/seeds) behaves in ember as in real torch.

Each note's ```python blocks run in order in one namespace, like a notebook, once with
``torch`` bound to ember and once to real torch. Per block we compare what was printed and the
type of exception raised (many fragments use names defined nowhere: both must fail alike).
Both runs start from ``manual_seed(0)``, and ember draws torch's random streams (init, rand,
dropout, shuffling), so every block must print exactly the same text, random ones included.
"""

import contextlib
import glob
import io
import os
import re
import sys
import warnings

import pytest
import torch

import ember

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEEDS = sorted(glob.glob(os.path.join(ROOT, "..", "shared", "seeds", "*.txt")))


def blocks(path: str) -> list[str]:
    text = open(path, encoding="utf-8").read()
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def _aliases(lib) -> dict:
    """What `import torch`, `import torch.nn as nn`, ... give inside the blocks."""
    names = {"torch": lib, "torch.nn": lib.nn, "torch.nn.functional": lib.nn.functional,
             "torch.optim": lib.optim, "torch.autograd": lib.autograd,
             "torch.utils": lib.utils, "torch.utils.data": lib.utils.data,
             "torch.utils.checkpoint": lib.utils.checkpoint}
    if lib is ember:
        names.update({"torchvision": ember.vision, "torchvision.datasets": ember.vision.datasets,
                      "torchvision.transforms": ember.vision.transforms,
                      "torch.utils.tensorboard": ember.utils.tensorboard})
    return names


def run_note(path: str, lib) -> list[tuple[str, str]]:
    """(stdout, exception type name) for each block, run in one namespace."""
    fake = _aliases(lib)
    saved = {k: sys.modules.get(k) for k in fake}
    sys.modules.update(fake)
    ns: dict = {"__name__": "__seed__"}
    results = []
    try:
        lib.manual_seed(0)
        for src in blocks(path):
            buf = io.StringIO()
            err = ""
            with contextlib.redirect_stdout(buf), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    exec(compile(src, path, "exec"), ns)
                except Exception as e:  # noqa: BLE001 - compared across libraries
                    err = type(e).__name__
            results.append((buf.getvalue(), err))
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return results


def normalise(text: str) -> str:
    text = text.replace("torch.", "ember.").replace("<module 'ember'", "<module 'torch'")
    return re.sub(r" at 0x[0-9a-f]+", " at 0x?", text)


@pytest.mark.skipif(not SEEDS, reason="../shared/seeds not present")
@pytest.mark.parametrize("path", SEEDS, ids=[os.path.basename(p)[:3] for p in SEEDS])
def test_seed_examples_behave_like_torch(path):
    srcs = blocks(path)
    theirs = run_note(path, torch)
    ours = run_note(path, ember)
    for i, (src, (t_out, t_err), (e_out, e_err)) in enumerate(zip(srcs, theirs, ours)):
        where = f"{os.path.basename(path)} block {i}:\n{src}"
        assert e_err == t_err, f"{where}\nember raised {e_err or 'nothing'}, torch " \
                               f"{t_err or 'nothing'}\nember printed:\n{e_out}"
        assert normalise(e_out) == normalise(t_out), where


@pytest.mark.skipif(not SEEDS, reason="../shared/seeds not present")
def test_block_extraction_finds_code():
    assert sum(len(blocks(p)) for p in SEEDS) > 40
