"""Reading and checking IDX files (the MNIST format), gzipped or not."""

from __future__ import annotations

import gzip
import math
import os
import zlib

import numpy as np

_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


class IDXError(RuntimeError):
    """A file that is not a valid IDX file; the message names the file."""


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """The array stored in an IDX file; IDXError for a bad magic number, dims or length."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            raw = f.read()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as e:  # gzip.BadGzipFile is an OSError
        raise IDXError(f"{path}: cannot read IDX file ({type(e).__name__}: {e})") from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _TYPES:
        raise IDXError(f"{path}: not an IDX file (bad magic number {raw[:4].hex() or 'empty'})")
    ndim = raw[3]
    if ndim == 0 or len(raw) < 4 + 4 * ndim:
        raise IDXError(f"{path}: truncated IDX header ({ndim} dimensions)")
    dims = tuple(int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    dt = np.dtype(_TYPES[raw[2]])
    expected = math.prod(dims) * dt.itemsize
    body = raw[4 + 4 * ndim:]
    if len(body) != expected:
        raise IDXError(f"{path}: IDX data length {len(body)} does not match dimensions "
                       f"{list(dims)} ({expected} bytes expected; file truncated or corrupt)")
    return np.frombuffer(body, dtype=dt).reshape(dims).astype(dt.newbyteorder("="))


def write_idx(path: str | os.PathLike, array: np.ndarray, compress: bool | None = None) -> None:
    """Write ``array`` as an IDX file (gzipped if the name ends in .gz)."""
    path = os.fspath(path)
    code = {np.dtype(v).newbyteorder("="): k for k, v in _TYPES.items()}[
        np.dtype(array.dtype).newbyteorder("=")]
    header = bytes([0, 0, code, array.ndim]) + b"".join(
        int(d).to_bytes(4, "big") for d in array.shape)
    body = np.ascontiguousarray(array).astype(np.dtype(_TYPES[code])).tobytes()
    data = header + body
    if compress if compress is not None else path.endswith(".gz"):
        data = gzip.compress(data)
    with open(path, "wb") as f:
        f.write(data)
