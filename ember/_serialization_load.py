"""The reading half of ember.save/ember.load: zip checkpoint -> objects, with a safe unpickler.

torch's global names in the pickle (``torch._utils._rebuild_tensor_v2``, ``torch.FloatStorage``,
``torch.Size``, ...) map onto ember's own rebuild functions and types here; nothing imports
torch. With ``weights_only=True`` (the default) any global outside the allow-list is refused.
"""

from __future__ import annotations

import codecs
import io
import os
import pickle
import zipfile
from collections import Counter, OrderedDict
from collections.abc import Callable
from typing import IO, Any

import numpy as np

from ember import _dtype
from ember._backend import CPU, check_device, cupy_module, device, to_device, to_numpy
from ember._serialization_zip import mmap_record, open_archive, read_record, record_size
from ember._tensor import Size, Tensor
from ember._weights_only_unpickler import (
    WeightsOnlyUnpickler,
    add_safe_globals,
    clear_safe_globals,
    get_safe_globals,
    python3_name,
    safe_globals,
    weights_only_message,
)

__all__ = ["load", "add_safe_globals", "clear_safe_globals", "get_safe_globals",
           "safe_globals"]

FileLike = str | os.PathLike | IO[bytes]

_STORAGE_DTYPES = {
    "DoubleStorage": _dtype.float64, "FloatStorage": _dtype.float32,
    "HalfStorage": _dtype.float16, "LongStorage": _dtype.int64, "IntStorage": _dtype.int32,
    "ShortStorage": _dtype.int16, "CharStorage": _dtype.int8, "ByteStorage": _dtype.uint8,
    "BoolStorage": _dtype.bool_,
}
if _dtype.bfloat16 is not None:
    _STORAGE_DTYPES["BFloat16Storage"] = _dtype.bfloat16


class StorageType:
    """What ``torch.FloatStorage`` & co. unpickle to: just the element dtype."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.dtype = _STORAGE_DTYPES[name]

    def __repr__(self) -> str:
        return f"StorageType(dtype={self.dtype})"


class _LoadedStorage:
    """A storage read from the archive: one array, which every tensor on it views."""

    __slots__ = ("array", "holder", "device")

    def __init__(self, array: np.ndarray) -> None:
        self.array = array
        self.holder = Tensor._make(array)
        self.device = CPU  # where its tensors go: the saved location or map_location


# --- rebuild functions (the targets of torch's names) --------------------------------------
def _geometry_error(size, stride) -> RuntimeError:
    return RuntimeError(f"invalid tensor geometry in checkpoint: size {size}, stride {stride}")


def _int_tuple(v) -> tuple[int, ...] | None:
    """``v`` as a tuple of non-negative ints below 2**63, or None."""
    if type(v) not in (tuple, list, Size) or not all(
            type(i) is int and 0 <= i < 2**63 for i in v):
        return None
    return tuple(v)


def _rebuild_tensor_v2(storage: _LoadedStorage, storage_offset: int, size, stride,
                       requires_grad: bool, backward_hooks, metadata=None) -> Tensor:
    if type(storage) is not _LoadedStorage:
        raise RuntimeError(f"_rebuild_tensor_v2: expected a storage, got {type(storage)}")
    arr = storage.array
    shape, strides = _int_tuple(size), _int_tuple(stride)
    if shape is None or strides is None or len(shape) != len(strides) or not (
            type(storage_offset) is int and 0 <= storage_offset < 2**63):
        raise _geometry_error(_short(size), _short(stride))
    if 0 not in shape:
        last = storage_offset + sum((n - 1) * s for n, s in zip(shape, strides))
        if last >= arr.size:
            raise RuntimeError(f"checkpoint tensor of size {list(shape)} at offset "
                               f"{storage_offset} is out of bounds for its storage of "
                               f"{arr.size} elements (corrupt file?)")
    item = arr.itemsize
    # An ndarray over the storage's buffer (base = the storage), so a later save finds it.
    try:
        view = np.ndarray(shape, dtype=arr.dtype, buffer=arr,
                          offset=storage_offset * item if 0 not in shape else 0,
                          strides=tuple(s * item for s in strides))
    except (ValueError, TypeError, OverflowError):
        raise _geometry_error(list(shape), list(strides)) from None
    if storage.device != CPU:  # a GPU copy of its own, no longer a view of the storage
        t = Tensor._make(to_device(view, storage.device))
    else:
        t = Tensor._make(view)
        t._set_view_of(storage.holder)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _short(v) -> str:
    """A size or stride from the file, for an error message (bounded length)."""
    t = _int_tuple(v)
    return str(list(t))[:200] if t is not None else str(type(v))


def _rebuild_parameter(data: Tensor, requires_grad: bool, backward_hooks):
    from ember.nn.parameter import Parameter

    return Parameter(data, requires_grad)


def _rebuild_parameter_with_state(data: Tensor, requires_grad: bool, backward_hooks, state):
    return _set_obj_state(_rebuild_parameter(data, requires_grad, backward_hooks), state)


def _rebuild_from_type_v2(func, new_type, args, state):
    t = func(*args)
    if not isinstance(t, Tensor):
        raise RuntimeError(f"_rebuild_from_type_v2: expected its function to build a Tensor, "
                           f"got {type(t)}")
    if type(t) is not new_type and isinstance(new_type, type) and issubclass(new_type, Tensor):
        sub = object.__new__(new_type)
        sub._init(t._data)
        sub._base, sub._vc, sub._rg = t._base, t._vc, t._rg
        t = sub
    return _set_obj_state(t, state)


# A tensor's internals: torch keeps them in C, out of setattr's reach; so does ember.
_TENSOR_INTERNALS = frozenset(Tensor.__slots__) | {"__class__"}


def _set_obj_state(obj: Tensor, state):
    """Attributes saved with a tensor (``t.tag = ...``), set as torch's ``_set_obj_state``."""
    if isinstance(state, tuple):
        if len(state) != 2:
            raise RuntimeError(f"Invalid serialized state: a tuple of {len(state)} items")
        dict_state, slots_state = state
    else:
        dict_state, slots_state = state, None
    for part in (dict_state, slots_state):
        if part is None:
            continue
        if not isinstance(part, dict):
            raise RuntimeError(f"Invalid serialized state: {type(part)}")
        for k, v in part.items():
            if type(k) is not str or k in _TENSOR_INTERNALS:
                name = repr(k[:100]) if type(k) is str else type(k)
                raise RuntimeError(f"Invalid serialized state: cannot set {name} on a tensor")
            setattr(obj, k, v)
    return obj


# --- the allow-list -------------------------------------------------------------------------
def _bytearray(*args) -> bytearray:
    """``bytearray`` as pickles call it, from its content: not ``bytearray(2**40)``, which
    would have a few bytes of a file fill memory with zeros."""
    if args and not isinstance(args[0], str | bytes | bytearray):
        raise pickle.UnpicklingError(f"bytearray in a checkpoint is made from its content, not "
                                     f"from {type(args[0])}")
    return bytearray(*args)


def _allowed_globals() -> dict[str, Any]:
    from ember.nn.parameter import Parameter

    rc: dict[str, Any] = {
        "collections.OrderedDict": OrderedDict, "collections.Counter": Counter,
        "torch.nn.parameter.Parameter": Parameter, "torch.Size": Size,
        "torch.Tensor": Tensor, "torch.device": device, "_codecs.encode": codecs.encode,
        "builtins.bytearray": _bytearray, "builtins.set": set, "builtins.complex": complex,
        "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
        "torch._utils._rebuild_parameter": _rebuild_parameter,
        "torch._utils._rebuild_parameter_with_state": _rebuild_parameter_with_state,
        "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
    }
    for d in _dtype.ALL:
        rc[f"torch.{d.name}"] = d
    for name in _STORAGE_DTYPES:
        rc[f"torch.{name}"] = StorageType(name)
    return rc


# Legitimate tensor globals in torch checkpoints whose dtypes ember lacks: a clear error, not a
# "weights only" refusal.
_UNSUPPORTED_TENSOR_GLOBALS = {
    "torch._utils._rebuild_tensor_v3", "torch.BFloat16Storage", "torch.ComplexFloatStorage",
    "torch.ComplexDoubleStorage", "torch.bfloat16", "torch.complex64", "torch.complex128",
    "torch.uint16", "torch.uint32", "torch.uint64", "torch.QInt8Storage",
    "torch.QUInt8Storage", "torch.QInt32Storage",
}


def _refuse_unsupported(full: str) -> None:
    if full in _UNSUPPORTED_TENSOR_GLOBALS:
        raise RuntimeError(f"ember.load: the checkpoint holds tensors that need {full}, "
                           "a dtype ember does not have (bfloat16 needs the ml_dtypes "
                           "package; complex, unsigned 16-64 bit and float8 are not "
                           "supported)")


class _Unpickler(pickle.Unpickler):
    """The full unpickler of ``weights_only=False`` (trusted files): torch classes map onto
    ember's twins."""

    def __init__(self, file, persistent_load: Callable, encoding: str) -> None:
        super().__init__(file, encoding=encoding)
        self._persistent = persistent_load
        self._allowed = _allowed_globals()

    def persistent_load(self, pid):
        return self._persistent(pid)

    def find_class(self, module: str, name: str):
        module, name = python3_name(module, name)
        full = f"{module}.{name}"
        if full in self._allowed:
            return self._allowed[full]
        _refuse_unsupported(full)
        if module == "torch" or module.startswith("torch."):
            # A torch class (e.g. a whole torch.nn module): use ember's twin if it has one.
            ember_module = "ember" + module[len("torch"):]
            try:
                return super().find_class(ember_module, name)
            except (ImportError, AttributeError):
                raise pickle.UnpicklingError(
                    f"ember.load: the checkpoint needs {full}, which ember does not "
                    "provide") from None
        return super().find_class(module, name)


# --- reading the archive --------------------------------------------------------------------
def _restore_location(map_location, location: str):
    """The device a storage saved at ``location`` goes to."""
    if isinstance(map_location, dict):
        location = map_location.get(location, location)
        map_location = None
    target = location if map_location is None else map_location
    if isinstance(target, str | device | int) and str(target).startswith("cuda"):
        if map_location is None and cupy_module() is None:
            raise RuntimeError(
                "Attempting to deserialize object on a CUDA device but torch.cuda.is_available()"
                " is False. If you are running on a CPU-only machine, please use ember.load "
                "with map_location=ember.device('cpu') to map your storages to the CPU.")
    return check_device(target)


def _storage_id(pid) -> tuple[StorageType, str, str, int]:
    """(type, key, location, numel) of a persistent id, checked; torch's errors otherwise."""
    kind = _ascii(pid[0]) if type(pid) is tuple and len(pid) == 5 else None
    if not (type(kind) is str and kind == "storage"):
        raise pickle.UnpicklingError(
            f"Only persistent_load of storage is allowed, but got {_types(pid)}")
    _, stype, key, location, numel = pid
    key, location = _ascii(key), _ascii(location)
    if not (isinstance(stype, StorageType) and type(key) is str and type(location) is str
            and type(numel) is int and numel >= 0):
        raise pickle.UnpicklingError(f"invalid storage record in checkpoint: {_types(pid)}")
    return stype, key, location, numel


def _ascii(v):
    # Python 2 era pickles (read with encoding="bytes") give bytes here; torch accepts them.
    return v.decode("ascii") if type(v) is bytes and v.isascii() else v


def _types(pid) -> str:
    if type(pid) is tuple:
        return "(" + ", ".join(type(x).__name__ for x in pid[:8]) + ")"
    return str(type(pid))


def _load_archive(zf: zipfile.ZipFile, name: str, map_location, weights_only: bool,
                  encoding: str, mmap_path: str | None) -> Any:
    pkl = [n for n in zf.namelist() if n.endswith("data.pkl") and n.count("/") == 1]
    if not pkl:
        raise RuntimeError(f"PytorchStreamReader failed locating file data.pkl: file not found "
                           f"({name})")
    prefix = pkl[0][: -len("data.pkl")]
    names = set(zf.namelist())
    big_endian = (prefix + "byteorder" in names
                  and read_record(zf, prefix + "byteorder", name) == b"big")
    loaded: dict[str, _LoadedStorage] = {}

    def persistent_load(pid):
        stype, key, location, numel = _storage_id(pid)
        if key not in loaded:
            record, dt = f"{prefix}data/{key}", stype.dtype.np
            # The declared size is checked against the record before anything is allocated.
            nbytes, have = numel * dt.itemsize, record_size(zf, record, name)
            if have != nbytes:
                raise RuntimeError(
                    f"PytorchStreamReader failed reading file {record}: record size ({have} "
                    f"bytes) does not match expected size ({nbytes} bytes = {numel} elements * "
                    f"{dt.itemsize} bytes/element) for dtype {stype.dtype} ({name})")
            arr = None
            if mmap_path is not None and not big_endian:
                arr = mmap_record(zf, record, mmap_path, name, dt, numel)
            if arr is None:
                arr = np.empty(numel, dtype=dt)
                read_record(zf, record, name, arr.view(np.uint8))
            if big_endian:
                arr = arr.byteswap()
            st = _LoadedStorage(arr)
            moved = map_location(st.holder, location) if callable(map_location) else None
            if isinstance(moved, Tensor):
                st = _LoadedStorage(to_numpy(moved._data))
                st.device = moved.device
            else:
                st.device = _restore_location(None if callable(map_location) else map_location,
                                              location)
            loaded[key] = st
        return loaded[key]

    data = read_record(zf, prefix + "data.pkl", name)
    if not weights_only:  # a trusted file: Python's own unpickler, anything goes
        return _Unpickler(io.BytesIO(data), persistent_load, encoding).load()
    up = WeightsOnlyUnpickler(io.BytesIO(data), _allowed_globals(), persistent_load,
                              _refuse_unsupported, encoding)
    try:
        return _no_bare_storage(up.load())
    except pickle.UnpicklingError as e:
        raise pickle.UnpicklingError(weights_only_message(str(e))) from None
    except RuntimeError:
        raise  # the rebuild functions' and the archive's own errors, already clear
    except Exception as e:  # a malformed stream fails in any of pickle's ways
        raise pickle.UnpicklingError(weights_only_message(
            f"{name}: data.pkl is malformed ({type(e).__name__}: {str(e)[:200]})")) from None


def _no_bare_storage(result):
    """``result``, unless a storage sits in it outside a tensor (what ``torch.save`` of a
    Storage gives): ember has no storage objects to return."""
    todo, seen = [result], set()
    while todo:
        obj = todo.pop()
        if id(obj) in seen or isinstance(obj, str | bytes | int | float | type):
            continue
        seen.add(id(obj))
        if type(obj) is _LoadedStorage:
            raise RuntimeError("ember.load: the checkpoint holds a storage outside any tensor "
                               "(torch.save of a Storage); ember has no storage objects: save "
                               "the tensor instead")
        if isinstance(obj, dict):
            todo.extend(obj.keys())
            todo.extend(obj.values())
        elif isinstance(obj, list | tuple | set | frozenset):
            todo.extend(obj)
        todo.extend(getattr(obj, "__dict__", {}).values())
    return result


def load(f: FileLike, map_location=None, pickle_module: Any = None, *,
         weights_only: bool | None = True, mmap: bool | None = None,
         **pickle_load_args: Any) -> Any:
    """Load an object saved by ``ember.save`` or ``torch.save``.

    ``weights_only=True`` (default) accepts only tensors, containers and plain values; pass
    ``weights_only=False`` for whole modules from a trusted source. ``map_location`` may be a
    device, a string, a ``{saved: target}`` dict or ``fn(storage, location)``. ``mmap=True``
    maps the storages from the file copy-on-write instead of reading them.

    >>> state = ember.load("model.pt")
    """
    if weights_only is None:
        weights_only = True
    if pickle_module is not None and pickle_module is not pickle and weights_only:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is "
                           "specified")
    encoding = pickle_load_args.get("encoding", "utf-8")
    if isinstance(f, str | os.PathLike):
        name = os.fspath(f)
        with open(name, "rb") as fh:
            zf = open_archive(fh, repr(name))
            with zf:
                return _load_archive(zf, repr(name), map_location, weights_only, encoding,
                                     name if mmap else None)
    if mmap:
        raise ValueError("f must be a file path in order to use the mmap argument")
    if not hasattr(f, "read"):
        raise AttributeError(f"expected 'f' to be string, path, or a file-like object with a "
                             f"'read' attribute, got {type(f).__name__}")
    name = getattr(f, "name", None) or f"<{type(f).__name__}>"
    zf = open_archive(f, str(name))
    return _load_archive(zf, str(name), map_location, weights_only, encoding, None)
