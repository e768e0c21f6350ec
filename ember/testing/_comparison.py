"""torch.testing's ``assert_close`` and ``make_tensor``, with torch's rules and messages.

``assert_close`` first walks matching (nested) sequences and mappings and pairs up their leaves
(None, bools, numbers, tensor-likes), then compares the pairs in order; the first failure
raises torch's exception type and text. Problems found while pairing (structure, unsupported
types, half-given tolerances) raise before any value is compared and ignore ``msg``, as in
torch.
"""

from __future__ import annotations

import cmath
import collections.abc
import contextlib
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from ember import _dtype
from ember._creation import as_tensor, finish, parse_size
from ember._random import integer_sample, uniform_sample
from ember._tensor import Tensor

# Default (rtol, atol) per dtype; dtypes not listed (integers, bool) compare exactly.
_TOLERANCES = {
    _dtype.float16: (0.001, 1e-5),
    _dtype.float32: (1.3e-6, 1e-5),
    _dtype.float64: (1e-7, 1e-7),
    _dtype.bfloat16: (0.016, 1e-5),
}
# Python numbers compare as torch's int64, float64 and complex128.
_NUMBER_TOLERANCES = {int: (0.0, 0.0), float: (1e-7, 1e-7), complex: (1e-7, 1e-7)}

Msg = str | Callable[[str], str] | None


class _Failure(Exception):
    """A failed check: the exception type to raise, its text, and the path to the item."""

    def __init__(self, kind: type[Exception], text: str, path: tuple = ()) -> None:
        super().__init__(text)
        self.kind, self.text, self.path = kind, text, path

    def error(self, msg: Msg = None) -> Exception:
        """The user-facing exception: ``msg`` replaces the text, or edits it if callable."""
        if isinstance(msg, str):
            return self.kind(msg)
        text = self.text
        if self.path:
            text += "\n\nThe failure occurred for item " + "".join(str([k]) for k in self.path)
        return self.kind(msg(text) if callable(msg) else text)


@dataclass(frozen=True)
class _Options:
    allow_subclasses: bool
    rtol: float | None
    atol: float | None
    equal_nan: bool
    check_dtype: bool
    check_stride: bool


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True,
                 rtol: float | None = None, atol: float | None = None, equal_nan: bool = False,
                 check_device: bool = True, check_dtype: bool = True, check_layout: bool = True,
                 check_stride: bool = False, msg: Msg = None) -> None:
    """Raise unless ``actual`` and ``expected`` are close: ``|a - e| <= atol + rtol * |e|``.

    Takes tensors, NumPy arrays, Python numbers and bools, None, and (nested) sequences and
    mappings of them. Default tolerances follow the dtype (float16 1e-3/1e-5, bfloat16
    1.6e-2/1e-5, float32 1.3e-6/1e-5, float64 1e-7/1e-7, integers and bool exact); give
    ``rtol`` and ``atol`` together or not at all. ``check_device`` and ``check_layout`` are
    accepted for torch's signature: every ember tensor is a strided CPU tensor.

    >>> ember.testing.assert_close(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 2.5]))
    Traceback (most recent call last):
    AssertionError: Tensor-likes are not close!
    <BLANKLINE>
    Mismatched elements: 1 / 2 (50.0%)
    Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)
    Greatest relative difference: 0.20000000298023224 at index (1,) (up to 1.3e-06 allowed)
    """
    __tracebackhide__ = True  # keep pytest's traceback on the caller's line
    opts = _Options(allow_subclasses, rtol, atol, equal_nan, check_dtype, check_stride)
    checks: list[Callable[[], None]] = []
    try:
        _pair_up(actual, expected, (), opts, checks)
    except _Failure as failure:
        raise failure.error() from None
    try:
        for check in checks:
            check()
    except _Failure as failure:
        raise failure.error(msg) from None


# --- pairing -------------------------------------------------------------------------------


def _is_sequence(x: Any) -> bool:
    return isinstance(x, collections.abc.Sequence) and not isinstance(x, str)


def _pair_up(actual: Any, expected: Any, path: tuple, opts: _Options,
             checks: list[Callable[[], None]]) -> None:
    """Recurse through matching sequences and mappings, adding one check per pair of leaves."""
    if _is_sequence(actual) and _is_sequence(expected):
        if len(actual) != len(expected):
            raise _Failure(AssertionError, f"The length of the sequences mismatch: "
                           f"{len(actual)} != {len(expected)}", path)
        for i in range(len(actual)):
            _pair_up(actual[i], expected[i], (*path, i), opts, checks)
    elif isinstance(actual, collections.abc.Mapping) and isinstance(
            expected, collections.abc.Mapping):
        keys, other = set(actual.keys()), set(expected.keys())
        if keys != other:
            raise _Failure(AssertionError, "The keys of the mappings do not match:\n"
                           f"Missing keys in the actual mapping: {sorted(other - keys)}\n"
                           f"Additional keys in the actual mapping: {sorted(keys - other)}", path)
        with contextlib.suppress(TypeError):  # unorderable keys keep the set's order
            keys = sorted(keys)
        for key in keys:
            _pair_up(actual[key], expected[key], (*path, key), opts, checks)
    else:
        checks.append(_leaf_check(actual, expected, path, opts))


def _leaf_check(actual: Any, expected: Any, path: tuple, opts: _Options) -> Callable[[], None]:
    """The check for one pair of leaves, chosen in torch's order: None, bools, numbers,
    tensor-likes."""
    if actual is None or expected is None:
        return partial(_compare_none, actual, expected, path)
    if isinstance(actual, bool | np.bool_) and isinstance(expected, bool | np.bool_):
        return partial(_compare_bools, bool(actual), bool(expected), path)
    if _is_number(actual) and _is_number(expected):
        a, e = (x.item() if isinstance(x, np.number) else x for x in (actual, expected))
        if type(a) not in _NUMBER_TOLERANCES or type(e) not in _NUMBER_TOLERANCES:
            raise _number_type_error(actual, expected, path)
        rtol, atol = _tolerances([_NUMBER_TOLERANCES[type(x)] for x in (a, e)], opts, path)
        return partial(_compare_numbers, a, e, rtol, atol, opts, path)
    tensors = _as_tensors(actual, expected, opts.allow_subclasses)
    if tensors is None:
        raise _Failure(TypeError, f"No comparison pair was able to handle inputs of type "
                       f"{_type_str(actual)} and {_type_str(expected)}.", path)
    defaults = [_TOLERANCES.get(t.dtype, (0.0, 0.0)) for t in tensors]
    rtol, atol = _tolerances(defaults, opts, path)
    return partial(_compare_tensors, *tensors, rtol, atol, opts, path)


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float | complex | np.number)


def _number_type_error(actual: Any, expected: Any, path: tuple) -> RuntimeError:
    """torch's error for a Python bool (or a number subclass) against a number: its number
    pair has no dtype for the type and fails while being built."""
    item = "".join(str([k]) for k in path)
    return RuntimeError(
        f"Originating a NumberPair() at item {item} with\n\n"
        f"{type(actual).__name__}(): {actual}\n\nand\n\n"
        f"{type(expected).__name__}(): {expected}\n\n"
        "resulted in the unexpected exception above. If you are a user and see this message "
        "during normal operation please file an issue at "
        "https://github.com/pytorch/pytorch/issues. If you are a developer and working on the "
        "comparison functions, please except the previous error and raise an expressive "
        "`ErrorMeta` instead.")


def _type_str(x: Any) -> str:
    return "<class 'ember.Tensor'>" if type(x) is Tensor else str(type(x))


def _tolerances(defaults: Sequence[tuple[float, float]], opts: _Options,
                path: tuple) -> tuple[float, float]:
    """The given (rtol, atol), or the loosest defaults of the inputs' dtypes."""
    if (opts.rtol is None) != (opts.atol is None):
        missing = "rtol" if opts.rtol is None else "atol"
        raise _Failure(ValueError, "Both 'rtol' and 'atol' must be either specified or omitted, "
                       f"but got no {missing}.", path)
    if opts.rtol is not None:
        return opts.rtol, opts.atol
    return max(r for r, _ in defaults), max(a for _, a in defaults)


def _as_tensors(actual: Any, expected: Any, allow_subclasses: bool) -> tuple | None:
    """Both inputs as tensors, or None where torch has no tensor comparison for them: types
    not directly related, or data ``as_tensor`` cannot take."""
    if not (isinstance(actual, type(expected)) or isinstance(expected, type(actual))):
        return None
    if not allow_subclasses and type(actual) is not type(expected):
        return None
    try:
        return tuple(x if isinstance(x, Tensor) else as_tensor(x) for x in (actual, expected))
    except Exception:  # as torch: whatever as_tensor refuses is "not a tensor-like"
        return None


# --- comparing -----------------------------------------------------------------------------


def _compare_none(actual: Any, expected: Any, path: tuple) -> None:
    if not (actual is None and expected is None):
        raise _Failure(AssertionError, f"None mismatch: {actual} is not {expected}", path)


def _compare_bools(actual: bool, expected: bool, path: tuple) -> None:
    if actual is not expected:
        raise _Failure(AssertionError, f"Booleans mismatch: {actual} is not {expected}", path)


def _compare_numbers(actual, expected, rtol: float, atol: float, opts: _Options,
                     path: tuple) -> None:
    if opts.check_dtype and type(actual) is not type(expected):
        raise _Failure(AssertionError, f"The (d)types do not match: {type(actual)} != "
                       f"{type(expected)}.", path)
    if actual == expected or (opts.equal_nan and cmath.isnan(actual) and cmath.isnan(expected)):
        return
    diff = abs(actual - expected)
    if cmath.isfinite(diff) and diff <= atol + rtol * abs(expected):
        return
    raise _Failure(AssertionError, _scalar_text(actual, expected, rtol, atol), path)


def _compare_tensors(actual: Tensor, expected: Tensor, rtol: float, atol: float,
                     opts: _Options, path: tuple) -> None:
    """Attributes first (shape, then stride and dtype if asked), then values, in the inputs'
    promoted dtype."""
    for name, a, e, wanted in (("shape", actual.shape, expected.shape, True),
                               ("stride()", actual.stride(), expected.stride(), opts.check_stride),
                               ("dtype", actual.dtype, expected.dtype, opts.check_dtype)):
        if wanted and a != e:
            raise _Failure(AssertionError, f"The values for attribute '{name}' do not match: "
                           f"{a} != {e}.", path)
    dt = _dtype.promote_types(actual.dtype, expected.dtype)
    a = actual._data.astype(dt.np, copy=False)
    e = expected._data.astype(dt.np, copy=False)
    close = Tensor._make(a).isclose(Tensor._make(e), rtol=rtol, atol=atol,
                                    equal_nan=opts.equal_nan)._data
    if close.all():
        return
    if a.ndim == 0:
        text = _scalar_text(a.item(), e.item(), rtol, atol)
    else:
        text = _tensor_text(a, e, close, dt, rtol, atol)
    raise _Failure(AssertionError, text, path)


# --- messages ------------------------------------------------------------------------------


def _scalar_text(actual, expected, rtol: float, atol: float) -> str:
    diff = abs(actual - expected)
    rel = float("inf") if expected == 0 else diff / abs(expected)
    return _mismatch_text("Scalars", f"Expected {expected} but got {actual}.",
                          (diff, None), (rel, None), rtol, atol)


def _tensor_text(a: np.ndarray, e: np.ndarray, close: np.ndarray, dt: _dtype.dtype,
                 rtol: float, atol: float) -> str:
    """Mismatch count and the greatest differences among mismatched elements; integers and
    bools subtract in int64 and divide in the default float dtype, as torch."""
    n = close.size
    bad = n - int(close.sum())
    extra = f"Mismatched elements: {bad} / {n} ({bad / n:.1%})"
    shape, close = a.shape, close.ravel()
    a, e = a.ravel(), e.ravel()
    if not dt.is_floating_point:
        a, e = a.astype(np.int64), e.astype(np.int64)
    div = dt.np if dt.is_floating_point else _dtype.get_default_dtype().np
    with np.errstate(all="ignore"):
        abs_diff = np.abs(a - e)
        abs_diff[close] = 0
        rel_diff = abs_diff.astype(div, copy=False) / np.abs(e).astype(div, copy=False)
    rel_diff[close] = 0
    greatest = []
    for diff in (abs_diff, rel_diff):
        i = int(np.argmax(diff))  # the first NaN, else the first maximum, as torch.max
        greatest.append((diff[i].item(), tuple(int(k) for k in np.unravel_index(i, shape))))
    return _mismatch_text("Tensor-likes", extra, *greatest, rtol, atol)


def _mismatch_text(what: str, extra: str, abs_diff: tuple, rel_diff: tuple, rtol: float,
                   atol: float) -> str:
    """torch's report; each diff is (value, index or None). Zero tolerances say 'equal'."""
    exact = rtol == 0 and atol == 0
    lines = [f"{what} are not {'equal' if exact else 'close'}!", "", extra]
    for kind, (diff, index), tol in (("absolute", abs_diff, atol), ("relative", rel_diff, rtol)):
        if index is None:
            line = f"{kind.title()} difference: {diff}"
        else:
            line = f"Greatest {kind} difference: {diff} at index {index}"
        lines.append(line if exact else f"{line} (up to {tol} allowed)")
    return "\n".join(lines)


# --- make_tensor ---------------------------------------------------------------------------


def make_tensor(*shape: int | Sequence[int], dtype: _dtype.dtype, device, low: float | None = None,
                high: float | None = None, requires_grad: bool = False,
                noncontiguous: bool = False, exclude_zero: bool = False,
                memory_format=None) -> Tensor:
    """A tensor of ``shape`` with values drawn uniformly from ``[low, high)`` by ember's
    default generator.

    Defaults: bool ``[0, 2)``, unsigned ``[0, 10)``, signed integers ``[-9, 10)``, floats
    ``[-9, 9)``; bounds beyond the dtype's finite range are clamped to it. ``noncontiguous``
    gives a strided view (tensors of two or more elements); ``exclude_zero`` replaces zeros
    with 1 (integers, bool) or ``finfo(dtype).tiny``.
    """
    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError("The parameters `noncontiguous` and `memory_format` are mutually "
                         f"exclusive, but got {noncontiguous=} and {memory_format=}")
    known = isinstance(dtype, _dtype.dtype)
    if requires_grad and known and not dtype.is_floating_point:
        raise ValueError("`requires_grad=True` is not supported for boolean and integral "
                         f"dtypes, but got {dtype=}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:  # draw twice the last dimension and keep every other column
        shape = (*shape[:-1], 2 * shape[-1])
    if not known:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by "
                        "ember.testing.make_tensor(). To request support, file an issue at: "
                        "https://github.com/pytorch/pytorch/issues")
    if dtype.is_floating_point:
        info = _dtype.finfo(dtype)
        low, high = _check_range(low, high, dtype, info.min, info.max, -9, 9)
        size = parse_size((shape,), "empty")
        if high - low >= info.max:  # the span overflows the dtype: draw half of it, then double
            arr = uniform_sample(size, dtype, low / 2, high / 2)
            arr *= 2
        else:
            arr = uniform_sample(size, dtype, low, high)
    else:
        if dtype is _dtype.bool_:
            bounds = (0, 2, 0, 2)
        else:  # randint cannot reach int64's maximum
            info = _dtype.iinfo(dtype)
            bounds = (info.min, info.max + (0 if dtype is _dtype.int64 else 1), -9, 10)
        low, high = _check_range(low, high, dtype, *bounds)
        arr = integer_sample(parse_size((shape,), "randint"), low, high).astype(dtype.np)
    result = finish(arr, device=device)
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        data = result._data
        data[data == 0] = _dtype.finfo(dtype).tiny if dtype.is_floating_point else 1
    if requires_grad:
        result.requires_grad_()
    return result


def _check_range(low, high, dtype: _dtype.dtype, lowest, highest, default_low,
                 default_high) -> tuple:
    """torch's checks on ``[low, high)``; the bounds clamped to ``[lowest, highest]`` (and
    rounded up for integer dtypes)."""
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got {low=} and {high=}")
    if low == high and dtype.is_floating_point:
        warnings.warn("Passing `low==high` to `ember.testing.make_tensor` for floating or "
                      "complex types is deprecated since 2.1 and will be removed in 2.3. Use "
                      "`ember.full(...)` instead.", FutureWarning, stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), "
                         f"but {dtype} only supports [{lowest}, {highest})")
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    if dtype.is_floating_point:
        return low, high
    return math.ceil(low), math.ceil(high)
