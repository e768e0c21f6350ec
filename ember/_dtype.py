"""dtypes with torch's names, and torch's type-promotion rules."""

from __future__ import annotations

import numpy as np

try:  # bfloat16 needs ml_dtypes; without it ember.bfloat16 is simply absent
    import ml_dtypes as _ml_dtypes
except ImportError:  # pragma: no cover - depends on the environment
    _ml_dtypes = None


class dtype:
    """A tensor element type, printed as torch prints it (``torch.float32``)."""

    __slots__ = ("name", "np", "is_floating_point", "is_signed", "itemsize", "_rank", "_kind")

    def __init__(self, name: str, np_dtype, kind: int, rank: int) -> None:
        self.name = name
        self.np = np.dtype(np_dtype)
        self._kind = kind  # 0 bool, 1 integer, 2 floating
        self._rank = rank  # order inside a kind, for promotion
        self.is_floating_point = kind == 2
        self.is_signed = name not in ("uint8", "bool")
        self.itemsize = self.np.itemsize

    @property
    def is_complex(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "ember." + self.name

    def __reduce__(self):
        return (_dtype_by_name, (self.name,))

    def to_real(self) -> dtype:
        return self


bool_ = dtype("bool", np.bool_, 0, 0)
uint8 = dtype("uint8", np.uint8, 1, 1)
int8 = dtype("int8", np.int8, 1, 1)
int16 = dtype("int16", np.int16, 1, 2)
int32 = dtype("int32", np.int32, 1, 3)
int64 = dtype("int64", np.int64, 1, 4)
float16 = dtype("float16", np.float16, 2, 1)
float32 = dtype("float32", np.float32, 2, 3)
float64 = dtype("float64", np.float64, 2, 4)
bfloat16 = dtype("bfloat16", _ml_dtypes.bfloat16, 2, 2) if _ml_dtypes else None

ALL = [d for d in (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64)
       if d]
_BY_NP = {d.np: d for d in ALL}
_BY_NAME = {d.name: d for d in ALL}


def _dtype_by_name(name: str) -> dtype:
    return _BY_NAME[name]


def from_numpy_dtype(np_dtype) -> dtype:
    """The ember dtype for a NumPy dtype; TypeError for types torch has no equivalent of."""
    d = _BY_NP.get(np.dtype(np_dtype))
    if d is None:
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{np.dtype(np_dtype)}. The only supported "
            "types are: float64, float32, float16, int64, int32, int16, int8, uint8, and bool."
        )
    return d


_default_float = float32


def get_default_dtype() -> dtype:
    return _default_float


def set_default_dtype(d: dtype) -> None:
    global _default_float
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _default_float = d


def promote_types(a: dtype, b: dtype) -> dtype:
    """torch.promote_types: the smallest dtype both can be cast to."""
    if a is b:
        return a
    if a._kind != b._kind:
        return a if a._kind > b._kind else b
    if a._kind == 1 and {a.name, b.name} == {"uint8", "int8"}:
        return int16
    if a._kind == 2 and {a.name, b.name} == {"float16", "bfloat16"}:
        return float32
    return a if a._rank >= b._rank else b


def scalar_kind(value) -> int:
    """Kind (0 bool, 1 int, 2 float) of a Python scalar operand."""
    if isinstance(value, bool | np.bool_):
        return 0
    if isinstance(value, int | np.integer):
        return 1
    if isinstance(value, float | np.floating):
        return 2
    raise TypeError(f"unsupported scalar type {type(value).__name__}")


def check_int(value) -> None:
    """torch's argument parser takes Python ints in [-2**63, 2**64), whatever the dtype."""
    if type(value) is int and not -0x8000000000000000 <= value <= 0xFFFFFFFFFFFFFFFF:
        raise OverflowError("int too big to convert" if value > 0 else
                            "can't convert negative int to unsigned")


def check_int64(value, dt: dtype) -> None:
    """A Python int in [2**63, 2**64) is an unsigned 64-bit scalar to torch: ops that take it as
    an integer tensor's value (fill, clamp, alpha, ...) refuse it rather than wrap it."""
    check_int(value)
    if type(value) is int and value > 0x7FFFFFFFFFFFFFFF and dt._kind == 1:
        raise RuntimeError("value cannot be converted to type int64_t without overflow")


def _kind_default(kind: int) -> dtype:
    return (bool_, int64, _default_float)[kind]


def result_type(tensors, scalars=()) -> dtype:
    """torch.result_type over tensors and Python scalars.

    Three tiers, as torch: tensors with dimensions decide; a 0-d tensor wins only if its kind
    (bool < int < float) is higher; a Python scalar wins only if its kind is higher still, and
    then gives that kind's default dtype (so float32 * 2.5 stays float32).
    """
    dim_t = zero_t = None
    for t in tensors:
        d = t.dtype
        if t._data.ndim:
            dim_t = d if dim_t is None else promote_types(dim_t, d)
        else:
            zero_t = d if zero_t is None else promote_types(zero_t, d)
    out = dim_t
    if zero_t is not None:
        if out is None or zero_t._kind > out._kind:
            out = zero_t
    if scalars:
        k = max(scalar_kind(s) for s in scalars)
        if out is None:
            out = _kind_default(k)
        elif k > out._kind:
            out = _kind_default(k)
    return out


def to_dtype(obj, fname: str | None = None) -> dtype:
    """A ``dtype=`` argument: an ember dtype, or the Python type float, int or bool (torch's
    parser takes these and nothing else: not a string, not a NumPy dtype). ``fname`` names
    the function in the error."""
    if isinstance(obj, dtype):
        return obj
    if obj is float:  # torch maps the Python type float to float64, whatever the default
        return float64
    if obj is int:
        return int64
    if obj is bool:
        return bool_
    kind = type(obj)
    name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"
    raise TypeError(f"{fname + '(): ' if fname else ''}argument 'dtype' must be torch.dtype, not "
                    f"{name}")


_ALIASES = {
    "float": float32, "double": float64, "half": float16, "long": int64, "int": int32,
    "short": int16, "bool": bool_,
}
if bfloat16 is not None:
    _ALIASES["bfloat16"] = bfloat16

# Legacy tensor-type names, as `.type()` prints them.
TYPE_NAMES = {
    float32: "ember.FloatTensor", float64: "ember.DoubleTensor", float16: "ember.HalfTensor",
    int64: "ember.LongTensor", int32: "ember.IntTensor", int16: "ember.ShortTensor",
    int8: "ember.CharTensor", uint8: "ember.ByteTensor", bool_: "ember.BoolTensor",
}
if bfloat16 is not None:
    TYPE_NAMES[bfloat16] = "ember.BFloat16Tensor"
TYPE_BY_NAME = {v: k for k, v in TYPE_NAMES.items()}


class finfo:
    """torch.finfo: machine limits of a floating dtype (the default dtype when none is given)."""

    def __init__(self, type: dtype | None = None) -> None:
        d = to_dtype(type) if type is not None else _default_float
        if not d.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. Use "
                            "torch.iinfo to handle 'torch.finfo'")
        info = _ml_dtypes.finfo(d.np) if d is bfloat16 else np.finfo(d.np)
        self.dtype = d.name
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -int(info.precision)

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
                f"tiny={self.tiny:g}, dtype={self.dtype})")

    __str__ = __repr__


class iinfo:
    """torch.iinfo: the range of an integer dtype."""

    def __init__(self, type: dtype) -> None:
        d = to_dtype(type)
        if d is bool_:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if d.is_floating_point:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to "
                            "handle 'torch.iinfo'")
        info = np.iinfo(d.np)
        self.dtype = d.name
        self.bits = int(info.bits)
        self.max = int(info.max)
        self.min = int(info.min)

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"

    __str__ = __repr__
