"""get_rng_state / set_rng_state and Generator.get_state / set_state in torch's layout: the same
bytes as torch after the same draws, states that cross both ways, torch's validation."""

from __future__ import annotations

import struct

import numpy as np
import pytest
import torch
from oracle import same

import ember

DRAWS = [  # each draws the same numbers from the same state in both libraries
    lambda m, g: m.rand(3, generator=g), lambda m, g: m.randn(1, generator=g),
    lambda m, g: m.randn(5, generator=g), lambda m, g: m.rand(700, dtype=m.float64, generator=g),
    lambda m, g: m.randint(0, 100, (9,), generator=g), lambda m, g: m.randperm(30, generator=g),
    lambda m, g: m.randn(40, generator=g), lambda m, g: m.randint(0, 2**40, (3,), generator=g),
]


def _same_draw(e, t) -> None:
    """Equal; float32 normals of 16+ elements within a last bit (torch's AVX2 kernel)."""
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=3e-7, atol=0)


def _bytes(t) -> np.ndarray:
    return np.asarray(t.numpy() if hasattr(t, "numpy") else t)


@pytest.mark.parametrize("seed", [0, 7, 12345, 2**40 + 3, -1])
def test_state_bytes_match_torch_after_every_draw(seed):
    torch.manual_seed(seed)
    ember.manual_seed(seed)
    for draw in [None, *DRAWS, *DRAWS]:
        if draw is not None:
            _same_draw(draw(ember, None), draw(torch, None))
        t, e = torch.get_rng_state(), ember.get_rng_state()
        assert e.dtype == ember.uint8 and tuple(e.shape) == (5056,)
        np.testing.assert_array_equal(_bytes(e), _bytes(t))


def test_generator_state_bytes_match_torch():
    tg, eg = torch.Generator().manual_seed(99), ember.Generator().manual_seed(99)
    for draw in DRAWS:
        draw(torch, tg), draw(ember, eg)
        np.testing.assert_array_equal(_bytes(eg.get_state()), _bytes(tg.get_state()))
    # a fresh generator: torch's default seed, not yet drawn from
    np.testing.assert_array_equal(_bytes(ember.Generator().get_state()),
                                  _bytes(torch.Generator().get_state()))


@pytest.mark.parametrize("k", range(len(DRAWS)))
def test_torch_state_into_ember_and_back(k):
    """A state taken from torch mid-stream gives torch's next numbers in ember, and ember's
    state after those draws gives torch the numbers that follow."""
    torch.manual_seed(k)
    for draw in DRAWS[:k + 1]:
        draw(torch, None)
    ember.set_rng_state(ember.tensor(torch.get_rng_state().numpy()))
    for draw in DRAWS:
        _same_draw(draw(ember, None), draw(torch, None))
    torch.set_rng_state(torch.from_numpy(ember.get_rng_state().numpy().copy()))
    for draw in DRAWS[::-1]:
        _same_draw(draw(ember, None), draw(torch, None))


def test_generator_set_state_crosses():
    tg = torch.Generator().manual_seed(5)
    torch.randn(3, generator=tg)  # leaves a cached Box-Muller value
    eg = ember.Generator().set_state(ember.tensor(tg.get_state().numpy()))
    assert eg.initial_seed() == 5
    for draw in DRAWS:
        _same_draw(draw(ember, eg), draw(torch, tg))


def _crafted(left=None, nxt=None, seeded=1, normal=None, flt=None, seed=11) -> np.ndarray:
    torch.manual_seed(seed)
    torch.rand(40)
    s = torch.get_rng_state().numpy().copy()
    old = struct.unpack_from("<QiiQ", s, 0)
    struct.pack_into("<QiiQ", s, 0, old[0], old[1] if left is None else left, seeded,
                     old[3] if nxt is None else nxt)
    if normal is not None:
        struct.pack_into("<dddi", s, 5016, 0.25, normal, 3.0, 1)  # x and rho are not read
    if flt is not None:
        struct.pack_into("<f?", s, 5048, flt, True)
    return s


@pytest.mark.parametrize("fields", [
    dict(), dict(left=5, nxt=0), dict(left=1, nxt=0), dict(left=1, nxt=624),
    dict(left=100, nxt=3), dict(left=2, nxt=623), dict(seeded=2),
    dict(nxt=2**32 + 40),  # torch keeps next as 32 bits
    dict(normal=0.5), dict(flt=0.25), dict(normal=-1.5, flt=0.75),
])
def test_crafted_states_draw_as_torch(fields):
    """Valid states torch accepts, including a left/next pair that is not the usual one and
    the caches: the same numbers follow, and the same state bytes after them."""
    s = _crafted(**fields)
    torch.set_rng_state(torch.from_numpy(s.copy()))
    ember.set_rng_state(ember.tensor(s))
    np.testing.assert_array_equal(_bytes(ember.get_rng_state()), _bytes(torch.get_rng_state()))
    for draw in DRAWS:
        _same_draw(draw(ember, None), draw(torch, None))
        np.testing.assert_array_equal(_bytes(ember.get_rng_state()),
                                      _bytes(torch.get_rng_state()))


@pytest.mark.parametrize("bad,phrase", [
    ("m.zeros(5056)", "RNG state must be a torch.ByteTensor"),
    ("m.zeros(10, dtype=m.int64)", "RNG state must be a torch.ByteTensor"),
    ("[1, 2]", "expected a torch.ByteTensor, but got list"),
    ("None", "expected a torch.ByteTensor"),
    ("m.zeros(100, dtype=m.uint8)", "Expected a CPUGeneratorImplState of size 5056 but found the "
                                    "input RNG state size to be 100"),
    ("m.zeros(5048, dtype=m.uint8)", "size to be 5048"),
    ("m.get_rng_state()[:-1]", "size to be 5055"),
    ("m.zeros(5056, dtype=m.uint8)", "Invalid mt19937 state"),  # not seeded
    ("m.zeros(2, 2528, dtype=m.uint8)", "Invalid mt19937 state"),
    ("m.from_numpy(CRAFT(left=0))", "Invalid mt19937 state"),
    ("m.from_numpy(CRAFT(left=625))", "Invalid mt19937 state"),
    ("m.from_numpy(CRAFT(left=-1))", "Invalid mt19937 state"),
    ("m.from_numpy(CRAFT(nxt=625, left=1))", "Invalid mt19937 state"),
    ("m.from_numpy(CRAFT(seeded=0))", "Invalid mt19937 state"),
])
def test_bad_states_refused_as_torch(bad, phrase):
    def attempt(m, setter):
        return setter(m, eval(bad, {"m": m, "CRAFT": _crafted}))  # noqa: S307
    for setter in (lambda m, s: m.set_rng_state(s), lambda m, s: m.Generator().set_state(s)):
        same(lambda m, setter=setter: attempt(m, setter), match=phrase)


def test_refused_state_leaves_the_generator_working():
    ember.manual_seed(4)
    before = ember.get_rng_state()
    with pytest.raises(RuntimeError):
        ember.set_rng_state(ember.zeros(5056, dtype=ember.uint8))
    np.testing.assert_array_equal(_bytes(ember.get_rng_state()), _bytes(before))
    torch.manual_seed(4)
    _same_draw(ember.randn(20), torch.randn(20))


def test_fork_rng_and_checkpoint_state_restore():
    ember.manual_seed(8)
    with ember.random.fork_rng():
        ember.rand(5)
    torch.manual_seed(8)
    np.testing.assert_array_equal(ember.rand(5).numpy(), torch.rand(5).numpy())
