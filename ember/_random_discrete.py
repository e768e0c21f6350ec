"""Poisson and binomial draws with torch's CPU samplers, so that a seeded program sees torch's
numbers.

torch's ``_s_poisson_cpu`` and ``_s_binomial_cpu`` run one element at a time on the CPU
generator, each reading ``uniform_real_distribution<double>`` draws until it accepts:
Poisson by Knuth's product of uniforms below rate 10 and Hoermann's transformed rejection
(PTRS) from 10 on; binomial by inverting geometric waiting times while ``n * min(p, 1 - p)`` is
below 10 and by BTRS rejection above. How many doubles an element reads depends on the values
it read, so where the next element starts is known only once this one is done: the stream is
inherently sequential. The per-element constants are computed with NumPy (in float32 where
torch's float kernel computes them in float), and only the accept/reject loop runs in Python,
on Python floats read ahead from the generator (``_Uniforms``), a few operations per double.
"""

from __future__ import annotations

import math

import numpy as np

from ember._random_gamma import _Stream
from ember.compiler.traced import refuse

_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
         0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
         0.00925546218271273, 0.00833056343336287)


class _Uniforms:
    """The generator's ``uniform_real_distribution<double>`` draws as Python floats, read
    ahead in blocks; ``close`` leaves the generator right after the draws taken."""

    def __init__(self, g, expected: int) -> None:
        self.st = _Stream(g, expected)
        self.buf = self.st.peek(expected).tolist()
        self.pos = 0

    def __call__(self) -> float:
        if self.pos == len(self.buf):
            self.buf = self.st.peek(2 * len(self.buf) + 64).tolist()
        self.pos += 1
        return self.buf[self.pos - 1]

    def close(self) -> None:
        self.st.pos = self.pos
        self.st.close()


def poisson_sample(g, rate: np.ndarray) -> np.ndarray:
    """torch's ``_s_poisson_cpu`` draws (float64) for ``rate``'s elements in C order."""
    refuse("sampling a Poisson distribution")
    flat = np.ascontiguousarray(rate, dtype=np.float64).reshape(-1)
    out = np.zeros(flat.size)
    st = _Uniforms(g, 2 * flat.size + 64)
    rates = flat.tolist()
    enlam = np.exp(-flat).tolist()
    for i, lam in enumerate(rates):
        if lam >= 10:
            out[i] = _ptrs(st, lam)
        elif lam != 0:  # NaN runs Knuth's loop, as torch's does: it stops at the first draw
            x, prod, lim = 0, 1.0, enlam[i]
            while True:
                prod *= st()
                if not prod > lim:
                    break
                x += 1
            out[i] = x
    st.close()
    return out.reshape(rate.shape)


def _ptrs(uniform: _Uniforms, lam: float) -> float:
    slam, loglam = math.sqrt(lam), math.log(lam)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    invalpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2)
    while True:
        u = uniform() - 0.5
        v = uniform()
        us = 0.5 - abs(u)
        k = math.floor((2 * a / us + b) * u + lam + 0.43)
        if us >= 0.07 and v <= vr:
            return float(k)
        if k < 0 or (us < 0.013 and v > us):
            continue
        if (math.log(v) + math.log(invalpha) - math.log(a / (us * us) + b)
                <= -lam + k * loglam - math.lgamma(k + 1.0)):
            return float(k)


def binomial_sample(g, count: np.ndarray, prob: np.ndarray) -> np.ndarray:
    """torch's ``_s_binomial_cpu`` draws for same-shape ``count`` and ``prob`` (both float32
    or both float64; float32 computes torch's float arithmetic), in ``count``'s dtype."""
    refuse("sampling a Binomial distribution")
    dt = count.dtype.type
    single = dt is np.float32
    n = np.ascontiguousarray(count).reshape(-1)
    p = np.ascontiguousarray(prob).reshape(-1)
    flip = p > 0.5
    q = np.where(flip, (1.0 - p.astype(np.float64)).astype(dt), p)  # scalar_t qprob = 1.0 - p
    with np.errstate(all="ignore"):
        btrs = n * q >= 10.0
        logq = np.log1p(-q)  # in scalar_t, then widened
        stddev = np.sqrt(n * q * (dt(1) - q)).astype(np.float64)
        r = (q / (dt(1) - q)).astype(np.float64)
        m = np.floor((n + dt(1)) * q).astype(np.float64)
        c = (n * q).astype(np.float64) + 0.5
    draws = []
    st = _Uniforms(g, 4 * n.size + 64)
    # a NaN count would loop forever in torch's inversion: it gives NaN here
    trivial = (n <= 0) | (p <= 0) | (p >= 1) | np.isnan(p) | np.isnan(n)
    rows = zip(trivial.tolist(), n.tolist(), q.tolist(), flip.tolist(), btrs.tolist(),
               logq.tolist(), stddev.tolist(), r.tolist(), m.tolist(), c.tolist())
    for skip, ni, qi, fi, bi, lq, sd, ri, mi, ci in rows:
        if skip:
            draws.append(0.0)
            continue
        k = _btrs(st, ni, qi, sd, ri, mi, ci, single) if bi else _inversion(st, ni, lq)
        draws.append(ni - k if fi else k)
    st.close()
    out = np.array(draws, dtype=np.float64)
    # count <= 0 or p <= 0: 0; p >= 1: count; NaN p: NaN (torch's branches, in that order)
    out = np.where((n <= 0) | (p <= 0), 0.0, np.where(p >= 1, n, np.where(np.isnan(p) | np.isnan(n),
                                                                         np.nan, out)))
    return out.astype(dt).reshape(count.shape)


def _inversion(uniform: _Uniforms, n: float, logq: float) -> float:
    """Count geometric waiting times (in double) until they pass ``n`` trials."""
    total, k = 0.0, 0
    while True:
        u = uniform()
        total += math.ceil(math.log(u) / logq) if u > 0 else math.inf
        if total > n:
            return float(k)
        k += 1


def _tail(k: float) -> float:
    """Stirling's series remainder for log(k!) (a table below 10)."""
    if k < 10:
        return _TAIL[int(k)]
    kp1sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)


def _btrs(uniform: _Uniforms, n: float, p: float, stddev: float, r: float, m: float, c: float,
          single: bool) -> float:
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * p
    v_r = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * stddev
    while True:
        u = uniform() - 0.5
        v = uniform()
        us = 0.5 - abs(u)
        k = math.floor((2 * a / us + b) * u + c)
        if single:  # torch's float kernel keeps k as a float
            k = float(np.float32(k))
        if k < 0 or k > n:
            continue
        if us >= 0.07 and v <= v_r:
            return k
        v = math.log(v * alpha / (a / (us * us) + b)) if v > 0 else -math.inf
        upper = ((m + 0.5) * math.log((m + 1) / (r * (n - m + 1)))
                 + (n + 1) * math.log((n - m + 1) / (n - k + 1))
                 + (k + 0.5) * math.log(r * (n - k + 1) / (k + 1))
                 + _tail(m) + _tail(n - m) - _tail(k) - _tail(n - k))
        if v <= upper:
            return k
