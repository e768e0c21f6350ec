"""The API coverage report (tools/api_coverage.py): no name ember had disappears, and the
on-purpose and owned lists name only things torch has."""

from __future__ import annotations

import fnmatch

import pytest

from tools import api_coverage as cov
from tools.api_on_purpose import ON_PURPOSE, OWNED, REASONS

BASELINE = cov.read_baseline()


@pytest.mark.parametrize("ns", sorted(BASELINE))
def test_no_name_disappears(ns):
    obj = cov.ember_namespace(ns)
    gone = [n for n in BASELINE[ns] if not cov.ember_has(obj, n)]
    assert not gone, f"ember.{ns[6:]} lost {gone}; if on purpose, run " \
                     "`python -m tools.api_coverage --baseline` and say why in the commit"


@pytest.fixture(scope="module")
def torch_names():
    return {ns: cov.public_names(ns) for ns in cov.NAMESPACES}


@pytest.mark.parametrize("table", [ON_PURPOSE, OWNED], ids=["on_purpose", "owned"])
def test_entries_name_torch_things(table, torch_names):
    unknown = [ns for ns in table if ns not in torch_names]
    assert not unknown, f"not walked namespaces: {unknown}"
    bad = [f"{ns}.{p}" for ns, entries in table.items() for p in entries
           if not fnmatch.filter(torch_names[ns], p)]
    assert not bad, f"torch has no {bad}"


def test_reasons_are_explained():
    used = {r for entries in ON_PURPOSE.values() for r in entries.values()}
    assert used <= set(REASONS), used - set(REASONS)
    assert set(REASONS) <= used, f"unused reasons {set(REASONS) - used}"


@pytest.mark.parametrize("table", [ON_PURPOSE, OWNED], ids=["on_purpose", "owned"])
def test_entries_are_not_stale(table, torch_names):
    """An entry (name or pattern) that matches only names ember has since gained is stale:
    take it off the list."""
    stale = []
    for ns, entries in table.items():
        obj = cov.ember_namespace(ns)
        lacking = [n for n in torch_names[ns] if not cov.ember_has(obj, n)]
        stale += [f"{ns}.{p}" for p in entries if not fnmatch.filter(lacking, p)]
    assert not stale, stale


def test_public_names_rules():
    import torch
    names = cov.public_names("torch")
    assert {"unique", "set_grad_enabled", "strided", "abs", "Tensor"} <= set(names)
    assert not {"nn", "TYPE_CHECKING", "os", "typing"} & set(names)  # modules, typing helpers
    f_names = cov.public_names("torch.nn.functional")
    assert "relu" in f_names and "conv2d" in f_names
    assert "Tensor" not in f_names and "Optional" not in f_names  # re-exports, typing
    assert cov.public_names("torch.Tensor") == sorted(
        n for n in dir(torch.Tensor) if not n.startswith("_"))
    assert "benchmark" in cov.public_names("torch.backends.cudnn")  # a property module


def test_classify_sorts_every_name_once():
    c = cov.classify("torch", ["abs", "complex32", "qint8", "no_such_thing_in_ember"])
    assert c.has == ["abs"] and c.owned == {"complex32": 17}
    assert c.on_purpose == {"qint8": "quantization"} and c.missing == ["no_such_thing_in_ember"]
    assert c.total == 4 and c.percent == pytest.approx(100 / 3)


def test_report_renders(tmp_path):
    c = cov.classify("torch.nn.init")
    text = cov.render([c], "2.13.0")
    assert "| `torch.nn.init` |" in text and "**has**" in text
    path = tmp_path / "baseline.txt"
    cov.write_baseline([c], path)
    assert cov.read_baseline(path) == {"torch.nn.init": c.has}
