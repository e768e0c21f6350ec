"""Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict vs torch."""

from collections import OrderedDict

import numpy as np
import pytest
import torch

import ember


def both(fn):
    return fn(ember), fn(torch)


def _norm(s):
    return s.replace("torch.", "ember.")


def test_sequential_indexing_slicing_and_mutation():
    def run(lib):
        nn = lib.nn
        s = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1), nn.Tanh())
        out = [repr(s[0]), repr(s[-1]), repr(s[1:3]), len(s), type(s[::2]).__name__]
        s[1] = nn.Sigmoid()
        del s[0]
        out.append(repr(s))
        s.append(nn.Identity()).insert(1, nn.ReLU())
        s.insert(-1, nn.ELU())
        out.append(repr(s))
        s.extend([nn.Softplus()])
        out.append(repr(s.pop(0)))
        out.append(repr(s + nn.Sequential(nn.ReLU())))
        out.append(repr(nn.Sequential(nn.ReLU()) * 2))
        s2 = nn.Sequential(OrderedDict([("conv", nn.Identity()), ("act", nn.ReLU())]))
        out.append(repr(s2))
        out.append(list(s2.state_dict()))
        out.append([n for n, _ in s2.named_children()])
        out.append([k for k in dir(s) if k.isdigit()])
        for bad in (lambda: s[10], lambda: s.insert(20, nn.ReLU()), lambda: s + 1,
                    lambda: s * 0):
            try:
                bad()
            except (IndexError, ValueError) as exc:
                out.append((type(exc).__name__, _norm(str(exc))))
        return out
    e, t = both(run)
    assert e == t


def test_sequential_forward_matches_torch():
    def run(lib):
        lib.manual_seed(0)
        s = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.ReLU(), lib.nn.Linear(3, 1))
        with lib.no_grad():
            for i, p in enumerate(s.parameters()):
                p.copy_(lib.tensor(np.linspace(-1, 1, p.numel(), dtype=np.float32)
                                   .reshape(tuple(p.shape)) * (i + 1)))
        x = lib.tensor(np.array([[1.0, 2.0], [-1.0, 0.5]], dtype=np.float32))
        return s(x).detach().numpy().round(5).tolist()
    e, t = both(run)
    assert e == t


def test_module_list():
    def run(lib):
        nn = lib.nn
        ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)] + [nn.ReLU(), nn.ReLU()])
        out = [repr(ml), len(ml), repr(ml[1:3]), repr(ml[-1])]
        ml.append(nn.Tanh()).extend([nn.Sigmoid()])
        ml.insert(0, nn.Identity())
        ml[1] = nn.ELU()
        del ml[2]
        out += [repr(ml), list(ml.state_dict()), repr(ml.pop(0)), repr(ml + ml[:1])]
        ml += [nn.ReLU()]
        out.append(repr(ml))
        out.append(repr(nn.ModuleList()))
        try:
            ml.extend(3)
        except TypeError as exc:
            out.append(str(exc))
        return out
    e, t = both(run)
    assert e == t


def test_module_dict():
    def run(lib):
        nn = lib.nn
        md = nn.ModuleDict({"b": nn.ReLU(), "a": nn.Linear(1, 2)})
        md["c"] = nn.Tanh()
        md.update([("d", nn.Identity())])
        out = [repr(md), list(md), list(md.keys()), "a" in md, len(md), list(md.state_dict())]
        out.append(repr(md.pop("b")))
        del md["c"]
        out.append(repr(md))
        md.clear()
        out.append(len(md))
        for bad in ([1], [("x",)], 5):
            try:
                md.update(bad)
            except (TypeError, ValueError) as exc:
                out.append((type(exc).__name__, str(exc)))
        return out
    e, t = both(run)
    assert e == t


def test_parameter_list_and_dict():
    def run(lib):
        nn = lib.nn
        pl = nn.ParameterList([nn.Parameter(lib.ones(2, 3)), lib.zeros(2)])
        pl.append(lib.ones(1))
        out = [_norm(repr(pl)), len(pl), type(pl[1]).__name__, [n for n, _ in
                                                                pl.named_parameters()]]
        out.append(_norm(repr(pl[0:2])))
        pd = nn.ParameterDict({"w": nn.Parameter(lib.ones(2)), "a": lib.zeros(3)})
        pd["z"] = lib.ones(1)
        out += [_norm(repr(pd)), list(pd), list(pd.state_dict()), "w" in pd,
                type(pd["a"]).__name__, len(pd), list(reversed(pd))]
        out.append(type(pd.pop("a")).__name__)
        out.append(list((pd | nn.ParameterDict({"q": lib.ones(1)})).keys()))
        out.append(pd.get("nope", 3))
        for bad in (lambda: pl(1), lambda: pd(1)):
            try:
                bad()
            except RuntimeError as exc:
                out.append(str(exc))
        return out
    e, t = both(run)
    assert e == t


def test_containers_track_parameters_for_training():
    ml = ember.nn.ModuleList([ember.nn.Linear(2, 2), ember.nn.Linear(2, 1)])
    pl = ember.nn.ParameterList([ember.nn.Parameter(ember.ones(2))])
    holder = ember.nn.Module()
    holder.layers, holder.extra = ml, pl
    assert [n for n, _ in holder.named_parameters()] == [
        "layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias", "extra.0"]
    holder.double()
    assert pl[0].dtype == ember.float64 and ml[1].weight.dtype == ember.float64


def test_sequential_with_hooks_on_children():
    seq = ember.nn.Sequential(ember.nn.Linear(2, 2), ember.nn.ReLU())
    seen = []
    seq[0].register_forward_hook(lambda m, a, o: seen.append(tuple(o.shape)))
    seq(ember.randn(3, 2))
    assert seen == [(3, 2)]


@pytest.mark.parametrize("idx", [3, -4])
def test_index_errors(idx):
    def run(lib):
        try:
            lib.nn.ModuleList([lib.nn.ReLU()] * 3)[idx]
        except IndexError as exc:
            return str(exc)
    e, t = both(run)
    assert e == t
