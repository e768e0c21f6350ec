"""Random number generation: torch's Generator API over NumPy's PCG64.

The streams need not match torch's numbers, only its API: manual_seed makes runs repeatable.
"""

from __future__ import annotations

import numpy as np


class Generator:
    """torch.Generator: ``manual_seed``, ``seed``, ``initial_seed``, ``get_state``/``set_state``."""

    def __init__(self, device="cpu") -> None:
        self.device = device
        self._seed = 67280421310721  # torch's default initial seed
        self._rng = np.random.default_rng(self._seed)

    def manual_seed(self, seed: int) -> Generator:
        seed = int(seed)
        if seed < 0:
            seed &= 0xFFFF_FFFF_FFFF_FFFF
        self._seed = seed
        self._rng = np.random.default_rng(seed)
        return self

    def seed(self) -> int:
        s = int(np.random.SeedSequence().entropy) & 0xFFFF_FFFF_FFFF_FFFF
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self):
        from ember._tensor import Tensor

        state = repr(self._rng.bit_generator.state).encode()
        return Tensor._make(np.frombuffer(state, dtype=np.uint8).copy())

    def set_state(self, state) -> Generator:
        import ast

        raw = bytes(state._data.astype(np.uint8)).decode()
        self._rng.bit_generator.state = ast.literal_eval(raw)
        return self

    @property
    def rng(self) -> np.random.Generator:
        return self._rng


default_generator = Generator()


def rng(generator: Generator | None) -> np.random.Generator:
    return (generator or default_generator)._rng


def manual_seed(seed: int) -> Generator:
    """Seed the default generator (and NumPy's legacy global RNG, as torch seeds its own)."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(state) -> None:
    default_generator.set_state(state)
