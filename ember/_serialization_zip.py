"""Reading the records of a checkpoint's zip archive, with torch's errors for a damaged file.

Every failure of the archive itself (truncated, corrupt, unsupported compression) becomes torch's
``RuntimeError: PytorchStreamReader failed ...`` naming the file and the record, never a bare
``zipfile``/``zlib`` exception.
"""

from __future__ import annotations

import io
import os
import zipfile
import zlib

import numpy as np

# What goes wrong inside zipfile on a damaged archive.
_ZIP_ERRORS = (zipfile.BadZipFile, OSError, EOFError, ValueError, zlib.error,
               NotImplementedError, RuntimeError)


def open_archive(f, name: str) -> zipfile.ZipFile:
    """A zip archive over the open binary file ``f`` (``name`` is used in errors)."""
    if not (hasattr(f, "seekable") and f.seekable()):
        f = io.BytesIO(f.read())  # zip needs random access, as torch's reader does
    head = f.read(4)
    f.seek(-len(head), io.SEEK_CUR)
    if head != b"PK\x03\x04":
        raise RuntimeError(
            f"{name}: not a PyTorch zip checkpoint (the file is empty, corrupt, or in the legacy "
            "pre-1.6 format that ember does not read; re-save it with torch.save in torch >= "
            "1.6)")
    start = f.tell()
    try:
        try:
            return zipfile.ZipFile(f)
        except NotImplementedError:
            # "zip file version 8.4": torch's reader ignores the version-needed field and reads
            # the records if their compression is one it knows; so does ember.
            f.seek(start)
            return zipfile.ZipFile(_VersionPatchedFile(f))
    except _ZIP_ERRORS as e:
        raise RuntimeError(
            f"PytorchStreamReader failed reading zip archive: failed finding central directory "
            f"({name}: {e}). The checkpoint is truncated or corrupted: it was not saved "
            "completely or was modified after saving.") from None


class _VersionPatchedFile:
    """A read-only view of a zip file in which every central-directory "version needed to
    extract" above what Python's zipfile accepts reads as 2.0 (the file itself is unchanged)."""

    def __init__(self, f) -> None:
        self._f = f
        self.name = getattr(f, "name", None)
        self._patches: list[int] = []  # offsets of the 2-byte fields to rewrite
        end = zipfile._EndRecData(f)
        if end is None:
            raise zipfile.BadZipFile("File is not a zip file")
        size_cd = end[zipfile._ECD_SIZE]
        start = end[zipfile._ECD_LOCATION] - size_cd
        if end[zipfile._ECD_SIGNATURE] == zipfile.stringEndArchive64:
            start -= zipfile.sizeEndCentDir64 + zipfile.sizeEndCentDir64Locator
        f.seek(start)
        cd = f.read(size_cd)
        p = 0
        while p + 46 <= len(cd) and cd[p:p + 4] == b"PK\x01\x02":
            if int.from_bytes(cd[p + 6:p + 8], "little") > zipfile.MAX_EXTRACT_VERSION:
                self._patches.append(start + p + 6)
            p += (46 + int.from_bytes(cd[p + 28:p + 30], "little")
                  + int.from_bytes(cd[p + 30:p + 32], "little")
                  + int.from_bytes(cd[p + 32:p + 34], "little"))

    def _patch(self, pos: int, buf: memoryview) -> None:
        for off in self._patches:
            for i, b in ((off, 20), (off + 1, 0)):  # version 2.0, little-endian
                if pos <= i < pos + len(buf):
                    buf[i - pos] = b

    def read(self, n: int = -1) -> bytes:
        pos = self._f.tell()
        data = bytearray(self._f.read(n))
        self._patch(pos, memoryview(data))
        return bytes(data)

    def readinto(self, buf) -> int:
        pos = self._f.tell()
        n = self._f.readinto(buf)
        self._patch(pos, memoryview(buf).cast("B")[:n or 0])
        return n

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._f.seek(offset, whence)

    def tell(self) -> int:
        return self._f.tell()

    def seekable(self) -> bool:
        return True


def _record_error(record: str, name: str, e: BaseException) -> RuntimeError:
    return RuntimeError(f"PytorchStreamReader failed reading file {record}: invalid header or "
                        f"archive is corrupted ({name}: {e})")


def _info(zf: zipfile.ZipFile, record: str, name: str) -> zipfile.ZipInfo:
    try:
        return zf.getinfo(record)
    except KeyError:
        raise RuntimeError(f"PytorchStreamReader failed locating file {record}: file not found "
                           f"({name})") from None


def record_size(zf: zipfile.ZipFile, record: str, name: str) -> int:
    """The uncompressed size the archive declares for ``record``."""
    return _info(zf, record, name).file_size


def read_record(zf: zipfile.ZipFile, record: str, name: str, out: np.ndarray | None = None):
    """A record's bytes, or (``out`` given) its bytes read straight into ``out``, CRC-checked."""
    info = _info(zf, record, name)
    try:
        if out is None:
            return zf.read(info)
        if info.file_size != out.nbytes:
            raise zipfile.BadZipFile(f"record holds {info.file_size} bytes, expected "
                                     f"{out.nbytes}")
        if info.compress_type != zipfile.ZIP_STORED:
            with zf.open(info) as fh:
                if fh.readinto(out) != out.nbytes or fh.read(1):
                    raise zipfile.BadZipFile("record size differs from its header")
            return out
        # Stored records: one readinto from the file, no chunked copies through zipfile.
        zf.fp.seek(_data_offset(zf, info))
        n = zf.fp.readinto(out)
        if n != out.nbytes:
            raise zipfile.BadZipFile(f"record is truncated ({n} of {out.nbytes} bytes)")
        if zlib.crc32(out) != info.CRC:
            raise zipfile.BadZipFile(f"Bad CRC-32 for file {record!r}")
        return out
    except _ZIP_ERRORS as e:
        raise _record_error(record, name, e) from None


def _data_offset(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> int:
    """Where a record's data starts: after its local header (whose extra field may differ
    from the central directory's)."""
    zf.fp.seek(info.header_offset)
    head = zf.fp.read(30)
    if len(head) != 30 or head[:4] != b"PK\x03\x04":
        raise zipfile.BadZipFile("bad local file header")
    return (info.header_offset + 30 + int.from_bytes(head[26:28], "little")
            + int.from_bytes(head[28:30], "little"))


def mmap_record(zf: zipfile.ZipFile, record: str, path: str, name: str, dt: np.dtype,
                numel: int) -> np.ndarray | None:
    """Map a stored record's bytes copy-on-write (torch's ``mmap=True``); None if it can't be."""
    info = _info(zf, record, name)
    if info.compress_type != zipfile.ZIP_STORED or numel == 0:
        return None
    try:
        start = _data_offset(zf, info)
        size = os.path.getsize(path)
    except _ZIP_ERRORS as e:
        raise _record_error(record, name, e) from None
    if start + numel * dt.itemsize > size or info.file_size != numel * dt.itemsize:
        raise RuntimeError(f"PytorchStreamReader failed reading file {record}: the record is "
                           f"truncated ({name})")
    return np.memmap(path, dtype=dt, mode="c", offset=start, shape=(numel,)).view(np.ndarray)
