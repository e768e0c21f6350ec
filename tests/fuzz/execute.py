"""Run a program in one library, line by line, and snapshot what a user could look at."""

from __future__ import annotations

import dataclasses
import functools
import warnings

import numpy as np

from .program import Program

# Footer names that only restate other values (compared through those).
_NOT_COMPARED = {"torch", "F", "np", "rng", "roots", "ups", "leaves", "ws", "terms"}


@dataclasses.dataclass
class Snap:
    """A tensor as a user sees it: dtype name, shape, requires_grad, values (as NumPy)."""

    dtype: str
    shape: tuple
    requires_grad: bool
    values: np.ndarray
    strides: tuple = ()  # of the dims with more than one element (the others' are arbitrary)


@dataclasses.dataclass
class Result:
    """Where the run stopped (line index, exception type, message) and the names' values."""

    error: tuple | None
    values: dict


@functools.lru_cache(maxsize=65536)
def compiled(line: str):
    return compile(line, "<fuzz>", "exec")


def make_inputs(program: Program, lib, dtype: str, perturb: float = 0.0) -> dict:
    """The program's input tensors in ``lib``; ``perturb`` scales them by (1 + perturb * N(0,1))
    (the reference run that tells which results are ill-conditioned)."""
    rng = np.random.default_rng(12345)
    out = {}
    for inp in program.inputs:
        v = inp.values
        if perturb:
            v = v * (1 + perturb * rng.standard_normal(v.shape))
        dt = getattr(lib, dtype)
        if v.size == 0:
            t = lib.zeros(*v.shape, dtype=dt, requires_grad=inp.requires_grad)
        else:
            t = lib.tensor(v.tolist(), dtype=dt, requires_grad=inp.requires_grad)
        out[inp.name] = t
    return out


def run(program: Program, lib, dtype: str | None = None, perturb: float = 0.0) -> Result:
    """Run ``program`` with ``torch`` bound to ``lib``; stop at the first exception."""
    ns = {"torch": lib, "F": lib.nn.functional, "np": np}
    ns.update(make_inputs(program, lib, dtype or program.dtype, perturb))
    error = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            for i, line in enumerate(program.body()):
                try:
                    exec(compiled(line), ns)  # noqa: S102 - running the program is the point
                except Exception as exc:  # noqa: BLE001 - the exception is what we compare
                    error = (i, type(exc), str(exc))
                    break
            values = {k: snapshot(v, lib) for k, v in ns.items()
                      if k not in _NOT_COMPARED and not k.startswith("__")}
    return Result(error, values)


def snapshot(v, lib):
    """A comparable copy of a value: tensors as ``Snap``, sequences item by item."""
    if isinstance(v, lib.Tensor):
        a = v.detach()
        if getattr(a, "_is_zerotensor", lambda: False)():  # torch's ZeroTensor: no numpy()
            a = lib.zeros_like(a)
        arr = np.array(a.numpy(), copy=True)
        strides = tuple(st for st, n in zip(v.stride(), v.shape) if n > 1)
        return Snap(str(v.dtype).split(".")[-1], tuple(v.shape), bool(v.requires_grad), arr,
                    strides)
    if isinstance(v, list | tuple):
        return [snapshot(x, lib) for x in v]
    if v is None or isinstance(v, bool | int | float):
        return v
    return type(v).__name__
