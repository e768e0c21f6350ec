"""Validation: a new program must follow the data, not only reproduce the capture run.

A NumPy call the recorder could not see (``table[traced_index]`` on a plain ``table``, say)
would leave a result of the capture run baked into the program as a constant. So right after
capture, the function runs once more eagerly on shuffled copies of its tensor arguments (each
tensor's elements permuted: integer labels and indices stay valid), the program replays on the
same copies, and the two must agree — outputs, gradients for all-ones upstream gradients, and
what each wrote into parameters and buffers. State both runs write (buffers, the random
generators) is put back afterwards.
"""

from __future__ import annotations

import numpy as np

from ember.autograd.grad_mode import STATE, enable_grad, no_grad
from ember.compiler.gpu import host
from ember.compiler.gpu import namespace as gpu_namespace
from ember.compiler.traced import GraphBreak


def _shuffled(t, rng):
    from ember._tensor import Tensor

    data = t._data.copy()
    flat = data.reshape(-1)
    perm = rng.permutation(flat.size)
    flat[...] = flat[perm if isinstance(data, np.ndarray) else gpu_namespace().asarray(perm)]
    out = Tensor._make(data)
    out._rg = t._rg
    return out


class _Saved:
    """The contents of the roots a program writes, and the generators' states."""

    def __init__(self, arrays: list, generators: list) -> None:
        self.copies = [(a, a.copy()) for a in arrays]
        self.states = [(g, g._snapshot()) for g in generators]

    def restore(self) -> None:
        for a, c in self.copies:
            np.copyto(a, c)
        for g, s in self.states:
            g._restore(s)


def _eager(prog, spec, inputs) -> list:
    from ember.autograd import grad
    from ember.compiler.program import _flatten, _unflatten

    args, kwargs = _unflatten(spec, inputs)
    with enable_grad() if STATE.enabled else no_grad():
        leaves: list = []
        _flatten(prog.cf.fn(*args, **kwargs), leaves)
    result = [t._data.copy() for t in leaves]
    if prog.backward is not None and prog.diff_outputs:
        outs = [leaves[i] for i in sorted(prog.diff_outputs)]
        ones = [t.new_ones(t.shape) for t in outs]
        gs = grad(outs, [inputs[i] for i in prog.diff_inputs], ones, allow_unused=True)
        result += [None if g is None else g._data.copy() for g in gs]
    return result


def _replay(prog, inputs) -> list:
    outs, saved = prog.forward(*[t._data for t in inputs])
    result = [host(o) for o in outs]
    if prog.backward is not None and prog.diff_outputs:
        xp = gpu_namespace() if prog.gpu else np
        ones = [xp.ones(shape, dtype) for shape, dtype in prog.grad_meta]
        result += [None if g is None else host(g) for g in prog.backward(*ones, *saved)]
        if any(not np.array_equal(host(o), r, equal_nan=True) for o, r in zip(outs, result)):
            raise GraphBreak("the backward program wrote into an output of the forward")
    return result


def validate(prog, args, kwargs, roots) -> None:
    """Raise GraphBreak unless the program and an eager run agree on shuffled inputs."""
    from ember.compiler.program import _flatten

    leaves: list = []
    spec = _flatten((args, kwargs), leaves)
    rng = np.random.default_rng(0)
    shuffled = [_shuffled(t, rng) for t in leaves]
    inputs = shuffled + [t for _, t in roots]
    written = [inputs[i]._data for i in prog.written if i >= len(leaves)]
    saved = _Saved(written, prog.generators)
    try:
        expected = _eager(prog, spec, inputs) + [a.copy() for a in written]
    except Exception as e:  # noqa: BLE001 - the function itself refuses the shuffled data
        saved.restore()
        raise GraphBreak(f"could not validate the program on shuffled inputs ({e})") from None
    saved.restore()
    try:
        got = _replay(prog, inputs) + [a.copy() for a in written]
    except GraphBreak:
        raise
    except Exception as e:  # noqa: BLE001 - e.g. a NumPy call CuPy does not take
        raise GraphBreak(f"the {'GPU ' if prog.gpu else ''}program failed when replayed "
                         f"({type(e).__name__}: {e})") from None
    finally:
        saved.restore()
    # GPU eager and GPU replay may take different kernels (the program was captured on the
    # CPU's code paths), which round differently
    rtol, atol = (1e-4, 1e-5) if prog.gpu else (1e-5, 1e-6)
    expected = [None if e is None else host(e) for e in expected]
    got = [None if g is None else host(g) for g in got]
    for k, (e, g) in enumerate(zip(expected, got)):
        if (e is None) != (g is None) or e is not None and (
                e.shape != g.shape or not np.allclose(e, g, rtol=rtol, atol=atol,
                                                      equal_nan=True)):
            raise GraphBreak("the captured program did not follow the data when replayed on "
                             f"shuffled inputs (result {k}): some computation was not "
                             "recorded, so this signature runs eagerly")
