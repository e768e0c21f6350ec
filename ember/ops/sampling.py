"""``multinomial``: indices drawn from (unnormalised) probability rows, with torch's draws.

torch's CPU kernel has two paths, and ember follows both, so a seeded call returns torch's
indices:

- without replacement, or one sample: ``argmax`` / ``topk`` of ``p / q`` with ``q ~ Exp(1)``
  drawn in ``p``'s dtype (the Gumbel-max trick: sampling without replacement in one pass);
- with replacement: per row, the cumulative sum normalised to end at 1, then one uniform
  double per sample and a binary search for the first bucket at or above it.
"""

from __future__ import annotations

import numpy as np

from ember._creation import legacy_name
from ember._random import Generator, double_uniform_sample
from ember._tensor import Tensor


def _check(input: Tensor, num_samples: int, replacement: bool) -> None:
    if input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not input.dtype.is_floating_point:
        raise RuntimeError("multinomial only supports floating-point dtypes for input, got: "
                           f"{legacy_name(input.dtype)}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > input.shape[-1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")


def _without_replacement(p: np.ndarray, n: int, generator) -> np.ndarray:
    if not (p.max() < np.inf and p.min() >= 0):  # NaN fails the first test
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if (p.sum(-1) == 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    # q = empty_like(p).exponential_(1): -log1p(-u) from uniform doubles, stored in p's dtype
    q = (-np.log1p(-double_uniform_sample(p.shape, generator))).astype(p.dtype)
    key = p / q
    if n == 1:
        return key.argmax(-1)[..., None]
    # topk: the n largest, largest first (a stable sort keeps torch's order for ties)
    return np.argsort(-key, axis=-1, kind="stable")[..., :n]


def _with_replacement(p: np.ndarray, n: int, generator) -> np.ndarray:
    rows = p.reshape(-1, p.shape[-1])
    cum = np.cumsum(rows, axis=-1, dtype=rows.dtype)  # accumulated in order, in the row's dtype
    checks = (((rows < 0).any(-1), "encountering probability entry < 0"),
              (~np.isfinite(rows).all(-1), "encountering probability entry = infinity or NaN"),
              (~(cum[:, -1] > 0), "sum of probabilities <= 0"))
    bad = checks[0][0] | checks[1][0] | checks[2][0]
    if bad.any():  # torch checks row by row, drawing each row's samples before the next check
        r = int(bad.argmax())
        double_uniform_sample((r * n,), generator)
        why = next(msg for fails, msg in checks if fails[r])
        raise RuntimeError(f"invalid multinomial distribution ({why})")
    cum /= cum[:, -1:]
    cum[:, -1] = 1
    u = double_uniform_sample((rows.shape[0], n), generator)
    return _first_at_or_above(cum.astype(np.float64), u).reshape(p.shape[:-1] + (n,))


def _first_at_or_above(cum: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Per row i, ``np.searchsorted(cum[i], u[i], side="left")`` for every row at once: a
    binary search in log2(k) vectorised steps. cum rows end at 1 > u, so the answer is < k."""
    lo = np.zeros(u.shape, dtype=np.int64)
    hi = np.full(u.shape, cum.shape[-1] - 1, dtype=np.int64)
    for _ in range(int(cum.shape[-1]).bit_length()):
        mid = (lo + hi) >> 1
        below = np.take_along_axis(cum, mid, axis=-1) < u
        lo = np.where(below, mid + 1, lo)
        hi = np.where(below, hi, mid)
    return lo


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,
                generator: Generator | None = None) -> Tensor:
    """``num_samples`` category indices per row of ``input`` (non-negative weights, any
    scale), drawn with or without replacement; int64, never part of the graph."""
    if not isinstance(input, Tensor):
        raise TypeError("multinomial(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    num_samples = int(num_samples)
    _check(input, num_samples, replacement)
    p = input._data
    if p.size == 0:
        return Tensor._make(np.empty(p.shape[:-1] + (num_samples,), dtype=np.int64))
    draw = _without_replacement if not replacement or num_samples == 1 else _with_replacement
    return Tensor._make(draw(p, num_samples, generator).astype(np.int64))


METHODS = {"multinomial": multinomial}
FUNCTIONS = {"multinomial": multinomial}
