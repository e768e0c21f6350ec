"""Helpers for declaring the many elementwise ops whose forward is one NumPy call and whose
backward is one formula, so that each such op is one line in its family's table; and
``variant``, one primitive under several torch node names.

This module is not an op family: ``ember.ops.install`` skips module names starting with ``_``.
"""

from __future__ import annotations

import numpy as np

from ember.autograd.function import Op
from ember.ops._promote import float_arg

_INPUTS = ("self", "other")  # torch's derivatives.yaml names for the inputs


def variant(op: type, node_name: str) -> type:
    """``op`` under another torch node name (``MaxPool3DWithIndicesBackward0``, ...), for a
    primitive that serves several torch ops. Made once per name."""
    key = (op, node_name)
    if key not in _VARIANTS:
        _VARIANTS[key] = type(node_name.removesuffix("Backward0"), (op,),
                              {"node_name": node_name, "__module__": op.__module__})
    return _VARIANTS[key]


_VARIANTS: dict = {}


UINT_OF_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}  # same-size integers


def keep_where(mask: np.ndarray, a: np.ndarray) -> np.ndarray:
    """``a`` where ``mask``, else +0, bit for bit (NaN and inf dropped, -0.0 kept): an AND with
    an all-ones-or-zeros mask runs at the speed of a multiply, where ``np.where`` is ~10x
    slower on a random mask and ``a * mask`` would turn a dropped NaN into NaN."""
    bits = UINT_OF_SIZE[a.dtype.itemsize]
    out = np.subtract(0, mask, dtype=bits)
    if not out.ndim:  # NumPy gives a 0-d input a scalar back; out= below needs an array
        out = np.asarray(out)
    np.bitwise_and(out, a.view(bits), out=out)
    return out.view(a.dtype)


def c_order(a):
    """``a`` in C order: torch's reductions, scans, softmax and cat give contiguous results
    whatever the input's layout (NumPy keeps the input's), which views of them depend on."""
    flags = getattr(a, "flags", None)
    return a if flags is None or flags.c_contiguous else a.copy()


def quiet(fn):
    """``fn`` with NumPy's divide/invalid/overflow warnings off: torch returns inf and NaN
    silently (log(0), sqrt(-1), exp(1000)), and so must ember."""
    def run(*arrays, **kw):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return fn(*arrays, **kw)
    return run


def elementwise_op(name: str, fn, *grads, saves: tuple = (), node_name: str | None = None):
    """An ``Op`` class for an elementwise op with one gradient formula per input.

    ``fn(*arrays, **kw)`` is the forward. ``grads`` holds one formula per input, written with
    Tensor ops like any backward, called as ``grad(g, *saved)``; ``saves`` names what they
    need in derivatives.yaml's words, in this order: ``"self"`` (input 0), ``"other"``
    (input 1), ``"result"`` (the output). A formula runs only for an input that needs a
    gradient. Two-input ops broadcast; the engine sums their gradients back to each input's
    shape. The grad_fn is ``<name>Backward0`` unless ``node_name`` says otherwise.
    """
    def forward(ctx, *arrays, **kw):
        return fn(*arrays, **kw)

    def backward(ctx, g):
        saved = ctx.saved_tensors
        if len(grads) == 1:  # a tracked one-input op always needs its gradient
            return grads[0](g, *saved)
        need = ctx.needs_input_grad
        return tuple(grad(g, *saved) if n else None for grad, n in zip(grads, need))

    return type(name, (Op,), {
        "node_name": node_name or name + "Backward0",
        "saves": tuple(i for i, s in enumerate(_INPUTS) if s in saves),
        "saves_output": "result" in saves,
        "broadcasts": len(grads) > 1,
        "forward": staticmethod(forward),
        "backward": staticmethod(backward),
        # The class belongs to the module that declares it, which is where its formulas are.
        "__module__": grads[0].__module__,
    })


def float_unary(op: type, name: str, doc: str | None = None):
    """The public function of a one-input float op: integer and bool inputs compute in the
    default float dtype, as in torch (``exp(int tensor)`` is float32)."""
    def fn(x):
        return op.apply(float_arg(x))
    doc = doc or f"Elementwise ``{name}``; integer inputs give the default float dtype."
    return public(fn, name, op.__module__, doc)


def public(fn, name: str, module: str, doc: str | None):
    """Give a function made by a factory its public name, module and docstring, which
    ``repr``, ``help`` and pickling read."""
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = module
    fn.__doc__ = doc
    return fn
