"""What backward saves, compared with torch for every ``oracle.check``.

For each non-empty choice of the grad-able inputs that require grad, ``fn`` runs in both
libraries under ``saved_tensors_hooks`` whose pack hook counts the tensors saved for backward;
ember must save as many as torch (torch's rule: a tensor is saved only when a gradient formula
that will run reads it). Then backward with a random upstream gradient through that graph must
give torch's gradients (a skipped save must never be read). The known differences are listed
below, with the reason, and nowhere else: nodes saving fewer tensors than torch's, torch nodes
that ember composes of several ops, and single tests.

``EMBER_SAVED_LOG=file`` appends one line per difference (test id, inputs requiring grad,
torch's output nodes, ember's count or exception, torch's count, and each graph's nodes with
the shapes they saved) instead of failing, to survey a change.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import torch
from oracle import _flat, assert_same, to_ember, to_torch

import ember
from ember.autograd.graph import FREED, PACKED

_LU = ("torch's node also saves the LU factorization and pivots of A, which it computed A's "
       "determinant / solution with; NumPy exposes no LU (ember calls LAPACK's det / solve), "
       "so ember's gradient inverts / solves again instead")

# Nodes that save fewer tensors than torch's node of the same name: name -> (how many fewer,
# why). A graph with such nodes must differ from torch's by exactly that much.
NODE_OFFSETS = {
    "LinalgDetBackward0": (2, _LU),
    "LinalgSlogdetBackward0": (2, _LU),
    "LinalgSolveExBackward0": (2, _LU),
}

_GRID = ("ember composes grid_sample of ember ops (coordinates from the grid, gathers of the "
         "input at the taps, interpolation weights), so its gradients for input and grid and "
         "their derivatives come from autograd, each piece saving what it reads; torch's one "
         "fused kernel node saves input and grid and has a hand-written double backward")

# torch nodes that ember builds as a composition of ops: name -> why. A graph in which torch
# records such a node is not compared by count (its gradients still are, per subset).
COMPOSED = {
    "GridSampler2DBackward0": _GRID,
    "GridSampler3DBackward0": _GRID,
}

SAVED_LOG = os.environ.get("EMBER_SAVED_LOG")


def _run(lib, fn, inputs, need):
    """Run ``fn`` with exactly the inputs flagged in ``need`` requiring grad: the shapes of
    the tensors packed for backward, the outputs, the inputs."""
    # copies: fn may write into inputs that do not require grad
    ts = [(to_ember if lib is ember else to_torch)(
        a.copy(order="K") if isinstance(a, np.ndarray) else a) for a in inputs]
    for t, n in zip(ts, need):
        if n:
            t.requires_grad_(True)
    packed = []

    def pack(t):
        packed.append(tuple(t.shape))
        return t

    with lib.autograd.graph.saved_tensors_hooks(pack, lambda t: t), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fn(lib, *ts)
    return packed, out, ts


def _nodes(outs) -> list:
    """The nodes of the graphs behind ``outs``."""
    seen, res = set(), []
    todo = [o.grad_fn for o in _flat(outs) if isinstance(o, torch.Tensor | ember.Tensor)
            and o.grad_fn is not None]
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        res.append(node)
        todo.extend(n for n, _ in node.next_functions)
    return res


def _describe(outs) -> list:
    """Each node that saved tensors, with their shapes (torch's by ``_saved_*`` attribute)."""
    res = []
    for node in _nodes(outs):
        if isinstance(node, ember.autograd.graph.Node):
            shapes = [tuple(v[0].shape) for t, v in node._saved or () if t is PACKED] \
                if node._saved is not FREED else ["freed"]
        else:
            shapes = []
            for a in dir(node):
                v = getattr(node, a, None) if a.startswith("_saved_") else None
                for t in v if isinstance(v, tuple | list) else (v,):
                    if isinstance(t, torch.Tensor):
                        shapes.append(a[7:] + str(tuple(t.shape)))
        if shapes:
            res.append(f"{node.name()}{shapes}")
    return res


def _mismatch(ne, nt: int, eo, to, sub) -> None:
    """Fail (or log) a difference that the tables above do not explain."""
    test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
    if eo is not None and ne + sum(NODE_OFFSETS.get(n.name(), (0,))[0]
                                   for n in _nodes(eo)) == nt:
        return
    if any(n.name() in COMPOSED for n in _nodes(to)):
        return
    names = [type(o.grad_fn).__name__ for o in _flat(to)
             if isinstance(o, torch.Tensor) and o.grad_fn is not None]
    detail = f"{_describe(eo) if eo is not None else ''}\t{_describe(to)}"
    if SAVED_LOG:
        with open(SAVED_LOG, "a") as f:
            f.write(f"{test}\t{sub}\t{names}\t{ne}\t{nt}\t{detail}\n")
        return
    raise AssertionError(f"with requires_grad {sub}, ember saves {ne} tensors for backward, "
                         f"torch {nt} (graph {names})\nember: {detail.split(chr(9))[0]}\n"
                         f"torch: {detail.split(chr(9))[1]}")


def _backward(eo, to, et, tt, sub, seed, atol, rtol, check_dtype) -> None:
    """Backward with a random upstream gradient through the graph built for one choice of
    inputs requiring grad: ember's gradients equal torch's."""
    rng = np.random.default_rng(seed)
    e_roots, t_roots, e_grads, t_grads = [], [], [], []
    for e, t in zip(_flat(eo), _flat(to)):
        if isinstance(t, torch.Tensor) and t.requires_grad:
            u = rng.standard_normal(tuple(t.shape)).astype(t.detach().numpy().dtype)
            e_roots.append(e)
            t_roots.append(t)
            e_grads.append(ember.tensor(u))
            t_grads.append(torch.tensor(u))
    if not t_roots:
        return
    torch.autograd.backward(t_roots, t_grads)
    ember.autograd.backward(e_roots, e_grads)
    for i, n in enumerate(sub):
        if n and tt[i].grad is not None:
            assert et[i].grad is not None, f"grad of input {i} is None in ember ({sub})"
            assert_same(et[i].grad, tt[i].grad, atol * 10, rtol * 10, check_dtype,
                        what=f"grad of input {i} ({sub})")


def check_saved(fn, inputs, need, atol, rtol, check_dtype, seed=0) -> None:
    """For each non-empty choice of the grad-able inputs (``need``) requiring grad: ember
    saves as many tensors for backward as torch, and its gradients equal torch's."""
    idx = [i for i, n in enumerate(need) if n]
    for mask in range(1, 2 ** len(idx)):
        sub = [False] * len(inputs)
        for b, i in enumerate(idx):
            sub[i] = bool(mask >> b & 1)
        try:
            pt, to, tt = _run(torch, fn, inputs, sub)
        except Exception:  # noqa: BLE001 - fn is not meant for this choice of inputs
            continue
        try:
            pe, eo, et = _run(ember, fn, inputs, sub)
        except Exception as exc:  # noqa: BLE001 - reported as a difference
            pe, eo = repr(exc), None
        ne = len(pe) if eo is not None else pe
        if ne != len(pt):
            _mismatch(ne, len(pt), eo, to, sub)
        if eo is not None and mask != 2 ** len(idx) - 1:  # (check() did all of them)
            _backward(eo, to, et, tt, sub, seed, atol, rtol, check_dtype)
