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
    out = np.empty((rows.shape[0], n), dtype=np.int64)
    for i, row in enumerate(rows):
        if (row < 0).any():
            raise RuntimeError("invalid multinomial distribution (encountering probability "
                               "entry < 0)")
        if not np.isfinite(row).all():
            raise RuntimeError("invalid multinomial distribution (encountering probability "
                               "entry = infinity or NaN)")
        cum = np.cumsum(row, dtype=row.dtype)  # accumulated in order, in the row's dtype
        if not cum[-1] > 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        cum /= cum[-1]
        cum[-1] = 1
        u = double_uniform_sample((n,), generator)
        out[i] = np.searchsorted(cum.astype(np.float64), u, side="left")
    return out.reshape(p.shape[:-1] + (n,))


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
