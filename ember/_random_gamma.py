"""Gamma draws with torch's CPU sampler, so that a seeded program sees torch's numbers.

torch's ``_standard_gamma`` runs Marsaglia and Tsang's rejection method element by element on
the CPU generator: one ``uniform_real_distribution<double>`` draw to boost ``alpha < 1``, then
rounds of one ``normal_distribution<double>`` draw (Box-Muller, the second value cached in the
generator) and one uniform, until a round accepts. Which numbers an element reads depends on
how many rounds the elements before it took, so the stream is sequential; but over 95% of
elements accept in their first round. So ``gamma_sample`` plans a block of elements as if each
accepts at once (the positions in the stream are then a cumulative sum), computes the block
with NumPy, keeps the prefix that did accept, rewinds the generator to the first element that
did not, runs that one element the slow way, and goes on with the next block.
"""

from __future__ import annotations

import math

import numpy as np

from ember.compiler.traced import refuse

_BLOCK = 256
_F0331 = float(np.float32(0.0331))  # torch writes 0.0331f: the float constant, widened
_THIRD = float(np.float32(1.0) / np.float32(3.0))  # 1.0f / 3.0f


def _constants(alpha: np.ndarray, single: bool):
    """Per element: (boost with a uniform, 1 / alpha for the boost, d, c), with the float32
    arithmetic torch's float kernel does before it widens to double."""
    boost = alpha < 1
    if single:
        a = alpha.astype(np.float32)
        with np.errstate(divide="ignore"):
            inv = (np.float32(1) / a).astype(np.float64)
        a = np.where(boost, a + np.float32(1), a)
        d = (a - np.float32(_THIRD)).astype(np.float64)
    else:
        a = alpha.astype(np.float64)
        with np.errstate(divide="ignore"):
            inv = 1.0 / a
        a = np.where(boost, a + 1.0, a)
        d = a - _THIRD
    with np.errstate(divide="ignore", invalid="ignore"):
        c = 1.0 / np.sqrt(9.0 * d)
    return boost, inv, d, c


def _box_muller(u1: np.ndarray, u2: np.ndarray):
    """torch's normal_distribution<double>: (the value returned, the value cached)."""
    r = np.sqrt(-2.0 * np.log1p(-u2))
    theta = 2.0 * np.pi * u1
    return r * np.cos(theta), r * np.sin(theta)


class _Stream:
    """The generator's doubles, read ahead into a buffer so that a block can look at the
    numbers it may need and then take only those it used; ``close`` leaves the generator
    exactly after the doubles taken, with the normal cache as torch's would be."""

    def __init__(self, g, expected: int) -> None:
        self.g = g
        self.snap = g._snapshot()
        self.cache = g._next_normal
        g._next_normal = None
        self.buf = g._uniform(expected, True)
        self.pos = 0

    def peek(self, k: int) -> np.ndarray:
        short = self.pos + k - self.buf.size
        if short > 0:
            self.buf = np.concatenate([self.buf, self.g._uniform(max(short, 1024), True)])
        return self.buf[self.pos:self.pos + k]

    def uniform(self) -> float:
        value = float(self.peek(1)[0])
        self.pos += 1
        return value

    def normal(self) -> float:
        if self.cache is not None:
            value, self.cache = self.cache, None
            return value
        u = self.peek(2)
        self.pos += 2
        x, self.cache = (float(t) for t in _box_muller(u[0], u[1]))
        return x

    def close(self) -> None:
        self.g._restore(self.snap)
        self.g._uniform(self.pos, True)
        self.g._next_normal = self.cache


def _block(st: _Stream, boost, inv, d, c, zero):
    """Run a block of elements assuming each accepts in its first round. Returns the values
    and how many leading elements are done (the next one did not accept; the caller runs it
    with ``_one``); the stream is left right after the elements done."""
    n = len(d)
    draws = ~zero
    cached0 = st.cache
    m = np.cumsum(draws) - draws  # index of each element's normal among the block's normals
    fresh = draws & ((m + (cached0 is not None)) % 2 == 0)
    boosted = boost & draws
    need = boosted + 2 * fresh + draws  # doubles each element reads
    off = np.cumsum(need) - need
    dbl = np.append(st.peek(int(need.sum())), 0.5)  # + a pad for unread positions
    last = dbl.size - 1

    def at(idx):
        return dbl[np.minimum(idx, last)]

    base = off + boosted
    x_new, cache_new = _box_muller(at(base), at(base + 1))
    # a cached normal is the sine value of the block's previous fresh normal
    prev_fresh = np.maximum.accumulate(np.where(fresh, np.arange(n), -1))
    prev = np.concatenate([[-1], prev_fresh[:-1]])
    first = np.nan if cached0 is None else cached0
    x = np.where(fresh, x_new, np.where(prev >= 0, cache_new[np.maximum(prev, 0)], first))
    u = 1.0 - at(base + 2 * fresh)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        scale = np.where(boosted, np.power(1.0 - at(off), inv), 1.0)
        y = 1.0 + c * x
        v = y * y * y
        xx = x * x
        ok = ~(y <= 0) & ((u < 1.0 - _F0331 * xx * xx)
                          | (np.log(u) < 0.5 * xx + d * (1.0 - v + np.log(v))))
        values = np.where(zero, 0.0, scale * d * v)
    bad = np.flatnonzero(draws & ~ok)
    done = n if bad.size == 0 else int(bad[0])
    st.pos += int(off[done]) if done < n else int(need.sum())
    normals = int(m[done]) if done < n else int(draws.sum())
    if normals:
        cached = (normals + (cached0 is not None)) % 2 == 1
        st.cache = float(cache_new[int(prev_fresh[done - 1])]) if cached else None
    return values[:done], done


def gamma_sample(g, alpha: np.ndarray, single: bool) -> np.ndarray:
    """torch's ``_standard_gamma`` draws (as float64, before the cast to ``alpha``'s dtype)
    for the elements of ``alpha`` in C order; ``single`` selects the float32 kernel's
    arithmetic."""
    refuse("sampling a Gamma distribution")
    flat = np.ascontiguousarray(alpha).reshape(-1)
    boost, inv, d, c = _constants(flat, single)
    zero = boost & (flat == 0)
    out = np.empty(flat.size)
    st = _Stream(g, 3 * flat.size + 64)
    i = 0
    while i < flat.size:
        j = min(i + _BLOCK, flat.size)
        values, done = _block(st, boost[i:j], inv[i:j], d[i:j], c[i:j], zero[i:j])
        out[i:i + done] = values
        i += done
        if i < j:
            out[i] = _one(st, bool(boost[i]), float(inv[i]), float(d[i]), float(c[i]))
            i += 1
    st.close()
    return out.reshape(alpha.shape)


def _one(st: _Stream, boost: bool, inv: float, d: float, c: float) -> float:
    """One element the way torch's loop runs it."""
    scale = 1.0
    if boost:
        scale = float(np.power(1.0 - st.uniform(), inv))
    while True:
        while True:
            x = st.normal()
            y = 1.0 + c * x
            if not y <= 0:  # torch's do-while: a NaN y ends the loop too
                break
        v = y * y * y
        u = 1.0 - st.uniform()
        xx = x * x
        if u < 1.0 - _F0331 * xx * xx:
            return scale * d * v
        if math.log(u) < 0.5 * xx + d * (1.0 - v + math.log(v)):
            return scale * d * v
