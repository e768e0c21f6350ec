"""Random number generation with torch's CPU streams.

A Generator is a Mersenne Twister (MT19937) seeded as torch seeds its own, and ``rand``,
``randn``, ``normal``, ``randint`` and ``randperm`` turn its 32-bit outputs into numbers the way
torch's CPU kernels do. So after ``manual_seed(s)`` they give torch's numbers: bit for bit in
float64 and for integers; float32 normals of 16 or more elements differ from torch's
vectorised (AVX2) kernel in the last bit or two. The samplers built on them (``bernoulli``,
dropout, ``nn.init``, exponential and friends, data shuffling) draw the same way, so a seeded
program sees torch's random numbers throughout.
"""

from __future__ import annotations

import struct

import numpy as np

from ember.compiler import traced

VMAP_RANDOMNESS: list = [None]  # the running ember.func.vmap's randomness mode, if any
_DEFAULT_SEED = 67280421310721  # torch's default initial seed
_MASK64 = 0xFFFF_FFFF_FFFF_FFFF
_N = 624  # MT19937's state words

# torch's CPUGeneratorImplState, byte for byte (x86-64 layout, little-endian): the legacy
# THGeneratorState (seed, left, seeded, next, 624 state words widened to uint64, then the
# Box-Muller cache as normal_x, normal_y, normal_rho, normal_is_valid), then the float cache.
_STATE_SIZE = 5056
_HEAD = struct.Struct("<QiiQ")  # the_initial_seed, left, seeded, next
_WORDS = slice(24, 24 + 8 * _N)
_NORMAL = struct.Struct("<dddi")  # at 5016
_FLOAT = struct.Struct("<f?")  # at 5048


def _temper(y: np.ndarray) -> np.ndarray:
    """MT19937's output transform of raw state words (uint64 arrays holding 32-bit values)."""
    y = y ^ (y >> np.uint64(11))
    y = y ^ ((y << np.uint64(7)) & np.uint64(0x9D2C5680))
    y = y ^ ((y << np.uint64(15)) & np.uint64(0xEFC60000))
    return y ^ (y >> np.uint64(18))


class Generator:
    """torch.Generator: ``manual_seed``, ``seed``, ``initial_seed``, ``get_state``/``set_state``.

    >>> g = ember.Generator().manual_seed(0)
    >>> ember.rand(2, generator=g)  # torch.rand(2, generator=torch.Generator().manual_seed(0))
    tensor([0.4963, 0.7682])
    """

    def __init__(self, device="cpu") -> None:
        from ember._backend import check_device

        self.device = check_device(device)
        self.manual_seed(_DEFAULT_SEED)

    def manual_seed(self, seed) -> Generator:
        seed = int(seed)
        if not -(1 << 63) <= seed <= _MASK64:
            raise ValueError("Overflow when unpacking long long")
        self._seed = seed & _MASK64  # negative seeds wrap, as torch's uint64 does
        self._bits = np.random.MT19937(0)
        self._bits._legacy_seeding(self._seed & 0xFFFF_FFFF)  # std::mt19937(seed) seeding
        self._next_normal = None  # torch caches the second Box-Muller value
        self._next_float_normal = None  # torch's float cache: kept in the state, never drawn
        # torch's (next, left) while they differ from NumPy's position: after seeding (0, 1),
        # or a torch state whose next words are read before the next regeneration.
        self._prefix = (0, 1)
        return self

    def seed(self) -> int:
        """Seed from OS entropy and return the seed used."""
        s = int(np.random.SeedSequence().entropy) & _MASK64
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self):
        """The state as torch's: a uint8 tensor of 5056 bytes in torch's CPU generator layout,
        so that torch.set_rng_state takes it (and ``set_state`` takes torch's)."""
        from ember._tensor import Tensor

        st = self._bits.state["state"]
        nxt, left = self._prefix if self._prefix is not None else (st["pos"], _N + 1 - st["pos"])
        buf = np.zeros(_STATE_SIZE, np.uint8)
        _HEAD.pack_into(buf, 0, self._seed, left, 1, nxt)
        buf[_WORDS] = st["key"].astype("<u8").view(np.uint8)
        if self._next_normal is not None:
            _NORMAL.pack_into(buf, 5016, 0.0, self._next_normal, 0.0, 1)
        if self._next_float_normal is not None:
            _FLOAT.pack_into(buf, 5048, self._next_float_normal, True)
        return Tensor._make(buf)

    def set_state(self, new_state) -> Generator:
        """Restore a state from ``get_state`` or from torch, checked as torch checks it."""
        from ember._tensor import Tensor

        if not isinstance(new_state, Tensor):
            raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__}")
        data = new_state._data
        if not isinstance(data, np.ndarray) or data.dtype != np.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        if data.size != _STATE_SIZE:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {_STATE_SIZE} but "
                               f"found the input RNG state size to be {data.size}")
        buf = np.ascontiguousarray(data).reshape(-1)
        seed, left, seeded, nxt = _HEAD.unpack_from(buf, 0)
        nxt &= 0xFFFF_FFFF  # torch keeps next as a uint32
        # torch's is_valid(); ember also refuses a state whose reads would run past the 624
        # words before the next regeneration (torch then reads the memory behind them).
        if not seeded or not 0 < left <= _N or nxt > _N or (left > 1 and nxt + left - 1 > _N):
            raise RuntimeError("Invalid mt19937 state")
        words = buf[_WORDS].view("<u8").astype(np.uint32)  # torch copies into 32-bit words
        in_step = nxt == _N + 1 - left  # NumPy's single position can say where torch reads
        bits = np.random.MT19937(0)
        bits.state = {"bit_generator": "MT19937",
                      "state": {"key": words, "pos": nxt if in_step else _N}}
        _, normal, _, normal_valid = _NORMAL.unpack_from(buf, 5016)
        flt, flt_valid = _FLOAT.unpack_from(buf, 5048)
        self._seed, self._bits = seed, bits
        self._prefix = None if in_step else (nxt, left)
        self._next_normal = normal if normal_valid else None
        self._next_float_normal = flt if flt_valid else None
        return self

    def _snapshot(self) -> tuple:
        """Everything a draw changes (ember.compile puts it back after a capture run)."""
        return (self._bits.state, self._prefix, self._next_normal, self._next_float_normal)

    def _restore(self, snap: tuple) -> None:
        self._bits.state, self._prefix, self._next_normal, self._next_float_normal = snap

    # --- torch's transforms of the raw 32-bit stream -----------------------------------------
    def _raw(self, n: int) -> np.ndarray:
        rec = traced.ACTIVE[0]  # under ember.compile's capture: a draw the program repeats
        if rec is not None:
            return rec.random(self, "_raw", n)
        if VMAP_RANDOMNESS[0] == "error":
            from ember.func._vmap import check_random

            check_random()
        if self._prefix is not None:
            return self._raw_prefixed(n)
        return self._bits.random_raw(n).astype(np.uint64)

    def _raw_prefixed(self, n: int) -> np.ndarray:
        """Draws while torch's (next, left) are not NumPy's position: the words torch reads
        before its next regeneration, then NumPy's stream (which regenerates first)."""
        nxt, left = self._prefix
        k = min(n, left - 1)
        head = _temper(self._bits.state["state"]["key"][nxt:nxt + k].astype(np.uint64))
        self._prefix = (nxt + k, left - k)
        if n == k:
            return head
        self._prefix = None
        return np.concatenate([head, self._bits.random_raw(n - k).astype(np.uint64)])

    def _raw64(self, n: int) -> np.ndarray:
        x = self._raw(2 * n)
        return (x[0::2] << np.uint64(32)) | x[1::2]

    def _uniform(self, n: int, double: bool) -> np.ndarray:
        """uniform_real_distribution: 53 random bits for double, 24 for every other dtype."""
        if double:
            return (self._raw64(n) & np.uint64((1 << 53) - 1)).astype(np.float64) * 2.0 ** -53
        return ((self._raw(n) & np.uint64((1 << 24) - 1)).astype(np.float32)
                * np.float32(2.0 ** -24))

    def _normals(self, n: int) -> np.ndarray:
        """n draws of normal_distribution<double>, torch's scalar sampler: Box-Muller on pairs
        of doubles, each pair giving its cos value, then its sin value; an odd one out is cached
        for the next draw, which takes it first."""
        head = [] if self._next_normal is None or not n else [self._next_normal]
        if head:
            self._next_normal = None
        pairs = (n - len(head) + 1) // 2
        u = self._uniform(2 * pairs, True).reshape(pairs, 2)
        r = np.sqrt(-2.0 * np.log1p(-u[:, 1]))
        theta = 2.0 * np.pi * u[:, 0]
        vals = np.stack([r * np.cos(theta), r * np.sin(theta)], axis=1).reshape(-1)
        if (n - len(head)) % 2:
            self._next_normal = float(vals[-1])
        return np.concatenate([head, vals[:n - len(head)]])

    def _normal(self, n: int, double: bool, mean: float = 0.0, std: float = 1.0) -> np.ndarray:
        """torch's normal_ kernel: one scalar draw each below 16 elements, else normal_fill
        (Box-Muller over blocks of 16 uniforms; a ragged tail redraws the last 16)."""
        if n < 16:
            return self._normals(n) * std + mean
        work = np.float64 if double else np.float32
        data = self._uniform(n, double)
        k = n // 16
        data[:k * 16] = _box_muller16(data[:k * 16].reshape(k, 16), work, mean, std).ravel()
        if n % 16:
            data[n - 16:] = _box_muller16(self._uniform(16, double).reshape(1, 16), work,
                                          mean, std).ravel()
        return data

    def _randint(self, low: int, high: int, n: int) -> np.ndarray:
        """random_from_to: a 32-bit draw (64-bit when the range needs it) modulo the range."""
        span = high - low
        raw = self._raw64(n) if span >= 1 << 32 else self._raw(n)
        return (raw % np.uint64(span)).astype(np.int64) + low

    def _randperm(self, n: int) -> np.ndarray:
        """torch's Fisher-Yates: swap i with i + random() % (n - i), for i < n - 1."""
        if n < 2:
            return np.arange(n, dtype=np.int64)
        z = self._raw(n - 1) % np.arange(n, 1, -1, dtype=np.uint64)
        return _swapped(z.astype(np.int64) + np.arange(n - 1, dtype=np.int64))


def _swapped(target: np.ndarray) -> np.ndarray:
    """What ``for i: p[i], p[target[i]] = p[target[i]], p[i]`` (target[i] >= i) makes of
    ``p = arange(len(target) + 1)``, without the loop. Position k ends with the value that
    position target[k] held before step k: that is the value swapped into target[k] by the
    latest earlier step with the same target, else its own; and position k, before step k,
    holds what the latest earlier step aimed at k swapped in, else k. Those links point to
    earlier steps, so pointer jumping resolves them in log(n) gathers."""
    n = target.size + 1
    k = np.arange(n)
    target = np.append(target, n - 1)  # the last position, as a step that swaps with itself
    order = np.argsort(target, kind="stable")  # the steps by target, each group in step order
    grouped = target[order]
    prev = np.full(n, -1)  # the latest earlier step with the same target
    same = grouped[1:] == grouped[:-1]
    prev[order[1:][same]] = order[:-1][same]
    last = np.full(n, -1)  # the latest step aimed at each position
    ends = np.append(~same, True)
    last[grouped[ends]] = order[ends]
    into = np.where(last == k, prev, last)  # the latest step before k aimed at k
    held = np.where(into >= 0, into, k)  # what position k holds before step k: follow links
    while True:
        nxt = held[held]
        if np.array_equal(nxt, held):
            break
        held = nxt
    return np.where(target == k, held, np.where(prev >= 0, held[prev], target))


def _box_muller16(d: np.ndarray, work, mean: float, std: float) -> np.ndarray:
    u1 = work(1) - d[:, :8]  # [0, 1) -> (0, 1] for the log
    u2 = d[:, 8:]
    radius = np.sqrt(work(-2) * np.log(u1))
    theta = work(2.0 * np.pi) * u2
    return np.concatenate([radius * np.cos(theta) * work(std) + work(mean),
                           radius * np.sin(theta) * work(std) + work(mean)], axis=1)


default_generator = Generator()
default_generator.seed()  # as torch, the process-wide generator starts from OS entropy


def manual_seed(seed) -> Generator:
    """Seed the default generator; returns it."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Seed the default generator from OS entropy; returns the seed."""
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    default_generator.set_state(new_state)


# --- random factories ------------------------------------------------------------------------
# (imported here, below the Generator, because ember._creation needs nothing from this module)

from ember import _dtype  # noqa: E402
from ember._creation import dtype_or, finish, legacy_name, parse_size, zeros_like  # noqa: E402
from ember._tensor import Tensor  # noqa: E402
from ember.autograd.function import Op  # noqa: E402


def _float_dtype(dtype, kernel: str) -> _dtype.dtype:
    dt = dtype_or(dtype)
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{legacy_name(dt)}'")
    return dt


def _gen(generator: Generator | None) -> Generator:
    if generator is None:
        return default_generator
    if not isinstance(generator, Generator):
        raise TypeError(f"expected a torch.Generator, but got {type(generator).__name__}")
    return generator


def _uniform(g: Generator, shape: tuple, dt: _dtype.dtype) -> np.ndarray:
    n = int(np.prod(shape))
    return g._uniform(n, dt is _dtype.float64).reshape(shape).astype(dt.np, copy=False)


def uniform_sample(shape: tuple, dt: _dtype.dtype, low: float = 0.0, high: float = 1.0,
                   generator: Generator | None = None) -> np.ndarray:
    """What torch's ``tensor.uniform_(low, high)`` writes, as an array of ``dt``.

    For in-place initialisers (``nn.init.uniform_``, ``Tensor.uniform_``): with the same
    seed they fill the same numbers as torch.
    """
    double = dt is _dtype.float64
    u = _gen(generator)._uniform(int(np.prod(shape)), double).reshape(shape)
    if double:
        return u * (high - low) + low
    # torch computes u * (to - from) + from as one fused multiply-add on float32 operands;
    # float64 holds the 48-bit product exactly, so one rounding at the end is the same.
    span = np.float32(high) - np.float32(low)
    return (u.astype(np.float64) * np.float64(span) + np.float64(np.float32(low))).astype(
        dt.np, copy=False)


def integer_sample(shape: tuple, low: int, high: int,
                   generator: Generator | None = None) -> np.ndarray:
    """What torch's ``tensor.random_(low, high)`` writes: int64 values in [low, high)."""
    return _gen(generator)._randint(int(low), int(high), int(np.prod(shape))).reshape(shape)


def double_uniform_sample(shape: tuple, generator: Generator | None = None) -> np.ndarray:
    """One ``uniform_real_distribution<double>(0, 1)`` draw per element: what torch's serial
    CPU samplers (exponential, geometric, cauchy) transform."""
    return _gen(generator)._uniform(int(np.prod(shape)), True).reshape(shape)


def scalar_normal_sample(shape: tuple, generator: Generator | None = None) -> np.ndarray:
    """One ``normal_distribution<double>`` draw per element (Box-Muller, second value cached),
    as torch's log_normal_ kernel draws."""
    return _gen(generator)._normals(int(np.prod(shape))).reshape(shape)


def bernoulli_sample(shape: tuple, p, generator: Generator | None = None) -> np.ndarray:
    """What torch's ``bernoulli_(p)`` draws, as a bool array: one uniform per element, in
    order, below ``p``. A number ``p`` (dropout's kernel) compares 53-bit doubles; a tensor's
    probabilities compare 24-bit floats unless they are float64."""
    n = int(np.prod(shape))
    p = np.asarray(p)
    u = _gen(generator)._uniform(n, p.ndim == 0 or p.dtype == np.float64)
    return u.reshape(shape) < p


def normal_sample(shape: tuple, dt: _dtype.dtype, mean: float = 0.0, std: float = 1.0,
                  generator: Generator | None = None) -> np.ndarray:
    """What torch's ``tensor.normal_(mean, std)`` writes, as an array of ``dt``."""
    return _standard_normal(_gen(generator), shape, dt, mean, std)


def _standard_normal(g: Generator, shape: tuple, dt: _dtype.dtype, mean: float = 0.0,
                     std: float = 1.0) -> np.ndarray:
    n = int(np.prod(shape))
    out = g._normal(n, dt is _dtype.float64, mean, std)
    return out.reshape(shape).astype(dt.np, copy=False)


def rand(*args, size=None, generator: Generator | None = None, dtype=None,
         layout=None, device=None, requires_grad: bool = False,
         pin_memory: bool = False) -> Tensor:
    """Uniform samples from [0, 1)."""
    shape = parse_size(args, "rand", size)
    dt = _float_dtype(dtype, "check_uniform_bounds")
    return finish(_uniform(_gen(generator), shape, dt), requires_grad, device)


def randn(*args, size=None, generator: Generator | None = None, dtype=None,
          layout=None, device=None, requires_grad: bool = False,
          pin_memory: bool = False) -> Tensor:
    """Standard normal samples."""
    shape = parse_size(args, "randn", size)
    dt = _float_dtype(dtype, "normal_kernel_cpu")
    return finish(_standard_normal(_gen(generator), shape, dt), requires_grad, device)


def _randint_array(g, low, high, shape: tuple, dt: _dtype.dtype) -> np.ndarray:
    low, high = int(low), int(high)
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} "
                           f">= to={high}")
    return g._randint(low, high, int(np.prod(shape))).reshape(shape).astype(dt.np)


def randint(*args, low=None, high=None, size=None, generator: Generator | None = None,
            dtype=None, layout=None, device=None, requires_grad: bool = False,
            pin_memory: bool = False) -> Tensor:
    """Integers from [low, high): ``randint(high, size)`` or ``randint(low, high, size)``."""
    if low is not None:
        args = (low, *args)
    if high is not None:
        args = (*args, high)
    if size is not None:
        args = (*args, size)
    if len(args) not in (2, 3):
        raise TypeError(f"randint() received an invalid combination of arguments - got "
                        f"({', '.join(type(a).__name__ for a in args)}), but expected one of:\n"
                        " * (int high, tuple of ints size, ...)\n"
                        " * (int low, int high, tuple of ints size, ...)")
    low, high, shape = (0, *args) if len(args) == 2 else args
    if not isinstance(shape, list | tuple):
        raise TypeError(f"randint(): argument 'size' (position {len(args)}) must be tuple of "
                        f"ints, not {type(shape).__name__}")
    shape = parse_size((shape,), "randint")
    dt = dtype_or(dtype, _dtype.int64)
    return finish(_randint_array(_gen(generator), _item(low), _item(high), shape, dt),
                  requires_grad, device)


def randperm(n: int, *, generator: Generator | None = None, dtype=None, layout=None,
             device=None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A random permutation of ``0 .. n-1``."""
    n = int(_item(n))
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    dt = dtype_or(dtype, _dtype.int64)
    return finish(_gen(generator)._randperm(n).astype(dt.np), requires_grad, device)


def _item(v):
    return v.item() if isinstance(v, Tensor | np.generic) else v


def _like(x, fname: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{fname}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    return x


def rand_like(input: Tensor, *, generator: Generator | None = None, dtype=None, layout=None,
              device=None, requires_grad: bool = False, memory_format=None) -> Tensor:
    x = _like(input, "rand_like")
    return rand(x.shape, generator=generator, dtype=dtype or x.dtype, device=device,
                requires_grad=requires_grad)


def randn_like(input: Tensor, *, generator: Generator | None = None, dtype=None, layout=None,
               device=None, requires_grad: bool = False, memory_format=None) -> Tensor:
    x = _like(input, "randn_like")
    return randn(x.shape, generator=generator, dtype=dtype or x.dtype, device=device,
                 requires_grad=requires_grad)


def randint_like(input: Tensor, low=0, high=None, *, generator: Generator | None = None,
                 dtype=None, layout=None, device=None, requires_grad: bool = False,
                 memory_format=None) -> Tensor:
    """``randint_like(x, high)`` or ``randint_like(x, low, high)``, shaped and typed like x."""
    x = _like(input, "randint_like")
    if high is None:
        low, high = 0, low
    dt = dtype_or(dtype, x.dtype)
    return finish(_randint_array(_gen(generator), _item(low), _item(high), x._data.shape, dt),
                  requires_grad, device)


# --- normal and bernoulli: samples are not differentiable in their parameters ---------------


class _Sampled(Op):
    """The output is a random sample; torch gives its parameters zero gradients."""

    broadcasts = True

    @staticmethod
    def forward(ctx, *params, sample=None):
        return sample

    @staticmethod
    def backward(ctx, g):
        return tuple(zeros_like(g) if need else None for need in ctx.needs_input_grad)


class _NormalTensorFloat(_Sampled):
    node_name = "NormalBackward1"


class _NormalFloatTensor(_Sampled):
    node_name = "NormalBackward2"


class _NormalTensorTensor(_Sampled):
    node_name = "NormalBackward3"


class _BernoulliTensor(_Sampled):
    node_name = "BernoulliBackward0"


class _BernoulliFloat(_Sampled):
    node_name = "BernoulliBackward1"


def _check_std(std) -> None:
    if isinstance(std, Tensor):
        if np.any(std._data < 0):
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")


def normal(mean, std=1.0, size=None, *, generator: Generator | None = None,
           dtype=None, layout=None, device=None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """Normal samples; torch's four forms:

    ``normal(mean_tensor, std_tensor)``, ``normal(mean_tensor, std=1.0)``,
    ``normal(mean_float, std_tensor)``, ``normal(mean_float, std_float, size)``.
    """
    mt, st = isinstance(mean, Tensor), isinstance(std, Tensor)
    g = _gen(generator)
    if not mt and not st:
        if size is None:
            raise TypeError(
                f"normal() received an invalid combination of arguments - got "
                f"({type(mean).__name__}, {type(std).__name__}), but expected one of:\n"
                " * (Tensor mean, Tensor std, *, torch.Generator generator = None)\n"
                " * (Tensor mean, float std = 1, *, torch.Generator generator = None)\n"
                " * (float mean, Tensor std, *, torch.Generator generator = None)\n"
                " * (float mean, float std, tuple of ints size, *, ...)")
        shape = parse_size((size,), "normal")
        _check_std(std)
        dt = _float_dtype(dtype, "normal_kernel_cpu")
        sample = _standard_normal(g, shape, dt, mean, std)
        return finish(sample, requires_grad, device)
    dt = mean.dtype if mt else std.dtype
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"normal_kernel_cpu\" not implemented for "
                                  f"'{legacy_name(dt)}'")
    if mt and st:
        from ember.ops._promote import check_broadcast

        check_broadcast(mean._data.shape, std._data.shape)
    _check_std(std)
    m = mean._data if mt else mean
    s = std._data.astype(dt.np, copy=False) if st else std
    shape = np.broadcast_shapes(np.shape(m), np.shape(s))
    # As torch: draw N(0, std) (or N(0, 1) when std is a tensor), then scale and shift.
    noise = _standard_normal(g, shape, dt, 0.0, 1.0 if st else std)
    sample = ((noise * s if st else noise) + m).astype(dt.np, copy=False)
    if mt and st:
        return _NormalTensorTensor.apply(mean, std, sample=sample)
    if mt:
        return _NormalTensorFloat.apply(mean, sample=sample)
    return _NormalFloatTensor.apply(std, sample=sample)


def bernoulli(input: Tensor, p: float | None = None, *,
              generator: Generator | None = None) -> Tensor:
    """0/1 samples: each element is 1 with probability ``input`` (or ``p`` when given)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"bernoulli(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    shape = input._data.shape
    if p is not None:
        _check_p(p)
        sample = bernoulli_sample(shape, float(p), generator).astype(input._data.dtype)
        return _BernoulliFloat.apply(input, sample=sample)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"bernoulli_tensor_cpu_p_\" not implemented for "
                                  f"'{legacy_name(input.dtype)}'")
    probs = input._data
    if np.any((probs < 0) | (probs > 1)):
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could "
                           "this error message be improved?  If so, please report an "
                           "enhancement request to PyTorch.)")
    sample = bernoulli_sample(shape, probs, generator).astype(probs.dtype)
    return _BernoulliTensor.apply(input, sample=sample)


def _check_p(p: float) -> None:
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p:g}")


METHODS = {"bernoulli": bernoulli}
FUNCTIONS = {
    "rand": rand, "randn": randn, "randint": randint, "randperm": randperm, "normal": normal,
    "bernoulli": bernoulli, "rand_like": rand_like, "randn_like": randn_like,
    "randint_like": randint_like,
}
