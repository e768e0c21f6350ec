"""Compare a program's run in ember with its run in torch.

Values are compared relative to their magnitude, with a tolerance that also grows where torch's
own result is ill-conditioned. Two reference runs of torch measure that: one in float64 on
inputs perturbed by a relative ``PERTURB[dtype]`` (a few times the rounding of the program's
dtype: sensitivity to the inputs), one in the program's dtype on inputs perturbed by a few units
in the last place (``ULPS[dtype]``: sensitivity to rounding, as in a cancellation whose exact
result is 0). An element may differ from torch by
``RTOL * (|t| + 0.01 * max(max|t|, 1)) + 4 * max|t - reference|``: inputs and upstream gradients
are of order 1, so rounding errors are at least of order RTOL / 100 (for a second-order
gradient, RTOL / 10 of the largest first-order gradient: it sums products of first-order
quantities, and is often such a sum that cancels to 0). Where torch's result jumps
under a perturbation (a comparison near a tie, a branch of ``where``, overflow), the tolerance
becomes as large as the jump, so such elements are in effect skipped; where a reference run
changes a shape, an integer or boolean element, or where it raises (or stops) differently, that
value (or the whole program) is skipped. Exceptions must match in the line that raises and in
type (ember's type may be a subclass of torch's).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

import ember

from .execute import Result, Snap, run
from .program import Program

RTOL = {"float32": 1e-4, "float64": 1e-10}
PERTURB = {"float32": 2.0 ** -20, "float64": 2.0 ** -43}
ULPS = {"float32": 2.0 ** -21, "float64": 2.0 ** -50}
_KIND = {"g0": "grad", "g": "grad", "gg": "gradgrad"}


@dataclasses.dataclass
class Disagreement:
    kind: str  # exception, forward, grad, gradgrad, requires_grad, dtype, shape, none
    where: str
    detail: str

    def __str__(self) -> str:
        return f"[{self.kind}] {self.where}: {self.detail}"


@dataclasses.dataclass
class Report:
    disagreements: list
    skipped: str | None = None  # why the program as a whole was not compared


def compare(program: Program, layout: bool = False) -> Report:
    """Run ``program`` in ember, torch, and torch's float64 reference; list disagreements
    (with ``layout``, also results whose strides differ)."""
    t = run(program, torch)
    refs = [run(program, torch, "float64", PERTURB[program.dtype]),
            run(program, torch, program.dtype, ULPS[program.dtype])]
    e = run(program, ember)
    return diff(program, e, t, refs, layout)


def _err(res: Result):
    return None if res.error is None else (res.error[0], res.error[1].__name__)


def diff(program: Program, e: Result, t: Result, refs: list, layout: bool = False) -> Report:
    for r in refs:
        if _err(t) != _err(r):
            return Report([], f"torch stops differently in a reference run: {_err(t)} vs "
                              f"{_err(r)}")
    out = []
    lines = program.body()
    if t.error is not None or e.error is not None:
        ok = t.error is not None and e.error is not None and t.error[0] == e.error[0] and (
            issubclass(e.error[1], t.error[1]) or e.error[1].__name__ == t.error[1].__name__)
        if not ok:
            out.append(Disagreement("exception", _where(lines, t.error, e.error),
                                    f"torch: {_show(t.error)}; ember: {_show(e.error)}"))
            return Report(out)
    rtol = RTOL[program.dtype]
    # Second-order gradients are sums of products of first-order quantities, whose rounding
    # errors scale with the first-order gradients even where the sum cancels to 0.
    floors = {"gradgrad": 0.1 * _magnitude(t.values.get("g"))}
    for name, tv in t.values.items():
        if name not in e.values:
            out.append(Disagreement("forward", name, "missing in ember"))
            continue
        kind = _KIND.get(name, "forward")
        _compare(out, kind, name, e.values[name], tv, [r.values.get(name) for r in refs], rtol,
                 layout, floors.get(kind, 0.01))
    return Report(out)


def _where(lines, te, ee) -> str:
    i = min(x[0] for x in (te, ee) if x is not None)
    return f"line {i}: {lines[i]}"


def _show(err) -> str:
    return "no exception" if err is None else f"{err[1].__name__}: {err[2][:200]}"


def _magnitude(v) -> float:
    """The largest finite magnitude in a value (tensors, lists of them), at least 1."""
    if isinstance(v, list):
        return max([_magnitude(x) for x in v] + [1.0])
    if isinstance(v, Snap) and v.values.dtype.kind == "f":
        finite = np.abs(v.values[np.isfinite(v.values)])
        return max(float(finite.max()) if finite.size else 0.0, 1.0)
    return 1.0


def _compare(out: list, kind: str, name: str, ev, tv, rvs: list, rtol: float,
             layout: bool, floor: float = 0.01) -> None:
    """Compare one value; ``rvs`` are the reference runs' values of it."""
    if isinstance(tv, list):
        if not isinstance(ev, list) or len(ev) != len(tv):
            out.append(Disagreement(kind, name, f"torch {_brief(tv)}, ember {_brief(ev)}"))
            return
        rvs = [rv if isinstance(rv, list) and len(rv) == len(tv) else [None] * len(tv)
               for rv in rvs]
        for i, (a, b) in enumerate(zip(ev, tv)):
            _compare(out, kind, f"{name}[{i}]", a, b, [rv[i] for rv in rvs], rtol, layout,
                     floor)
        return
    if not isinstance(tv, Snap):
        if ev != tv and all(rv == tv for rv in rvs):
            out.append(Disagreement(kind, name, f"torch {tv!r}, ember {ev!r}"))
        return
    if not isinstance(ev, Snap):
        out.append(Disagreement("none" if ev is None else kind, name,
                                f"torch a tensor, ember {_brief(ev)}"))
        return
    if ev.dtype != tv.dtype:
        out.append(Disagreement("dtype", name, f"torch {tv.dtype}, ember {ev.dtype}"))
    if ev.requires_grad != tv.requires_grad:
        out.append(Disagreement("requires_grad", name,
                                f"torch {tv.requires_grad}, ember {ev.requires_grad}"))
    if layout and ev.strides != tv.strides and ev.shape == tv.shape and ev.values.size and \
            kind == "forward":
        out.append(Disagreement("layout", name, f"strides: torch {tv.strides}, ember "
                                                f"{ev.strides}"))
    ref_ok = all(isinstance(rv, Snap) and rv.shape == tv.shape for rv in rvs)
    if ev.shape != tv.shape:
        if ref_ok:
            out.append(Disagreement("shape", name, f"torch {tv.shape}, ember {ev.shape}"))
        return
    if not ref_ok:
        return
    bad = mismatch(ev.values, tv.values, [rv.values for rv in rvs],
                   max(rtol, RTOL.get(tv.dtype, 0.0)), floor)
    if bad is not None:
        out.append(Disagreement(kind, name, bad))


def _brief(v) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(_brief(x) for x in v) + "]"
    if isinstance(v, Snap):
        return f"tensor{list(v.shape)}"
    return repr(v)


def mismatch(e: np.ndarray, t: np.ndarray, refs: list, rtol: float,
             floor: float = 0.01) -> str | None:
    """None if ``e`` matches ``t`` within the tolerance above (``refs``: the reference runs'
    values; ``floor``: the absolute floor, relative to the magnitudes involved), else a
    description."""
    if t.dtype.kind not in "fc":
        bad = e != t
        for r in refs:
            bad &= r.astype(t.dtype) == t
    else:
        e64, t64 = (np.asarray(x, np.float64) for x in (e, t))
        with np.errstate(all="ignore"):
            same_t = (e64 == t64) | (np.isnan(e64) & np.isnan(t64))
            noise = np.zeros(t64.shape)
            for r in refs:
                r64 = np.asarray(r, np.float64)
                d = np.where((r64 == t64) | (np.isnan(r64) & np.isnan(t64)), 0.0,
                             np.abs(t64 - r64))
                noise = np.maximum(noise, np.where(np.isnan(d), np.inf, d))
            finite = np.abs(t64[np.isfinite(t64)])
            scale = finite.max() if finite.size else 0.0
            allowed = rtol * (np.abs(t64) + floor * max(scale, 1.0)) + 4 * noise
            err = np.abs(e64 - t64)
            bad = ~same_t & ~(err <= allowed)
    if not bad.any():
        return None
    idx = tuple(int(i) for i in np.argwhere(bad)[0])
    return (f"{int(bad.sum())} of {bad.size} elements differ, e.g. at {list(idx)}: torch "
            f"{t[idx]!r}, ember {e[idx]!r}")
