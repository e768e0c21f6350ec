"""Helpers for declaring the many elementwise ops whose forward is one NumPy call and whose
backward is one formula, so that each such op is one line in its family's table;
``variant``, one primitive under several torch node names; and the pieces of many-pass
elementwise kernels (``blockwise``, ``patch``, ``poly``).

This module is not an op family: ``ember.ops.install`` skips module names starting with ``_``.
"""

from __future__ import annotations

import dis

import numpy as np

from ember._backend import xp_of
from ember.autograd.function import Op
from ember.compiler.traced import capturing
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


_BLOCK = 1 << 15  # elements per block: ~30 block-sized temporaries fit in a 1-2 MB L2 cache


def poly(coef: tuple, z: np.ndarray) -> np.ndarray:
    """Horner's rule in z's dtype, highest power first, in place on one new array."""
    if coef[0] == 1.0:
        r = z + coef[1]
    else:
        r = z * coef[0]
        r += coef[1]
    for c in coef[2:]:
        r *= z
        r += c
    return r


def patch(out: np.ndarray, mask: np.ndarray, fn, *arrays: np.ndarray) -> None:
    """``out[mask] = fn(*(a[mask] for a in arrays))`` on 1-D arrays, computing ``fn`` only on
    the selected elements (none: no call). Under ember.compile's capture, ``fn`` runs on
    every element and a masked copy keeps the selected ones: a replay cannot follow a number
    of selected elements that depends on the data."""
    if capturing():
        np.copyto(out, fn(*arrays), where=mask)
        return
    idx = np.flatnonzero(mask)
    if idx.size:
        out[idx] = fn(*(a[idx] for a in arrays))


def blockwise(kernel, x: np.ndarray, dtype=None) -> np.ndarray:
    """``kernel`` (1-D array in, 1-D array out) over ``x`` in cache-sized blocks, with NumPy's
    floating-point warnings off (torch returns inf and NaN silently); the result has x's
    shape and ``dtype`` (x's by default). A kernel of many passes runs ~2x faster this way on
    large arrays than on the whole array at once."""
    flat = x.reshape(-1)
    with np.errstate(all="ignore"):
        if flat.size <= _BLOCK or xp_of(x) is not np:
            return kernel(flat).reshape(x.shape)
        out = np.empty(flat.size, dtype or x.dtype)
        for i in range(0, flat.size, _BLOCK):
            out[i:i + _BLOCK] = kernel(flat[i:i + _BLOCK])
    return out.reshape(x.shape)


def short_rows(x, dim: int, longest: int) -> bool:
    """Whether a reduction of ``x`` over ``dim`` is one over the last axis of a C-contiguous
    float32/float64 NumPy array with rows of at most ``longest`` elements (and enough of them
    to matter): NumPy's reduction runs its inner loop once per row there, ~10 ns a row."""
    return (isinstance(x, np.ndarray) and dim in (-1, x.ndim - 1) and x.ndim >= 2
            and x.dtype in _ROW_DTYPES and x.flags.c_contiguous and x.size >= 4096
            and 0 < x.shape[-1] <= longest)


_ROW_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def row_sum(x, dim: int, dtype=None):
    """``x.sum(dim, keepdims=True, dtype=dtype)``; over short last-axis rows, a matrix-vector
    product with ones (BLAS: 7 us against NumPy's 41 for 2048 rows of 32, 240 for 16384 rows
    of 8)."""
    if short_rows(x, dim, 1024):
        return np.matmul(x, np.ones(x.shape[-1], x.dtype))[..., None]
    return x.sum(axis=dim, keepdims=True, dtype=dtype)


def row_max(x, dim: int):
    """``x.max(dim, keepdims=True)``; over last-axis rows of at most 32, the maximum down the
    columns of the transposed copy (57 us against NumPy's 177 for 2048 rows of 32). The same
    maximum (NaN included): max does not depend on the order it is taken in."""
    if short_rows(x, dim, 32):
        d = x.shape[-1]
        return x.reshape(-1, d).T.copy().max(axis=0).reshape(*x.shape[:-1], 1)
    return x.max(axis=dim, keepdims=True)


UINT_OF_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}  # same-size integers


def keep_where(mask: np.ndarray, a: np.ndarray, invert: bool = False) -> np.ndarray:
    """``a`` where ``mask`` (where not ``mask`` if ``invert``), else +0, bit for bit (NaN and
    inf dropped, -0.0 kept): an AND with an all-ones-or-zeros mask runs at the speed of a
    multiply, where ``np.where`` is ~10x slower on a random mask and ``a * mask`` would turn a
    dropped NaN into NaN."""
    bits = UINT_OF_SIZE[a.dtype.itemsize]
    # 0 - True and False - 1 are all ones: the inverted mask costs no extra pass.
    out = np.subtract(mask, 1, dtype=bits) if invert else np.subtract(0, mask, dtype=bits)
    if not out.ndim:  # NumPy gives a 0-d input a scalar back; out= below needs an array
        out = np.asarray(out)
    np.bitwise_and(out, a.view(bits), out=out)
    return out.view(a.dtype)


def c_order(a):
    """``a`` in C order: torch's reductions, scans, softmax and cat give contiguous results
    whatever the input's layout (NumPy keeps the input's), which views of them depend on."""
    flags = getattr(a, "flags", None)
    return a if flags is None or flags.c_contiguous else a.copy()


def select(mask: np.ndarray, a, b, dtype) -> np.ndarray:
    """``np.where(mask, a, b)`` in ``dtype``, bit for bit (NaN, inf and -0.0 kept), with ``a``
    and ``b`` arrays or numbers: three integer passes, several times faster than np.where on a
    random mask."""
    dt = np.dtype(dtype)
    bits = UINT_OF_SIZE[dt.itemsize]

    def as_bits(v):  # a number becomes a Python int, which CuPy takes as readily as NumPy
        if isinstance(v, np.ndarray) or hasattr(v, "__cuda_array_interface__"):
            return v.astype(dt, copy=False).view(bits)
        return int(dt.type(v).view(bits))  # (a NumPy scalar: ember.compile never traces it)

    a, b = as_bits(a), as_bits(b)
    out = np.subtract(0, mask, dtype=bits)  # all ones where mask
    if not out.ndim:
        out = np.asarray(out)
    np.bitwise_and(out, a ^ b, out=out)
    np.bitwise_xor(out, b, out=out)
    return out.view(dt)


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
    gradient, and an input that only one formula reads (found from the formulas' code) is saved
    only when that formula will run, as torch saves (``save_plan``). Two-input ops broadcast;
    the engine sums their gradients back to each input's shape. The grad_fn is
    ``<name>Backward0`` unless ``node_name`` says otherwise.
    """
    def forward(ctx, *arrays, **kw):
        return fn(*arrays, **kw)

    def backward(ctx, g):
        saved = ctx.saved_tensors
        if len(grads) == 1:  # a tracked one-input op always needs its gradient
            return grads[0](g, *saved)
        need = ctx.needs_input_grad
        return tuple(grad(g, *saved) if n else None for grad, n in zip(grads, need))

    entries = [s for s in ("self", "other", "result") if s in saves]
    return type(name, (Op,), {
        "node_name": node_name or name + "Backward0",
        "saves": tuple(i for i, s in enumerate(_INPUTS) if s in saves),
        "saves_output": "result" in saves,
        "save_for": save_plan([{i for i, f in enumerate(grads) if k in _reads(f)}
                               for k in range(len(entries) - ("result" in saves))],
                              "result" in saves) if len(grads) > 1 else None,
        "broadcasts": len(grads) > 1,
        "forward": staticmethod(forward),
        "backward": staticmethod(backward),
        # The class belongs to the module that declares it, which is where its formulas are.
        "__module__": grads[0].__module__,
    })


def save_plan(readers: list, output: bool = False) -> tuple:
    """``Op.save_for`` by torch's rule (gen_variable_type's guards), from ``readers``: for each
    saved input, the inputs whose gradient formulas read it. An input read by one formula only
    is saved only when that gradient is needed; one read by several, and the output, whenever
    the op is recorded."""
    plan = tuple((*r,) if len(r) == 1 else None for r in readers)
    return (*plan, None) if output else plan


def _reads(formula) -> set:
    """Positions (0 = first saved entry) of the parameters after ``g`` that ``formula``'s code
    reads."""
    code = formula.__code__
    params = code.co_varnames[1:code.co_argcount]
    used = set(code.co_cellvars)  # read by an inner function
    for ins in dis.get_instructions(code):
        if ins.opname.startswith("LOAD_"):
            used.update(ins.argval if isinstance(ins.argval, tuple) else (ins.argval,))
    return {k for k, p in enumerate(params) if p in used}


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
