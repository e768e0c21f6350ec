"""Compare an ember layer with the same torch layer: weights copied, outputs and grads equal."""

from __future__ import annotations

import numpy as np
import torch
from oracle import arr, assert_same

import ember


def copy_weights(e_layer, t_layer) -> None:
    """Load the torch layer's state (parameters and buffers) into the ember layer."""
    state = {k: ember.tensor(v.detach().numpy().copy()) for k, v in t_layer.state_dict().items()}
    e_layer.load_state_dict(state)


def _flat(out):
    if isinstance(out, tuple | list):
        return [x for o in out for x in _flat(o)]
    return [out]


def compare_layer(e_layer, t_layer, *inputs, train: bool = True, atol=1e-5, rtol=1e-4,
                  copy: bool = True, seed: int = 0, forward=None):
    """Run both layers on the same inputs; compare outputs, input/parameter grads, buffers.

    ``inputs`` are float arrays (they require grad) or other values passed through.
    ``forward(layer, *inputs)`` overrides the call.
    """
    if copy:
        copy_weights(e_layer, t_layer)
    e_layer.train(train)
    t_layer.train(train)
    et = [ember.tensor(a, requires_grad=a.dtype.kind == "f") if isinstance(a, np.ndarray) else a
          for a in inputs]
    tt = [torch.tensor(a, requires_grad=a.dtype.kind == "f") if isinstance(a, np.ndarray) else a
          for a in inputs]
    call = forward or (lambda layer, *a: layer(*a))
    eo, to = _flat(call(e_layer, *et)), _flat(call(t_layer, *tt))
    assert len(eo) == len(to)
    for k, (e, t) in enumerate(zip(eo, to)):
        if t is None:
            assert e is None, f"output {k}: expected None"
            continue
        assert_same(e, t, atol, rtol, what=f"output {k}")
    rng = np.random.default_rng(seed)
    roots = [(e, t) for e, t in zip(eo, to) if isinstance(t, torch.Tensor) and t.requires_grad]
    us = [rng.standard_normal(tuple(t.shape)).astype(t.detach().numpy().dtype) for _, t in roots]
    if roots:
        ember.autograd.backward([e for e, _ in roots], [ember.tensor(u) for u in us])
        torch.autograd.backward([t for _, t in roots], [torch.tensor(u) for u in us])
    for i, (e, t) in enumerate(zip(et, tt)):
        if isinstance(t, torch.Tensor) and t.requires_grad and t.grad is not None:
            assert_same(e.grad, t.grad, atol * 10, rtol * 10, what=f"grad of input {i}")
    tp = dict(t_layer.named_parameters())
    for name, p in e_layer.named_parameters():
        if tp[name].grad is None:
            assert p.grad is None or not np.any(p.grad.numpy()), name
        else:
            assert_same(p.grad, tp[name].grad, atol * 10, rtol * 10, what=f"grad of {name}")
    tb = dict(t_layer.named_buffers())
    for name, b in e_layer.named_buffers():
        assert_same(b, tb[name], atol, rtol, what=f"buffer {name}")
    return eo, to


def assert_same_structure(e_layer, t_layer) -> None:
    """Same repr, same state_dict keys (in order), same parameter shapes."""
    assert repr(e_layer) == repr(t_layer)
    assert list(e_layer.state_dict().keys()) == list(t_layer.state_dict().keys())
    for (ek, ev), (_, tv) in zip(e_layer.state_dict().items(), t_layer.state_dict().items()):
        assert tuple(ev.shape) == tuple(tv.shape), ek
        assert str(ev.dtype).split(".")[-1] == str(tv.dtype).split(".")[-1], ek


def check_layer(name: str, args, kw, shape, atol=1e-5, steps: int = 1,
                random_params: bool = False) -> None:
    """``nn.<name>(*args, **kw)`` built in both libraries has the same structure, then gives the
    same outputs, gradients and buffers for ``steps`` training steps and one eval step, each on
    a fresh random input of ``shape`` (torch's initial state copied once)."""
    e, t = getattr(ember.nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
    assert_same_structure(e, t)
    if random_params:  # non-trivial affine parameters instead of ones and zeros
        with torch.no_grad():
            for p in t.parameters():
                p.copy_(torch.randn(p.shape))
    for step in range(steps):
        compare_layer(e, t, arr(*shape), atol=atol, copy=step == 0)
    compare_layer(e, t, arr(*shape), train=False, atol=atol, copy=False)
