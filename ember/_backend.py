"""Devices, and the array module behind each.

ember computes with NumPy on the CPU and, where CuPy finds a GPU, with CuPy on ``cuda:0``: a
tensor's device is the type of its array (``numpy.ndarray`` or ``cupy.ndarray``), so nothing
else records it. Most of ember's array code runs on either unchanged, because CuPy arrays
take part in NumPy's ``__array_ufunc__`` / ``__array_function__`` protocols. Op code creates
arrays with ``np.zeros`` / ``np.empty`` / ``np.arange(..., like=ref)``, or ``xp_of(ref).ones`` /
``.full`` (NumPy hands those two a ``device=`` keyword that CuPy refuses), and reaches the few
NumPy-only calls (strided views, ``ufunc.at``) through the helpers below.

Device objects exist for every device type torch knows, so programs that name them parse; a
device ember cannot compute on raises torch's error for a machine without it.
"""

from __future__ import annotations

import contextlib

import numpy as np

_DEVICE_TYPES = (
    "cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga",
    "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone",
)


def _bad_args(got) -> TypeError:
    return TypeError(
        f"device() received an invalid combination of arguments - got "
        f"({type(got).__name__}), but expected one of:\n * (torch.device device)\n"
        " * (str type, int index = -1)\n"
    )


class device:
    """torch.device: ``device('cpu')``, ``device('cuda', 0)``, ``device('cuda:0')``.

    >>> ember.device('cuda:1')
    device(type='cuda', index=1)
    """

    __slots__ = ("type", "index")

    def __init__(self, type: str | device | int, index: int | None = None) -> None:
        if isinstance(type, device):
            self.type, self.index = type.type, type.index
            return
        if isinstance(type, int) and not isinstance(type, bool):
            # A bare index means "accelerator number N": CUDA where CuPy sees a GPU.
            if cupy_module() is None:
                raise RuntimeError("Cannot access accelerator device when none is available.")
            type, index = "cuda", type
        if not isinstance(type, str):
            raise _bad_args(type)
        name, sep, idx = type.partition(":")
        if name not in _DEVICE_TYPES:
            raise RuntimeError(
                f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start of device "
                f"string: {type}"
            )
        if sep:
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}'")
            if index is not None:
                raise RuntimeError("type (string) must not include an index because index was "
                                   f"passed explicitly: {type}")
            index = int(idx)
        if index is not None and index < 0:
            raise RuntimeError("Device index must not be negative")
        self.type = name
        self.index = index

    def __repr__(self) -> str:
        idx = "" if self.index is None else f", index={self.index}"
        return f"device(type='{self.type}'{idx})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other) -> bool:
        # As in torch, a device never equals a string: device('cpu') == 'cpu' is False.
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (str(self),))


CPU = device("cpu")
_default_device = CPU


def get_default_device() -> device:
    """The device factories use when none is given (always the CPU unless changed)."""
    return _default_device


def set_default_device(dev) -> None:
    """Set the default device; only the CPU is available in ember."""
    global _default_device
    _default_device = CPU if dev is None else check_device(dev)


class _Cuda:
    """CuPy and the GPU, looked up once, on first use (importing CuPy costs a second)."""

    checked = False
    cupy = None
    active = False  # set when the first array reaches the GPU; Op.apply checks devices then


def cupy_module():
    """The ``cupy`` module when it is installed and sees a GPU, else None."""
    if not _Cuda.checked:
        _Cuda.checked = True
        try:
            import cupy  # noqa: PLC0415 - optional dependency

            if cupy.cuda.runtime.getDeviceCount() > 0:
                _Cuda.cupy = cupy
        except Exception:  # noqa: BLE001 - no CuPy, or any CUDA runtime failure: no GPU
            _Cuda.cupy = None
    return _Cuda.cupy


def no_cuda_error() -> AssertionError:
    return AssertionError("Torch not compiled with CUDA enabled")


CUDA0 = device("cuda", 0)


def check_device(dev) -> device:
    """Normalise a device argument to the device ember computes on (``cpu`` or ``cuda:0``);
    refuse devices ember cannot compute on with torch's errors."""
    d = dev if isinstance(dev, device) else device(dev)
    if d.type == "cpu":
        return CPU
    if d.type == "cuda":
        cp = cupy_module()
        if cp is None:
            raise no_cuda_error()
        if d.index not in (None, 0):
            if d.index >= cp.cuda.runtime.getDeviceCount():
                raise RuntimeError("CUDA error: invalid device ordinal")
            raise NotImplementedError("ember computes on cuda:0 only")
        return CUDA0
    raise RuntimeError(f"PyTorch is not linked with support for {d.type} devices")


def device_of(arr) -> device:
    """The device an array lives on."""
    return CPU if xp_of(arr) is np else CUDA0


def on_device_of(ref, arr):
    """``arr`` (a NumPy array: an index table, say) on the device of array ``ref``."""
    return arr if xp_of(ref) is np else _Cuda.cupy.asarray(arr)


def xp_of(arr):
    """The array module (numpy or cupy) for an array (numpy for scalars too)."""
    if type(arr) is np.ndarray or _Cuda.cupy is None or type(arr) is not _Cuda.cupy.ndarray:
        return np
    return _Cuda.cupy


def as_strided(arr, shape: tuple, strides: tuple, writeable: bool = False):
    """A strided view of ``arr`` (strides in bytes) on its own device; read-only unless
    ``writeable`` (and ``arr`` is) on the CPU, where NumPy tracks it."""
    if type(arr) is np.ndarray:
        return strided_view(arr, shape, strides, writeable)
    if isinstance(arr, np.ndarray):  # an ember.compile Traced array: record the view
        from ember.compiler.traced import record_function

        return record_function(strided_view, arr, shape, strides, writeable)
    return _Cuda.cupy.lib.stride_tricks.as_strided(arr, shape, strides)


def strided_view(arr: np.ndarray, shape: tuple, strides: tuple,
                 writeable: bool = False) -> np.ndarray:
    """``np.lib.stride_tricks.as_strided`` (writeable only if ``writeable`` and ``arr`` is).
    For a contiguous array, a view made straight from its buffer: ten times cheaper (0.2 us
    against 2.2; a backward's every ``expand`` makes one), and NumPy checks the bounds."""
    if arr.size and (arr.flags.c_contiguous or arr.flags.f_contiguous):
        try:
            view = np.ndarray(shape, arr.dtype, arr, 0, strides)
        except (TypeError, ValueError):  # a dtype with no buffer format, or out of bounds
            view = None
        if view is not None:
            if not writeable and view.flags.writeable:
                view.flags.writeable = False
            return view
    return np.lib.stride_tricks.as_strided(arr, shape, strides,
                                           writeable=writeable and arr.flags.writeable)


def ufunc_method(ufunc, method: str, arr, *args, **kwargs):
    """``ufunc.<method>(arr, ...)`` (at, accumulate, ...) with the ufunc of ``arr``'s library:
    CuPy's arrays take part in NumPy's ufunc protocol only for plain calls."""
    if xp_of(arr) is np:
        return getattr(ufunc, method)(arr, *args, **kwargs)
    fn = getattr(getattr(_Cuda.cupy, ufunc.__name__, None), method, None)
    if fn is None:
        raise TypeError(f"returned NotImplemented from __array_ufunc__: {ufunc.__name__}."
                        f"{method}")  # gpu_gaps turns this into a clear error
    try:
        return fn(arr, *args, **kwargs)
    except NotImplementedError as e:  # CuPy has the method but not for this ufunc
        raise TypeError(f"returned NotImplemented from __array_ufunc__: {e}") from e


def accumulate(ufunc, arr, axis: int):
    """``ufunc.accumulate(arr, axis=axis)``. CuPy has no accumulate for most ufuncs, so on the
    GPU it is an inclusive scan in log2(n) passes (each combines every element with the one
    ``step`` before it): the same result for max/min, the same up to rounding for logaddexp."""
    if xp_of(arr) is np:
        return ufunc.accumulate(arr, axis=axis)
    out, n, step = arr.copy(), arr.shape[axis], 1
    head, tail = [slice(None)] * arr.ndim, [slice(None)] * arr.ndim
    while step < n:
        head[axis], tail[axis] = slice(None, n - step), slice(step, None)
        out[tuple(tail)] = ufunc(out[tuple(tail)], out[tuple(head)])  # right side read first
        step *= 2
    return out


def add_at(target, index, values) -> None:
    """``target[index] += values`` with repeated indices adding up (``np.add.at``)."""
    ufunc_method(np.add, "at", target, index, values)


def is_array(data) -> bool:
    """Whether ``data`` is an array ember can hold on some device (ember.compile's Traced
    arrays are NumPy arrays too)."""
    return isinstance(data, np.ndarray) or (_Cuda.cupy is not None
                                             and type(data) is _Cuda.cupy.ndarray)


def to_device(arr, dev: device):
    """``arr`` on ``dev``: the same array when it is there already, else a copy."""
    on_gpu = _Cuda.cupy is not None and type(arr) is _Cuda.cupy.ndarray
    if dev.type == "cpu":
        return arr.get() if on_gpu else arr
    if not on_gpu:
        if arr.dtype.kind == "V":  # ml_dtypes' bfloat16: CuPy would fail on it obscurely
            raise RuntimeError("bfloat16 tensors cannot move to CUDA in ember: CuPy has no "
                               "bfloat16 arrays (ember.cuda.is_bf16_supported() is False); "
                               "use float16 on the GPU")
        _Cuda.active = True
        return _Cuda.cupy.asarray(arr)
    return arr


def one_device(arrays: list) -> list:
    """An op's input arrays, checked to share a device. As in torch, a 0-d CPU tensor (a
    wrapped Python scalar, say) may join GPU tensors: it goes in as a NumPy scalar."""
    if all(type(a) is np.ndarray for a in arrays):
        return arrays
    out = []
    for a in arrays:
        if type(a) is np.ndarray:
            if a.ndim:
                raise RuntimeError("Expected all tensors to be on the same device, but found "
                                   "at least two devices, cuda:0 and cpu!")
            a = a[()]
        out.append(a)
    return out


# What NumPy and CuPy say when an op's array code meets the other library's arrays.
_MIXED = ("Implicit conversion to a NumPy array", "Unsupported type <class 'numpy",
          "returned NotImplemented from __array", "expected cupy")


@contextlib.contextmanager
def gpu_gaps(op):
    """Turn the error of an op whose array code does not run on CuPy yet into a clear one."""
    try:
        yield
    except TypeError as e:
        if not any(m in str(e) for m in _MIXED):
            raise
        name = getattr(op, "node_name", op.__name__).removesuffix("Backward0")
        raise NotImplementedError(f"{name} is not implemented for cuda tensors in ember yet; "
                                  "move the tensors to the CPU (.cpu()) for it") from e


def to_numpy(arr) -> np.ndarray:
    """A NumPy array of ``arr``'s values (a copy from the GPU, the array itself on the CPU)."""
    return arr if isinstance(arr, np.ndarray) else arr.get()
