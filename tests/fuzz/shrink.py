"""Shrink a disagreeing program: drop statements and inputs, cut shapes, simplify values, for as
long as it still disagrees the same way (the first disagreement's kind)."""

from __future__ import annotations

import re

import numpy as np

from .compare import compare
from .program import Input, Program


def _kind(program: Program, layout: bool) -> str | None:
    rep = compare(program, layout)
    if rep.skipped is not None or not rep.disagreements:
        return None
    return rep.disagreements[0].kind


def shrink(program: Program, max_rounds: int = 8, layout: bool = False) -> Program:
    """The smallest program found that disagrees like ``program`` does."""
    kind = _kind(program, layout)
    if kind is None:
        return program

    def fails(p: Program) -> bool:
        try:
            rep = compare(p, layout)
        except Exception:  # noqa: BLE001 - a broken candidate is just not kept
            return False
        return rep.skipped is None and any(d.kind == kind for d in rep.disagreements)

    for _ in range(max_rounds):
        before = program.text()
        program = _drop_statements(program, fails)
        program = _drop_inputs(program, fails)
        program = _simplify_inputs(program, fails)
        if program.text() == before:
            break
    return program


def _drop_statements(p: Program, fails) -> Program:
    i = len(p.statements) - 1
    while i >= 0:
        cand = p.replace(statements=p.statements[:i] + p.statements[i + 1:])
        if fails(cand):
            p = cand
        i -= 1
    return p


def _used(p: Program, name: str) -> bool:
    pat = re.compile(rf"\b{name}\b")
    return any(pat.search(s) for s in p.statements)


def _drop_inputs(p: Program, fails) -> Program:
    for inp in list(p.inputs):
        if not _used(p, inp.name):
            cand = p.replace(inputs=[i for i in p.inputs if i is not inp])
            if fails(cand):
                p = cand
    return p


def _with(p: Program, k: int, inp: Input) -> Program:
    return p.replace(inputs=[*p.inputs[:k], inp, *p.inputs[k + 1:]])


def _candidates(inp: Input):
    """Simpler versions of an input, simplest first."""
    v = inp.values
    if inp.requires_grad:
        yield Input(inp.name, v, False)
    for d in range(v.ndim):
        if v.shape[d] > 1:
            yield Input(inp.name, np.take(v, [0], axis=d), inp.requires_grad)
            yield Input(inp.name, np.take(v, range(v.shape[d] - 1), axis=d), inp.requires_grad)
        if v.shape[d] == 1:
            yield Input(inp.name, np.squeeze(v, d), inp.requires_grad)
    for decimals in (0, 1):
        r = np.round(v, decimals)
        if not np.array_equal(r, v):
            yield Input(inp.name, r, inp.requires_grad)


def _simplify_inputs(p: Program, fails) -> Program:
    for k in range(len(p.inputs)):
        progress = True
        while progress:
            progress = False
            for cand in _candidates(p.inputs[k]):
                q = _with(p, k, cand)
                if fails(q):
                    p, progress = q, True
                    break
    return p
