"""Comparing optimizer state dicts between ember and torch, and moving them across."""

from __future__ import annotations

import numpy as np
import torch

import ember


def compare_state_dicts(esd, tsd, rtol=1e-6, atol=1e-12):
    assert set(esd) == set(tsd) == {"state", "param_groups"}
    assert len(esd["param_groups"]) == len(tsd["param_groups"])
    for eg, tg in zip(esd["param_groups"], tsd["param_groups"]):
        assert eg == tg  # same keys and values, params as the same indices
    assert set(esd["state"]) == set(tsd["state"])
    for k in tsd["state"]:
        es, ts = esd["state"][k], tsd["state"][k]
        assert list(es) == list(ts)  # same keys, made in the same order
        for key in ts:
            compare_values(es[key], ts[key], rtol, atol, what=f"state[{k}][{key!r}]")


def compare_values(ev, tv, rtol, atol, what):
    if isinstance(tv, torch.Tensor):
        assert isinstance(ev, ember.Tensor), what
        assert tuple(ev.shape) == tuple(tv.shape), what
        assert ev.dtype.name == str(tv.dtype).removeprefix("torch."), what
        np.testing.assert_allclose(ev.numpy(), tv.numpy(), rtol=rtol, atol=atol, err_msg=what)
    elif isinstance(tv, list):
        assert isinstance(ev, list) and len(ev) == len(tv), what
        for e, t in zip(ev, tv):
            compare_values(e, t, rtol, atol, what)
    elif isinstance(tv, float):
        assert type(ev) is float, what
        np.testing.assert_allclose(ev, tv, rtol=rtol, atol=atol, err_msg=what)
    else:
        assert type(ev) is type(tv) and ev == tv, (what, ev, tv)


def convert(obj, lib):
    """A state dict with its tensors rebuilt in ``lib`` (ember or torch)."""
    if isinstance(obj, ember.Tensor | torch.Tensor):
        return lib.tensor(obj.detach().numpy().copy())
    if isinstance(obj, dict):
        return {k: convert(v, lib) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(convert(v, lib) for v in obj)
    return obj
