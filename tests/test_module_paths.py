"""Classes live at torch's module paths (with ``ember`` for ``torch``): checkpoints of whole
modules and ``add_safe_globals`` lists name a class by the module that defines it and its
qualified name, so an alias elsewhere would not do."""

import importlib
import inspect
import io
import pickletools
import pkgutil
import zipfile

import numpy as np
import pytest
import torch

import ember

ROOTS = ("ember.nn", "ember.optim", "ember.utils.data")


def _modules(name: str):
    """A package and every public module under it."""
    mod = importlib.import_module(name)
    yield mod
    for info in pkgutil.iter_modules(getattr(mod, "__path__", [])):
        if not info.name.startswith("_"):
            yield from _modules(f"{name}.{info.name}")


def _public_classes():
    """(namespace, name, class) for every public class in ember.nn, ember.optim and
    ember.utils.data and their public submodules: a module's ``__all__``, or, without one, the
    classes it defines."""
    out = []
    for root in ROOTS:
        for mod in _modules(root):
            names = getattr(mod, "__all__", None)
            for name in sorted(names if names is not None else dir(mod)):
                cls = getattr(mod, name, None)
                if (name.startswith("_") or not inspect.isclass(cls)
                        or not cls.__module__.startswith(ROOTS)
                        or names is None and cls.__module__ != mod.__name__):
                    continue
                out.append((mod.__name__, name, cls))
    return out


CLASSES = _public_classes()


def _torch_twin(name: str) -> str:
    return "torch" + name[len("ember"):]


def test_every_namespace_is_searched():
    spaces = {ns for ns, _, _ in CLASSES}
    for ns in ("ember.nn", "ember.nn.modules.activation", "ember.nn.parameter",
               "ember.nn.utils.rnn", "ember.optim", "ember.optim.lr_scheduler",
               "ember.utils.data", "ember.utils.data.sampler", "ember.utils.data.dataloader"):
        assert ns in spaces, ns
    assert len(CLASSES) > 300


@pytest.mark.parametrize("ns,name,cls", CLASSES, ids=[f"{ns}.{n}" for ns, n, _ in CLASSES])
def test_class_is_where_torch_keeps_it(ns, name, cls):
    twin = getattr(importlib.import_module(_torch_twin(ns)), name, None)
    assert inspect.isclass(twin), f"torch has no {_torch_twin(ns)}.{name}"
    assert twin.__module__.startswith("torch.")
    assert (cls.__module__, cls.__qualname__) == ("ember" + twin.__module__[len("torch"):],
                                                  twin.__qualname__)
    # and importable from there, which is how a pickle finds it again
    home = importlib.import_module(cls.__module__)
    assert getattr(home, cls.__qualname__) is cls


def test_the_classes_named_in_issue_18():
    mha = ember.nn.modules.activation.MultiheadAttention
    assert mha is ember.nn.MultiheadAttention
    assert type(mha(8, 2).out_proj) is ember.nn.modules.linear.NonDynamicallyQuantizableLinear
    assert ember.nn.Fold.__module__ == "ember.nn.modules.fold"
    assert ember.optim.lr_scheduler.OneCycleLR.__module__ == "ember.optim.lr_scheduler"


def _globals(buf: io.BytesIO) -> set:
    """The module.name of every class and function a checkpoint's pickle names."""
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
        data = z.read(next(n for n in z.namelist() if n.endswith("data.pkl")))
    return {arg.replace(" ", ".") for op, arg, _ in pickletools.genops(data)
            if op.name == "GLOBAL"}


def _model(lib):
    nn = lib.nn
    lib.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(16, 8),
        nn.LayerNorm(8), nn.Dropout(0.1), nn.GELU(), nn.LSTM(8, 8), nn.GRU(8, 4),
        nn.MultiheadAttention(8, 2), nn.TransformerEncoderLayer(8, 2, 16), nn.Fold(4, 2),
        nn.ModuleDict({"a": nn.Tanh()}), nn.ParameterList([nn.Parameter(lib.zeros(2))]),
        nn.CrossEntropyLoss())


def test_a_whole_module_pickles_under_torchs_names():
    ours, theirs = io.BytesIO(), io.BytesIO()
    ember.save(_model(ember), ours)
    torch.save(_model(torch), theirs)
    named = _globals(ours)
    assert "ember.nn.modules.activation.MultiheadAttention" in named
    assert "ember.nn.functional.relu" in named  # TransformerEncoderLayer.activation
    assert {_torch_twin(g) if g.startswith("ember.") else g for g in named} == _globals(theirs)


def test_add_safe_globals_admits_a_whole_module():
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.MultiheadAttention(8, 2))
    buf = io.BytesIO()
    torch.save(theirs, buf)
    buf.seek(0)
    mha = ember.nn.modules.activation.MultiheadAttention
    m = ember.nn.modules
    # the context manager restores the allow-list afterwards, add_safe_globals inside it too
    with ember.serialization.safe_globals([m.container.Sequential, m.linear.Linear]):
        # weights_only refuses the class not on the list, by torch's name ...
        with pytest.raises(Exception, match="GLOBAL torch.nn.modules.activation.Multihead"):
            ember.load(buf)
        # ... until the user adds ember's classes, as a torch program adds torch's
        ember.serialization.add_safe_globals([mha, m.linear.NonDynamicallyQuantizableLinear])
        buf.seek(0)
        ours = ember.load(buf)
        ours_copy = io.BytesIO()
        ember.save(ours, ours_copy)
        ours_copy.seek(0)
        again = ember.load(ours_copy)  # ember's own checkpoint, same allow-list
    assert mha not in ember.serialization.get_safe_globals()
    x = np.random.default_rng(0).standard_normal((5, 2, 8)).astype(np.float32)
    want = theirs[1](*[torch.from_numpy(x)] * 3)[0].detach().numpy()
    for model in (ours, again):
        assert type(model[1]) is mha
        got = model[1](*[ember.tensor(x)] * 3)[0].detach().numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
