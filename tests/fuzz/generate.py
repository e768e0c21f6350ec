"""Draw a random program from a seed.

Statements are drawn one at a time and run in torch as they are drawn, so that the generator
knows every name's shape and dtype when it picks operands for the next statement. A statement
that raises is kept only now and then (as the program's last statement: exceptions are compared
too); otherwise another is drawn.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch

from . import ops
from .execute import compiled, make_inputs
from .program import Input, Program

SIZES = (1, 1, 2, 2, 3, 3, 4, 5)
KEEP_ERROR = 0.08  # chance of keeping a statement that raises (then the program ends)


class Gen:
    """The state a statement generator draws from: the rng, the names and their torch values."""

    def __init__(self, rng: np.random.Generator, dtype: str) -> None:
        self.rng = rng
        self.dtype = dtype
        self.inputs: list[Input] = []
        self.ns = {"torch": torch, "F": torch.nn.functional, "np": np}
        self.names: list[str] = []  # tensor names, oldest first
        self.count = 0

    # --- drawing -----------------------------------------------------------------------------
    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def choice(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def randint(self, lo: int, hi: int) -> int:
        """An int in [lo, hi]."""
        return int(self.rng.integers(lo, hi + 1))

    def shape(self, max_ndim: int = 3) -> tuple:
        nd = min(self.choice((0, 1, 1, 2, 2, 2, 3, 3, 4)), max_ndim)
        shape = [self.choice(SIZES) for _ in range(nd)]
        if shape and self.chance(0.06):
            shape[self.randint(0, nd - 1)] = 0
        return tuple(shape)

    # --- names ---------------------------------------------------------------------------------
    def value(self, name: str) -> torch.Tensor:
        return self.ns[name]

    def tensors(self, kind: str = "f") -> list[str]:
        out = []
        for n in self.names:
            v = self.ns.get(n)
            if isinstance(v, torch.Tensor) and (
                    (kind == "f" and v.is_floating_point()) or
                    (kind == "b" and v.dtype == torch.bool) or
                    (kind == "i" and v.dtype == torch.int64)):
                out.append(n)
        return out

    def pick(self, kind: str = "f", pred=None) -> str | None:
        """A name of the given kind, favouring recent ones (so that statements chain)."""
        names = [n for n in self.tensors(kind) if pred is None or _safe(pred, self.ns[n])]
        if not names:
            return None
        w = np.arange(1, len(names) + 1, dtype=float) ** 1.5
        return names[int(self.rng.choice(len(names), p=w / w.sum()))]

    def new_input(self, shape: tuple, requires_grad: bool | None = None) -> str:
        name = f"x{len(self.inputs)}"
        vals = np.round(self.rng.uniform(-2, 2, size=shape), 4)
        rg = self.chance(0.6) if requires_grad is None else requires_grad
        inp = Input(name, np.asarray(vals, dtype=np.float64), rg)
        self.inputs.append(inp)
        self.ns.update(make_inputs(Program(self.dtype, [inp], []), torch, "float64"))
        self.names.append(name)
        return name

    def operand(self, shape: tuple, into: bool = False, target=None) -> str:
        """A float name (existing or a new input) that broadcasts with ``shape``; with ``into``,
        one that broadcasts *to* ``shape`` (the other operand of an in-place op into the tensor
        ``target``)."""
        if self.chance(0.5):
            def fits(v):
                try:
                    b = torch.broadcast_shapes(tuple(v.shape), shape)
                except RuntimeError:
                    return False
                return not into or tuple(b) == tuple(shape) and _decidable(v, target)
            found = self.pick("f", fits)
            if found is not None:
                return found
        return self.new_input(self.bcast_shape(shape, into))

    def bcast_shape(self, shape: tuple, into: bool = False) -> tuple:
        """A random shape that broadcasts with ``shape`` (to it, with ``into``)."""
        s = list(shape)
        if s and self.chance(0.3):
            s = s[self.randint(0, len(s)):]
        s = [1 if self.chance(0.3) else n for n in s]
        if not into and len(s) < 4 and self.chance(0.15):
            s.insert(0, self.choice((1, 2, 3)))
        if not into and s and self.chance(0.1):
            s[self.randint(0, len(s) - 1)] = 1
        return tuple(s)

    def dim(self, ndim: int) -> int:
        """A valid dim for ``ndim`` dims (sometimes negative); 0 for a 0-d tensor."""
        if ndim == 0:
            return self.choice((0, -1))
        d = self.randint(0, ndim - 1)
        return d - ndim if self.chance(0.3) else d

    def index_list(self, size: int, n: int | None = None) -> list:
        n = self.randint(1, 4) if n is None else n
        if size == 0:
            return []
        return [self.randint(-size, size - 1) if self.chance(0.15) else self.randint(0, size - 1)
                for _ in range(n)]

    def fresh(self) -> str:
        self.count += 1
        return f"t{self.count}"

    def rollback(self, n_inputs: int, count: int) -> None:
        """Forget the inputs and names drawn for a statement that was not kept."""
        for inp in self.inputs[n_inputs:]:
            self.names.remove(inp.name)
        del self.inputs[n_inputs:]
        self.count = count

    # --- running -----------------------------------------------------------------------------
    def try_statement(self, stmt: str) -> Exception | None:
        """Run ``stmt`` in torch; on an exception restore the names it may have changed."""
        saved = dict(self.ns)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with np.errstate(all="ignore"):
                try:
                    exec(compiled(stmt), self.ns)  # noqa: S102
                except Exception as exc:  # noqa: BLE001
                    self.ns.clear()
                    self.ns.update(saved)
                    return exc
        return None


def _safe(pred, v) -> bool:
    """``pred(v)``, False if it raises (reading a stale view's grad_fn can)."""
    try:
        return bool(pred(v))
    except RuntimeError:
        return False


def generate(seed: int, index: int, dtype: str = "float32") -> Program:
    """Program ``index`` of the batch drawn from ``seed`` (the same program every time)."""
    rng = np.random.default_rng([seed, index, 0 if dtype == "float32" else 1])
    g = Gen(rng, dtype)
    for _ in range(g.randint(1, 3)):
        g.new_input(g.shape())
    n_ops = g.randint(3, 12)
    statements: list[str] = []
    tries = 0
    while len(statements) < n_ops and tries < 20 * n_ops:
        tries += 1
        mark = (len(g.inputs), g.count)
        stmt = ops.draw(g)
        exc = None if stmt is None else g.try_statement(stmt)
        if exc is not None and g.chance(KEEP_ERROR) and len(statements) >= 2:
            statements.append(stmt)
            break
        if stmt is None or exc is not None:
            g.rollback(*mark)
            continue
        statements.append(stmt)
        head = stmt.split(" = ", 1)[0]
        if head.isidentifier() and head not in g.names:
            g.names.append(head)
    return Program(dtype, g.inputs, statements, f"seed {seed}, program {index}, {dtype}")


def _decidable(v, target) -> bool:
    """Whether torch's overlap check decides an in-place write into ``target`` reading ``v``:
    where they share memory and either is strided (torch finds that "too hard"), the result
    depends on the order torch's kernel visits the elements in, which nothing else reproduces."""
    if target is None or v.untyped_storage().data_ptr() != target.untyped_storage().data_ptr():
        return True
    return v.is_contiguous() and target.is_contiguous()
