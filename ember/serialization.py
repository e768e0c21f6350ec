"""ember.save / ember.load in PyTorch's checkpoint format.

A checkpoint is a zip archive (``<name>/data.pkl``, ``<name>/data/<key>`` raw storages 64-byte
aligned, ``<name>/version``, ``<name>/byteorder``, ...) whose protocol-2 pickle names torch's
rebuild functions (``torch._utils._rebuild_tensor_v2``, ``torch.FloatStorage``, ...). So real
torch loads ember checkpoints with ``torch.load(f, weights_only=True)``, and ember loads torch's
(mapping those names onto its own functions; torch itself is never imported).

Loading is safe by default (``weights_only=True``): only an allow-list of globals is accepted,
and a file may set state only on objects it built (``_weights_only_unpickler``). Saving to a
path is atomic for regular files and writes through FIFOs and devices (``_save_file``).
"""

from __future__ import annotations

import io
import os
import pickle
import secrets
import sys
import zipfile
from collections import OrderedDict
from typing import IO, Any

import numpy as np

from ember import _dtype
from ember._backend import device, to_numpy
from ember._save_file import write_to_path
from ember._serialization_load import (
    add_safe_globals,
    clear_safe_globals,
    get_safe_globals,
    load,
    safe_globals,
)
from ember._tensor import Size, Tensor

__all__ = ["save", "load", "add_safe_globals", "clear_safe_globals", "get_safe_globals",
           "safe_globals"]

FileLike = str | os.PathLike | IO[bytes]

STORAGE_ALIGNMENT = 64
STORAGE_NAMES = {
    _dtype.float64: "DoubleStorage", _dtype.float32: "FloatStorage",
    _dtype.float16: "HalfStorage", _dtype.int64: "LongStorage", _dtype.int32: "IntStorage",
    _dtype.int16: "ShortStorage", _dtype.int8: "CharStorage", _dtype.uint8: "ByteStorage",
    _dtype.bool_: "BoolStorage", _dtype.bfloat16: "BFloat16Storage",
    _dtype.complex64: "ComplexFloatStorage", _dtype.complex128: "ComplexDoubleStorage",
}


class _Global:
    """A global in torch's namespace, written as a pickle GLOBAL without importing it."""

    __slots__ = ("module", "name")
    _cache: dict[tuple[str, str], _Global] = {}

    def __new__(cls, module: str, name: str) -> _Global:
        key = (module, name)
        g = cls._cache.get(key)
        if g is None:
            g = object.__new__(cls)
            g.module, g.name = module, name
            cls._cache[key] = g
        return g

    def __call__(self, *args):  # pickle insists that a reduce function be callable
        raise TypeError(f"{self.module}.{self.name} is a name for torch, not callable here")


_REBUILD_V2 = _Global("torch._utils", "_rebuild_tensor_v2")
_REBUILD_PARAM = _Global("torch._utils", "_rebuild_parameter")
_REBUILD_PARAM_STATE = _Global("torch._utils", "_rebuild_parameter_with_state")
_FROM_TYPE_V2 = _Global("torch._tensor", "_rebuild_from_type_v2")
_TORCH_TENSOR = _Global("torch", "Tensor")


class _Storage:
    """One storage to write: the raw memory of a base array, shared by all its views."""

    __slots__ = ("array", "dtype", "key", "location")

    def __init__(self, array: np.ndarray, dt: _dtype.dtype, key: str,
                 location: str = "cpu") -> None:
        self.array, self.dtype, self.key, self.location = array, dt, key, location

    def raw(self) -> np.ndarray:
        """The storage's bytes in memory order (no copy)."""
        a = self.array
        a = a.T if not a.flags.c_contiguous else a
        return a.reshape(-1).view(np.uint8)


def _root(a: np.ndarray) -> np.ndarray:
    """The array owning ``a``'s memory (through views, and the wrapper as_strided adds)."""
    while True:
        b = a.base
        if not isinstance(b, np.ndarray):
            b = getattr(b, "base", None)  # numpy's as_strided keeps the source one level down
            if not isinstance(b, np.ndarray):
                return a
        a = b


def _extent(a: np.ndarray) -> int:
    """Bytes from ``a``'s first element to the end of its last one (non-negative strides)."""
    if a.size == 0:
        return 0
    return sum((n - 1) * s for n, s in zip(a.shape, a.strides)) + a.itemsize


class _Pickler(pickle._Pickler):
    """Pickles ember objects under torch's names; storages become persistent ids."""

    dispatch = pickle._Pickler.dispatch.copy()

    def __init__(self, file, protocol: int = 2) -> None:
        super().__init__(file, protocol=protocol)
        self.storages: dict[int, _Storage] = {}

    def save_torch_global(self, obj) -> None:
        name = obj.module + "\n" + obj.name + "\n"
        self.write(pickle.GLOBAL + name.encode("utf-8"))
        self.memoize(obj)

    dispatch[_Global] = save_torch_global

    def save_dtype(self, obj) -> None:
        self.save_torch_global(_Global("torch", obj.name))

    dispatch[_dtype.dtype] = save_dtype

    def persistent_id(self, obj):
        if type(obj) is _Storage:
            return ("storage", _Global("torch", STORAGE_NAMES[obj.dtype]), obj.key, obj.location,
                    obj.array.size)
        return None

    def reducer_override(self, obj):
        if isinstance(obj, Tensor):
            return self._reduce_tensor(obj)
        if type(obj) is Size:
            return (_Global("torch", "Size"), (tuple(obj),))
        if type(obj) is device:
            return (_Global("torch", "device"), (str(obj),))
        return NotImplemented

    def _storage_for(self, a: np.ndarray, dt: _dtype.dtype):
        """(storage, offset, stride) for ``a``: its base array's memory when torch can view it
        that way (same dtype, non-negative strides), else a contiguous copy of its own. A GPU
        array gets a host copy of its own, saved at location ``cuda:0`` as torch does."""
        if type(a) is not np.ndarray:
            host = to_numpy(a)
            st = _Storage(host, dt, str(len(self.storages)), "cuda:0")
            self.storages[id(host)] = st
            return st, 0, tuple(s // host.itemsize for s in host.strides)
        item = a.itemsize
        root = _root(a)
        ok = (root.dtype == a.dtype and (root.flags.c_contiguous or root.flags.f_contiguous)
              and all(s >= 0 and s % item == 0 for s in a.strides))
        if ok:
            delta = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
            ok = delta % item == 0 and 0 <= delta and delta + _extent(a) <= root.nbytes
        if not ok:
            root = a = np.ascontiguousarray(a)
            delta = 0
        st = self.storages.get(id(root))
        if st is None:
            st = _Storage(root, dt, str(len(self.storages)))
            self.storages[id(root)] = st
        return st, delta // item, tuple(s // item for s in a.strides)

    def _reduce_tensor(self, t: Tensor):
        from ember.nn.parameter import Parameter
        from ember.utils.hooks import warn_if_has_hooks

        warn_if_has_hooks(t)

        if isinstance(t, Parameter):
            data = Tensor._make(t._data)
            state = t.__dict__
            if state:
                return (_REBUILD_PARAM_STATE, (data, t.requires_grad, OrderedDict(), state))
            return (_REBUILD_PARAM, (data, t.requires_grad, OrderedDict()))
        dt = t.dtype
        if dt not in STORAGE_NAMES:
            raise RuntimeError(f"ember.save: cannot save tensors of dtype {dt}")
        storage, offset, stride = self._storage_for(t._data, dt)
        args = (storage, offset, tuple(t._data.shape), stride, t.requires_grad, OrderedDict())
        state = t.__dict__
        if type(t) is not Tensor or state:
            cls = _TORCH_TENSOR if type(t) is Tensor else type(t)
            return (_FROM_TYPE_V2, (_REBUILD_V2, cls, args, dict(state)))
        return (_REBUILD_V2, args)


def _dumps(obj, protocol: int = 2) -> tuple[bytes, list[_Storage]]:
    buf = io.BytesIO()
    p = _Pickler(buf, protocol)
    p.dump(obj)
    return buf.getvalue(), list(p.storages.values())


class _AlignedZipWriter:
    """Writes torch's records into a stored (uncompressed) zip, data 64-byte aligned."""

    def __init__(self, fileobj, archive_name: str) -> None:
        self.zf = zipfile.ZipFile(fileobj, "w", zipfile.ZIP_STORED, allowZip64=True)
        self.prefix = archive_name + "/"

    def write(self, name: str, data) -> None:
        full = self.prefix + name
        nbytes = len(data) if isinstance(data, bytes) else data.nbytes
        info = zipfile.ZipInfo(full, date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_STORED
        info.file_size = nbytes
        zip64 = nbytes * 1.05 > zipfile.ZIP64_LIMIT
        header = 30 + len(full.encode("utf-8")) + (20 if zip64 else 0) + 4
        pad = -(self.zf.start_dir + header) % STORAGE_ALIGNMENT
        # An extra field ("FB" + length + zeros) pads the local header, as torch's writer does.
        info.extra = b"FB" + pad.to_bytes(2, "little") + bytes(pad)
        with self.zf.open(info, "w", force_zip64=zip64) as w:
            w.write(data)


def _write_checkpoint(fileobj, archive_name: str, data_pkl: bytes, storages) -> None:
    w = _AlignedZipWriter(fileobj, archive_name)
    try:
        w.write("data.pkl", data_pkl)
        w.write(".format_version", b"1")
        w.write(".storage_alignment", str(STORAGE_ALIGNMENT).encode())
        w.write("byteorder", sys.byteorder.encode())
        for st in storages:
            w.write(f"data/{st.key}", st.raw())
        w.write("version", b"3\n")
        w.write(".data/serialization_id", f"{secrets.randbits(128):040d}"[:40].encode())
    except BaseException:
        w.zf.fp = None  # abandon the archive: no central directory is written on failure
        raise
    w.zf.close()


def save(obj: Any, f: FileLike, pickle_module: Any = None, pickle_protocol: int = 2,
         _use_new_zipfile_serialization: bool = True,
         _disable_byteorder_record: bool = False) -> None:
    """Save ``obj`` (tensors, state dicts, nested containers, whole modules) to ``f``.

    ``f`` is a binary file-like object or a path. A regular file is written atomically (a
    temporary file beside it is renamed over it once complete; a symlink's target is what gets
    replaced, with its mode kept); a FIFO or device is written through (see ``_save_file``).

    >>> ember.save(model.state_dict(), "model.pt")
    """
    if pickle_module is not None and pickle_module is not pickle:
        raise NotImplementedError("ember.save supports only the standard pickle module")
    if not _use_new_zipfile_serialization:
        raise NotImplementedError("ember.save writes only the zip checkpoint format")
    data_pkl, storages = _dumps(obj, pickle_protocol)
    if isinstance(f, str | os.PathLike):
        path = os.fspath(f)
        name = os.path.splitext(os.path.basename(path))[0] or "archive"
        write_to_path(path, lambda fh: _write_checkpoint(fh, name, data_pkl, storages))
        return
    if not hasattr(f, "write"):
        raise AttributeError(f"expected 'f' to be string, path, or a file-like object with a "
                             f"'write' attribute, got {type(f).__name__}")
    _write_checkpoint(f, "archive", data_pkl, storages)
