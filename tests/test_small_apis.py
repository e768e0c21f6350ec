"""Small APIs real programs touch: RNNBase.flatten_parameters, the Tensor.is_<device> flags,
and the ImportError of the tensorboard module when its writer library is missing."""

import importlib
import importlib.abc
import sys

import numpy as np
import pytest
import torch

import ember


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_flatten_parameters_is_a_no_op(kind):
    x = np.random.default_rng(0).standard_normal((5, 3, 4)).astype(np.float32)
    outs = []
    for lib in (ember, torch):
        lib.manual_seed(0)
        rnn = getattr(lib.nn, kind)(4, 6, num_layers=2, bidirectional=True)
        before = [(p, p.detach().numpy().copy()) for p in rnn.parameters()]
        assert rnn.flatten_parameters() is None
        after = list(rnn.parameters())
        assert all(p is q and np.array_equal(v, q.detach().numpy())
                   for (p, v), q in zip(before, after, strict=True))
        out = rnn(lib.tensor(x))[0]
        outs.append(out.detach().numpy())
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5, atol=1e-6)


def _flags() -> list:
    """torch.Tensor's is_* properties (the device and layout flags, and is_leaf)."""
    return sorted(n for n in dir(torch.Tensor)
                  if n.startswith("is_") and not callable(getattr(torch.zeros(1), n)))


def test_every_is_flag_torch_has():
    names = _flags()
    assert {"is_cpu", "is_cuda", "is_xpu", "is_mps", "is_meta", "is_xla", "is_leaf"} <= set(names)

    def tensors(m):
        x = m.ones(2, requires_grad=True)
        return [m.zeros(3), m.arange(4), x, x * 2, m.nn.Parameter(m.ones(1))]

    for t_ember, t_torch in zip(tensors(ember), tensors(torch), strict=True):
        for name in names:
            assert getattr(t_ember, name) == getattr(t_torch, name), name
    assert type(ember.Tensor.is_xpu) is property  # an attribute, not a method, as in torch


class _Missing(importlib.abc.MetaPathFinder):
    """Makes ``import <name>`` fail as it does where the package is not installed."""

    def __init__(self, name: str) -> None:
        self.name = name

    def find_spec(self, fullname, path=None, target=None):
        if fullname == self.name or fullname.startswith(self.name + "."):
            raise ModuleNotFoundError(f"No module named '{fullname}'", name=fullname)
        return None


def _import_without(monkeypatch, library: str, module: str):
    """Import ``module`` afresh as if ``library`` were not installed."""
    for name in list(sys.modules):
        if name.split(".")[0] == library or name == module or name.startswith(module + "."):
            monkeypatch.delitem(sys.modules, name)  # put back afterwards by monkeypatch
    monkeypatch.setattr(sys, "meta_path", [_Missing(library), *sys.meta_path])
    return importlib.import_module(module)


def test_tensorboard_import_fails_without_its_writer_library(monkeypatch):
    # torch: the import itself fails when the tensorboard package is missing ...
    with pytest.raises(ModuleNotFoundError, match="No module named 'tensorboard'") as theirs:
        _import_without(monkeypatch, "tensorboard", "torch.utils.tensorboard")
    monkeypatch.undo()
    # ... and so does ember's when tensorboardX, the library it writes with, is missing: at
    # import, not at SummaryWriter(), so `except ImportError` around the import works
    with pytest.raises(ModuleNotFoundError, match="No module named 'tensorboardX'") as ours:
        _import_without(monkeypatch, "tensorboardX", "ember.utils.tensorboard")
    assert type(ours.value) is type(theirs.value)
    monkeypatch.undo()
    from ember.utils.tensorboard import SummaryWriter  # installed again: imports

    assert SummaryWriter.__module__ == "ember.utils.tensorboard.writer"
