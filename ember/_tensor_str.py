"""Printing tensors exactly as torch prints them.

The algorithm is torch's (``torch/_tensor_str.py``): one formatter per tensor picks a common
style and width for every element — integer-looking floats print as ``1.``, widely spread or
very large/small magnitudes switch to scientific notation — and tensors with more than
``threshold`` elements show only ``edgeitems`` rows/columns at each edge, with ``...`` between.
Here the element statistics are computed with NumPy on the (summarised) array instead of by
iterating over 0-d tensors, which gives the same strings far faster.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math

import numpy as np

from ember import _dtype
from ember._backend import to_numpy


@dataclasses.dataclass
class _PrinterOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = _PrinterOptions()

_PROFILES = {
    "default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
    "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
    "full": dict(precision=4, threshold=math.inf, edgeitems=3, linewidth=80),
}


def set_printoptions(precision: int | None = None, threshold: float | None = None,
                     edgeitems: int | None = None, linewidth: int | None = None,
                     profile: str | None = None, sci_mode: bool | None = None) -> None:
    """Set how tensors print (torch.set_printoptions).

    >>> ember.set_printoptions(precision=2)
    >>> ember.tensor([1.12345])
    tensor([1.12])
    """
    if profile is not None and profile in _PROFILES:
        for key, value in _PROFILES[profile].items():
            setattr(PRINT_OPTS, key, value)
    for key, value in (("precision", precision), ("threshold", threshold),
                       ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            setattr(PRINT_OPTS, key, value)
    # As in torch, sci_mode is reset to automatic unless given on every call.
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict:
    """The current print options, as keyword arguments for ``set_printoptions``."""
    return dataclasses.asdict(PRINT_OPTS)


@contextlib.contextmanager
def printoptions(**kwargs):
    """Temporarily change the print options."""
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


def _fixed(value: float) -> str:
    return f"{value:.{PRINT_OPTS.precision}f}"


def _sci(value: float) -> str:
    return f"{value:.{PRINT_OPTS.precision}e}"


class _Formatter:
    """Chooses one style (int / fixed / scientific) and one width for all elements."""

    def __init__(self, values: np.ndarray, floating: bool) -> None:
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)
        if not floating:
            if flat.size:
                # The longest text is that of the smallest or the largest value (True/False too).
                self.max_width = max(len(str(v)) for v in (flat.min().item(), flat.max().item()))
            return
        vals = flat[np.isfinite(flat) & (flat != 0)]
        if vals.size == 0:
            return
        mags = np.abs(vals)
        lo, hi = float(mags.min()), float(mags.max())
        self.int_mode = bool(np.all(vals == np.ceil(vals)))
        if PRINT_OPTS.sci_mode is None:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        else:
            self.sci_mode = PRINT_OPTS.sci_mode
        # Text length grows with magnitude (digits or exponent digits) and with a minus sign,
        # so the widest element is one of the extreme magnitudes of either sign.
        pos, neg = vals[vals > 0], vals[vals < 0]
        extremes = [float(x) for part in (pos, neg) if part.size
                    for x in (part.min(), part.max())]
        if self.sci_mode:
            self.max_width = max(len(_sci(v)) for v in extremes)
        elif self.int_mode:
            self.max_width = max(len(f"{v:.0f}") + 1 for v in extremes)
        else:
            self.max_width = max(len(_fixed(v)) for v in extremes)

    def width(self) -> int:
        return self.max_width

    def format(self, value) -> str:
        if self.floating:
            if self.sci_mode:
                text = f"{value:{self.max_width}.{PRINT_OPTS.precision}e}"
            elif self.int_mode:
                text = f"{value:.0f}"
                if math.isfinite(value):
                    text += "."
            else:
                text = _fixed(value)
        else:
            text = f"{value}"
        return (self.max_width - len(text)) * " " + text


def _vector_str(a: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / (fmt.width() + 2)))
    edge = PRINT_OPTS.edgeitems
    if summarize and not edge:
        data = ["..."]
    elif summarize and a.shape[0] > 2 * edge:
        data = ([fmt.format(v) for v in a[:edge].tolist()] + [" ..."]
                + [fmt.format(v) for v in a[-edge:].tolist()])
    else:
        data = [fmt.format(v) for v in a.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_str(a: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    if a.ndim == 0:
        return fmt.format(a.item())
    if a.ndim == 1:
        return _vector_str(a, indent, summarize, fmt)
    edge = PRINT_OPTS.edgeitems
    n = a.shape[0]
    if summarize and n > 2 * edge:
        slices = ([_nested_str(a[i], indent + 1, summarize, fmt) for i in range(edge)] + ["..."]
                  + [_nested_str(a[i], indent + 1, summarize, fmt) for i in range(n - edge, n)])
    else:
        slices = [_nested_str(a[i], indent + 1, summarize, fmt) for i in range(n)]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _summarized(a: np.ndarray) -> np.ndarray:
    """The elements that will be shown: the edges of every over-long dimension."""
    edge = PRINT_OPTS.edgeitems
    if a.ndim >= 2 and not edge:
        return a[(slice(0, 0),) * a.ndim]
    for axis, n in enumerate(a.shape):
        if n > 2 * edge:
            # With edge == 0 this keeps the whole 1-d tensor, as torch's a[-0:] does.
            keep = list(range(edge)) + list(range(n - edge, n))
            a = a.take(keep, axis=axis)
    return a


def _printable(t) -> tuple[np.ndarray, bool]:
    """The tensor's values as an array NumPy can format (low-precision floats as float64)."""
    arr = to_numpy(t._data)
    floating = t.dtype.is_floating_point
    if floating and arr.dtype != np.float64 and arr.dtype != np.float32:
        arr = arr.astype(np.float64)
    return arr, floating


def tensor_str(t, indent: int) -> str:
    """The bracketed contents of ``t``, laid out as torch does for a given indent."""
    arr, floating = _printable(t)
    if arr.size == 0:
        return "[]"
    summarize = arr.size > PRINT_OPTS.threshold
    values = _summarized(arr) if summarize else arr
    fmt = _Formatter(values.astype(np.float64) if floating else values, floating)
    return _nested_str(arr, indent, summarize, fmt)


def _add_suffixes(text: str, suffixes: list, indent: int) -> str:
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def _is_parameter(cls) -> bool:
    return any(c.__name__ == "Parameter" and c.__module__.startswith("ember.nn")
               for c in cls.__mro__)


def tangent_repr(t) -> str:
    return tensor_repr(t)


def tensor_repr(t, tensor_contents: str | None = None) -> str:
    """``repr(tensor)``: ``tensor([1., 2.], requires_grad=True)``.

    ``nn.Parameter`` prints with the plain ``tensor(`` prefix (its own repr adds
    ``Parameter containing:``); other Tensor subclasses print their class name, as in torch.
    """
    from ember._backend import get_default_device
    from ember._tensor import Tensor

    cls = type(t)
    plain = cls is Tensor or (_is_parameter(cls) and cls.__name__ == "Parameter")
    prefix = "tensor(" if plain else f"{cls.__name__}("
    indent = len(prefix)
    suffixes = []
    if t.device.type != get_default_device().type:
        suffixes.append(f"device='{t.device}'")
    dt = t.dtype
    if t._data.size == 0:
        if t._data.ndim != 1:
            suffixes.append(f"size={tuple(t._data.shape)}")
        if dt is not _dtype.get_default_dtype():
            suffixes.append(f"dtype={dt}")
        body = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append(f"size={tuple(t._data.shape)}")
        if dt not in (_dtype.get_default_dtype(), _dtype.int64, _dtype.bool_):
            suffixes.append(f"dtype={dt}")
        body = tensor_str(t, indent)
    if tensor_contents is not None:
        body = tensor_contents
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{type(t.grad_fn).__name__}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    tangent = getattr(t._aux, "tangent", None) if t._aux is not None else None
    if tangent is not None:
        suffixes.append(f"tangent={tangent_repr(tangent)}")
    text = _add_suffixes(prefix + body, suffixes, indent)
    if _is_parameter(cls) and not plain:
        text = f"Parameter({text})"
    return text
