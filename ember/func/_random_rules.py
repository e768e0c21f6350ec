"""Random ops inside a batched vmap with ``randomness="same"`` or ``"different"``.

vmap first runs the function once on BatchedTensors under every randomness mode; a random
draw there raises (vmap then runs per sample) unless the op knows how to draw for the whole
batch. Dropout does: "same" draws one mask of the sample's shape, shared by every sample;
"different" draws one mask per sample in a single draw (ember's generator yields the same
numbers as the per-sample loop, which draws the samples' masks one after the other).
"""

from __future__ import annotations

import numpy as np

from ember._random import VMAP_RANDOMNESS

BATCHED_RANDOMNESS: list = [None]  # the batched vmap call's mode ("same" / "different")


def dropout_mask(input, mask_shape: tuple, scale_dtype, p: float):
    """Dropout's scaled 0/1 mask inside a batched vmap (None outside one): a plain tensor
    under "same", a BatchedTensor of the innermost level under "different"."""
    from ember._backend import on_device_of
    from ember._random import bernoulli_sample
    from ember._tensor import Tensor
    from ember.func._batched import LEVELS, Unbatchable, wrap

    mode = BATCHED_RANDOMNESS[0]
    if mode is None:
        return None
    if len(LEVELS) > 1:
        raise Unbatchable("a random draw inside nested vmaps")
    level, size = LEVELS[-1]
    shape = mask_shape if mode == "same" else (size, *mask_shape)
    prev, VMAP_RANDOMNESS[0] = VMAP_RANDOMNESS[0], None  # this draw is allowed
    try:
        keep = bernoulli_sample(shape, 1.0 - p)
    finally:
        VMAP_RANDOMNESS[0] = prev
    dt = scale_dtype
    ref = input._value._data if mode == "different" and hasattr(input, "_value") else None
    mask = np.multiply(keep, dt.type(1.0) / dt.type(1.0 - p), dtype=dt)
    m = Tensor._make(mask if ref is None else on_device_of(ref, mask))
    return wrap(m, level) if mode == "different" else m
