"""The reading half of ember.save/ember.load: zip checkpoint -> objects, with a safe unpickler.

torch's global names in the pickle (``torch._utils._rebuild_tensor_v2``, ``torch.FloatStorage``,
``torch.Size``, ...) map onto ember's own rebuild functions and types here; nothing imports
torch. With ``weights_only=True`` (the default) any global outside the allow-list is refused.
"""

from __future__ import annotations

import _compat_pickle
import codecs
import contextlib
import io
import os
import pickle
import zipfile
import zlib
from collections import Counter, OrderedDict
from collections.abc import Callable
from typing import IO, Any

import numpy as np

from ember import _dtype
from ember._backend import CPU, check_device, cupy_module, device, to_device, to_numpy
from ember._tensor import Size, Tensor

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
def _rebuild_tensor_v2(storage: _LoadedStorage, storage_offset: int, size, stride,
                       requires_grad: bool, backward_hooks, metadata=None) -> Tensor:
    arr = storage.array
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride) or any(s < 0 for s in size) or any(s < 0 for s in stride):
        raise RuntimeError(f"invalid tensor geometry in checkpoint: size {list(size)}, "
                           f"stride {list(stride)}")
    if 0 not in size:
        last = storage_offset + sum((n - 1) * s for n, s in zip(size, stride))
        if storage_offset < 0 or last >= arr.size:
            raise RuntimeError(f"checkpoint tensor of size {list(size)} at offset "
                               f"{storage_offset} is out of bounds for its storage of "
                               f"{arr.size} elements (corrupt file?)")
    item = arr.itemsize
    # An ndarray over the storage's buffer (base = the storage), so a later save finds it.
    view = np.ndarray(size, dtype=arr.dtype, buffer=arr,
                      offset=storage_offset * item if 0 not in size else 0,
                      strides=tuple(s * item for s in stride))
    if storage.device != CPU:  # a GPU copy of its own, no longer a view of the storage
        t = Tensor._make(to_device(view, storage.device))
    else:
        t = Tensor._make(view)
        t._set_view_of(storage.holder)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_parameter(data: Tensor, requires_grad: bool, backward_hooks):
    from ember.nn.parameter import Parameter

    return Parameter(data, requires_grad)


def _rebuild_parameter_with_state(data: Tensor, requires_grad: bool, backward_hooks, state):
    return _set_obj_state(_rebuild_parameter(data, requires_grad, backward_hooks), state)


def _rebuild_from_type_v2(func, new_type, args, state):
    t = func(*args)
    if type(t) is not new_type and isinstance(new_type, type) and issubclass(new_type, Tensor):
        sub = object.__new__(new_type)
        sub._init(t._data)
        sub._base, sub._vc, sub._rg = t._base, t._vc, t._rg
        t = sub
    return _set_obj_state(t, state)


def _set_obj_state(obj, state):
    if isinstance(state, tuple):
        dict_state, slots_state = state
        for k, v in (slots_state or {}).items():
            setattr(obj, k, v)
    else:
        dict_state = state
    for k, v in (dict_state or {}).items():
        setattr(obj, k, v)
    return obj


# --- the allow-list -------------------------------------------------------------------------
def _allowed_globals() -> dict[str, Any]:
    from ember.nn.parameter import Parameter

    rc: dict[str, Any] = {
        "collections.OrderedDict": OrderedDict, "collections.Counter": Counter,
        "torch.nn.parameter.Parameter": Parameter, "torch.Size": Size,
        "torch.Tensor": Tensor, "torch.device": device, "_codecs.encode": codecs.encode,
        "builtins.bytearray": bytearray, "builtins.set": set, "builtins.complex": complex,
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


_SAFE_GLOBALS: dict[str, Any] = {}

# Legitimate tensor globals in torch checkpoints whose dtypes ember lacks: a clear error, not a
# "weights only" refusal.
_UNSUPPORTED_TENSOR_GLOBALS = {
    "torch._utils._rebuild_tensor_v3", "torch.BFloat16Storage", "torch.ComplexFloatStorage",
    "torch.ComplexDoubleStorage", "torch.bfloat16", "torch.complex64", "torch.complex128",
    "torch.uint16", "torch.uint32", "torch.uint64", "torch.QInt8Storage",
    "torch.QUInt8Storage", "torch.QInt32Storage",
}


def _global_name(obj) -> str:
    if isinstance(obj, tuple):
        return obj[1]
    return f"{obj.__module__}.{obj.__qualname__}"


def add_safe_globals(safe_globals: list) -> None:
    """Allow these classes/functions (or ``(obj, "module.name")`` pairs) in weights-only loads."""
    for g in safe_globals:
        _SAFE_GLOBALS[_global_name(g)] = g[0] if isinstance(g, tuple) else g


def get_safe_globals() -> list:
    return list(_SAFE_GLOBALS.values())


def clear_safe_globals() -> None:
    _SAFE_GLOBALS.clear()


@contextlib.contextmanager
def safe_globals(globals_list: list):
    """Context manager: allow these globals only inside the block."""
    saved = dict(_SAFE_GLOBALS)
    add_safe_globals(globals_list)
    try:
        yield
    finally:
        _SAFE_GLOBALS.clear()
        _SAFE_GLOBALS.update(saved)


def _weights_only_message(full: str) -> str:
    return (
        "Weights only load failed. This file can still be loaded, to do so you have two "
        "options, do those steps only if you trust the source of the checkpoint. \n\t(1) "
        "Re-running `ember.load` with `weights_only` set to `False` will likely succeed, but "
        "it can result in arbitrary code execution. Do it only if you got the file from a "
        "trusted source.\n\t(2) Alternatively, to load with `weights_only=True` please check "
        "the recommended steps in the following error message.\n\tWeightsUnpickler error: "
        f"Unsupported global: GLOBAL {full} was not an allowed global by default. Please use "
        f"`ember.serialization.add_safe_globals([{full}])` or the "
        f"`ember.serialization.safe_globals([{full}])` context manager to allowlist this "
        "global if you trust this class/function.")


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, weights_only: bool, persistent_load: Callable,
                 encoding: str) -> None:
        super().__init__(file, encoding=encoding)
        self.weights_only = weights_only
        self._persistent = persistent_load
        self._allowed = _allowed_globals()

    def persistent_load(self, pid):
        return self._persistent(pid)

    def find_class(self, module: str, name: str):
        # Protocol 2 writes Python 2 names (__builtin__.set, ...); map them as pickle does.
        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
        full = f"{module}.{name}"
        if full in self._allowed:
            return self._allowed[full]
        if full in _SAFE_GLOBALS:
            return _SAFE_GLOBALS[full]
        if module == "torch" or module.startswith("torch."):  # a torch checkpoint naming a
            twin = "ember" + full[len("torch"):]  # class allow-listed under ember's name
            if twin in _SAFE_GLOBALS:
                return _SAFE_GLOBALS[twin]
        if full in _UNSUPPORTED_TENSOR_GLOBALS:
            raise RuntimeError(f"ember.load: the checkpoint holds tensors that need {full}, "
                               "a dtype ember does not have (bfloat16 needs the ml_dtypes "
                               "package; complex, unsigned 16-64 bit and float8 are not "
                               "supported)")
        if self.weights_only:
            raise pickle.UnpicklingError(_weights_only_message(full))
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


def _open_archive(f, name: str):
    if not (hasattr(f, "seekable") and f.seekable()):
        f = io.BytesIO(f.read())  # zip needs random access, as torch's reader does
    head = f.read(4)
    f.seek(-len(head), io.SEEK_CUR)
    if head != b"PK\x03\x04":
        raise RuntimeError(
            f"{name}: not a PyTorch zip checkpoint (the file is empty, corrupt, or in the legacy "
            "pre-1.6 format that ember does not read; re-save it with torch.save in torch >= "
            "1.6)")
    try:
        return zipfile.ZipFile(f)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
        raise RuntimeError(
            f"PytorchStreamReader failed reading zip archive: failed finding central directory "
            f"({name}: {e}). The checkpoint is truncated or corrupted: it was not saved "
            "completely or was modified after saving.") from None


def _read_record(zf: zipfile.ZipFile, record: str, name: str, out: np.ndarray | None = None):
    """A record's bytes, or (``out`` given) its bytes read straight into ``out``, CRC-checked."""
    try:
        if out is None:
            return zf.read(record)
        info = zf.getinfo(record)
        if info.file_size != out.nbytes:
            raise zipfile.BadZipFile(f"record holds {info.file_size} bytes, expected "
                                     f"{out.nbytes}")
        if info.compress_type != zipfile.ZIP_STORED:
            with zf.open(record) as fh:
                fh.readinto(out)
            return out
        # Stored records: one readinto from the file, no chunked copies through zipfile.
        zf.fp.seek(_data_offset(zf, info))
        n = zf.fp.readinto(out)
        if n != out.nbytes:
            raise zipfile.BadZipFile(f"record is truncated ({n} of {out.nbytes} bytes)")
        if zlib.crc32(out) != info.CRC:
            raise zipfile.BadZipFile(f"Bad CRC-32 for file {record!r}")
        return out
    except KeyError:
        raise RuntimeError(f"PytorchStreamReader failed locating file {record}: file not found "
                           f"({name})") from None
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
        raise RuntimeError(f"PytorchStreamReader failed reading file {record}: invalid header "
                           f"or archive is corrupted ({name}: {e})") from None


def _data_offset(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> int:
    """Where a record's data starts: after its local header (whose extra field may differ
    from the central directory's)."""
    zf.fp.seek(info.header_offset)
    head = zf.fp.read(30)
    if len(head) != 30 or head[:4] != b"PK\x03\x04":
        raise zipfile.BadZipFile("bad local file header")
    return (info.header_offset + 30 + int.from_bytes(head[26:28], "little")
            + int.from_bytes(head[28:30], "little"))


def _mmap_record(zf: zipfile.ZipFile, record: str, path: str, name: str, dt: np.dtype,
                 numel: int) -> np.ndarray | None:
    """Map a stored record's bytes copy-on-write (torch's ``mmap=True``); None if it can't be."""
    try:
        info = zf.getinfo(record)
        if info.compress_type != zipfile.ZIP_STORED or numel == 0:
            return None
        start = _data_offset(zf, info)
        size = os.path.getsize(path)
    except KeyError:
        raise RuntimeError(f"PytorchStreamReader failed locating file {record}: file not found "
                           f"({name})") from None
    except (zipfile.BadZipFile, OSError) as e:
        raise RuntimeError(f"PytorchStreamReader failed reading file {record}: invalid header "
                           f"or archive is corrupted ({name}: {e})") from None
    if start + numel * dt.itemsize > size or info.file_size != numel * dt.itemsize:
        raise RuntimeError(f"PytorchStreamReader failed reading file {record}: the record is "
                           f"truncated ({name})")
    return np.memmap(path, dtype=dt, mode="c", offset=start, shape=(numel,)).view(np.ndarray)


def _load_archive(zf: zipfile.ZipFile, name: str, map_location, weights_only: bool,
                  encoding: str, mmap_path: str | None) -> Any:
    pkl = [n for n in zf.namelist() if n.endswith("data.pkl") and n.count("/") == 1]
    if not pkl:
        raise RuntimeError(f"PytorchStreamReader failed locating file data.pkl: file not found "
                           f"({name})")
    prefix = pkl[0][: -len("data.pkl")]
    names = set(zf.namelist())
    big_endian = (prefix + "byteorder" in names
                  and _read_record(zf, prefix + "byteorder", name) == b"big")
    loaded: dict[str, _LoadedStorage] = {}

    def persistent_load(pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"unsupported persistent id encountered: {pid!r}")
        _, stype, key, location, numel = pid
        if not isinstance(stype, StorageType):
            raise pickle.UnpicklingError(f"unsupported storage type {stype!r}")
        if key not in loaded:
            record, dt = f"{prefix}data/{key}", stype.dtype.np
            arr = None
            if mmap_path is not None and not big_endian:
                arr = _mmap_record(zf, record, mmap_path, name, dt, int(numel))
            if arr is None:
                arr = np.empty(int(numel), dtype=dt)
                _read_record(zf, record, name, arr.view(np.uint8))
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

    data = _read_record(zf, prefix + "data.pkl", name)
    up = _Unpickler(io.BytesIO(data), weights_only, persistent_load, encoding)
    try:
        return up.load()
    except pickle.UnpicklingError:
        raise
    except (EOFError, ValueError, IndexError, KeyError, TypeError, AttributeError) as e:
        if weights_only:
            raise pickle.UnpicklingError(
                f"Weights only load failed: {name}: data.pkl is malformed ({type(e).__name__}: "
                f"{e})") from None
        raise


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
            zf = _open_archive(fh, repr(name))
            with zf:
                return _load_archive(zf, repr(name), map_location, weights_only, encoding,
                                     name if mmap else None)
    if mmap:
        raise ValueError("f must be a file path in order to use the mmap argument")
    if not hasattr(f, "read"):
        raise AttributeError(f"expected 'f' to be string, path, or a file-like object with a "
                             f"'read' attribute, got {type(f).__name__}")
    name = getattr(f, "name", None) or f"<{type(f).__name__}>"
    zf = _open_archive(f, str(name))
    return _load_archive(zf, str(name), map_location, weights_only, encoding, None)
