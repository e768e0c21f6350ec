"""Hostile and damaged checkpoints: torch's weights-only rules and torch's errors.

Each file is loaded by ember and by torch: ember must refuse what torch refuses, with the same
exception type and key phrase, and must not be changed by what it refuses.
"""

from __future__ import annotations

import io
import pickle
import struct
import zipfile
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ember
from ember import serialization
from ember._serialization_load import _rebuild_tensor_v2


def _archive(path, pkl: bytes, records: dict[str, bytes] | None = None) -> None:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", pkl)
        z.writestr("archive/version", "3\n")
        for k, v in (records or {}).items():
            z.writestr(f"archive/{k}", v)


def _u(s: str) -> bytes:
    return b"X" + len(s.encode()).to_bytes(4, "little") + s.encode()


def _both_refuse(path, phrase: str) -> None:
    for lib in (ember, torch):
        with pytest.raises(pickle.UnpicklingError, match="Weights only load failed") as ei:
            lib.load(path)
        assert phrase in str(ei.value), (lib.__name__, str(ei.value))


def test_issue_reproducer_is_refused_and_changes_nothing(tmp_path):
    pkl = b"\x80\x02ctorch\nfloat32\nN}X\x02\x00\x00\x00npX\x04\x00\x00\x00int8s\x86b0}."
    _archive(tmp_path / "evil.pt", pkl)
    _both_refuse(tmp_path / "evil.pt", "Can only build")
    e, t = ember.tensor([0.5, 1.5, 300.0]), torch.tensor([0.5, 1.5, 300.0])
    assert e.dtype is ember.float32 and e.tolist() == t.tolist()
    assert ember.float32.np == np.float32


@pytest.mark.parametrize("pkl", [
    # Parameter.requires_grad = False for every Parameter (a class attribute over the property)
    b"ctorch.nn.parameter\nParameter\nN}" + _u("requires_grad") + b"\x89s\x86b0",
    # the rebuild functions' defaults and keyword defaults
    b"ctorch._utils\n_rebuild_tensor_v2\nN}" + _u("__defaults__") + b")s\x86b0",
    b"ctorch._utils\n_rebuild_tensor_v2\n}" + _u("__kwdefaults__") + b"}sb0",
    b"ctorch._tensor\n_rebuild_from_type_v2\nN}" + _u("__defaults__") + b"(K\x01ts\x86b0",
    # a dtype's numpy type, through its __dict__ form
    b"ctorch\nint64\n}" + _u("itemsize") + b"K\x01sb0",
], ids=["Parameter.requires_grad", "__defaults__", "__kwdefaults__", "from_type_defaults",
        "dtype"])
def test_state_of_globals_cannot_be_set(tmp_path, pkl):
    _archive(tmp_path / "evil.pt", b"\x80\x02" + pkl + b"}.")
    _both_refuse(tmp_path / "evil.pt", "Can only build")
    assert ember.nn.Parameter(ember.ones(1)).requires_grad
    assert _rebuild_tensor_v2.__defaults__ == (None,) and _rebuild_tensor_v2.__kwdefaults__ is None
    assert ember.int64.itemsize == 8
    assert ember.load(io.BytesIO(_saved({"w": ember.ones(2)})))["w"].tolist() == [1.0, 1.0]


def _saved(obj) -> bytes:
    buf = io.BytesIO()
    ember.save(obj, buf)
    return buf.getvalue()


@pytest.mark.parametrize("pkl,phrase", [
    (b"ccollections\nOrderedDict\n" + _u("k") + b"K\x01s0", "Can only SETITEM"),
    (b"ccollections\nCounter\n(" + _u("k") + b"K\x01u0", "Can only SETITEMS"),
    (b"ctorch\nSize\nK\x01a0", "append"),
    (b"ctorch\nSize\n(K\x01e0", "extend"),
], ids=["SETITEM", "SETITEMS", "APPEND", "APPENDS"])
def test_containers_of_globals_cannot_be_filled(tmp_path, pkl, phrase):
    _archive(tmp_path / "evil.pt", b"\x80\x02" + pkl + b"}.")
    for lib in (ember, torch):
        with pytest.raises(pickle.UnpicklingError, match=phrase):
            lib.load(tmp_path / "evil.pt")


TABLE = {"a": 1}
REGISTRY = [1]


def test_allowlisted_objects_are_not_mutable_from_a_file(tmp_path):
    """An object given to add_safe_globals may be referenced, not changed (torch would let
    SETITEM fill an allow-listed dict: ember only fills containers the file built)."""
    _archive(tmp_path / "d.pt", b"\x80\x02cmy\nTABLE\n" + _u("b") + b"K\x02s.")
    _archive(tmp_path / "l.pt", b"\x80\x02cmy\nREGISTRY\nK\x02a.")
    _archive(tmp_path / "ok.pt", b"\x80\x02cmy\nTABLE\n.")
    with serialization.safe_globals([(TABLE, "my.TABLE"), (REGISTRY, "my.REGISTRY")]):
        assert ember.load(tmp_path / "ok.pt") is TABLE
        with pytest.raises(pickle.UnpicklingError, match="Can only SETITEM"):
            ember.load(tmp_path / "d.pt")
        with pytest.raises(pickle.UnpicklingError, match="Can only append"):
            ember.load(tmp_path / "l.pt")
    assert TABLE == {"a": 1} and REGISTRY == [1]


class Point:
    """A user class: allow-listed, it loads with its state (NEWOBJ + BUILD)."""

    def __init__(self, x, y):
        self.x, self.y = x, y


def test_legitimate_build_still_loads(tmp_path):
    tm = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.BatchNorm1d(3))
    torch.save(tm.state_dict(), tmp_path / "sd.pt")  # an OrderedDict with _metadata
    sd = ember.load(tmp_path / "sd.pt")
    assert type(sd) is OrderedDict and list(sd) == list(tm.state_dict())
    assert sd._metadata == tm.state_dict()._metadata
    torch.save({"p": Point(1, [2])}, tmp_path / "pt.pt")
    with pytest.raises(pickle.UnpicklingError, match="test_serialization_safety.Point"):
        ember.load(tmp_path / "pt.pt")
    with serialization.safe_globals([Point]):
        p = ember.load(tmp_path / "pt.pt")["p"]
    with torch.serialization.safe_globals([Point]):
        q = torch.load(tmp_path / "pt.pt")["p"]
    assert type(p) is Point and (p.x, p.y) == (q.x, q.y) == (1, [2])


def test_tensor_internals_cannot_be_set_from_a_file(tmp_path):
    x = ember.ones(2)
    x.tag = "hello"
    good = _saved(x)
    with zipfile.ZipFile(io.BytesIO(good)) as z:
        pkl, storage = z.read("archive/data.pkl"), z.read("archive/data/0")
    assert _u("tag") in pkl
    for key in ("_data", "_grad_fn", "__class__"):
        bad = pkl.replace(_u("tag"), _u(key))
        _archive(tmp_path / "t.pt", bad, {"data/0": storage})
        with pytest.raises(RuntimeError, match="Invalid serialized state"):
            ember.load(tmp_path / "t.pt")


def test_allocation_bombs_are_refused(tmp_path):
    # bytearray(2**40) through the allow-listed builtins.bytearray, and BYTEARRAY8 declaring
    # 2**40 bytes: neither may allocate before the file shows the bytes
    _archive(tmp_path / "a.pt", b"\x80\x02c__builtin__\nbytearray\n\x8a\x06\x00\x00\x00\x00\x00"
             b"\x01\x85R.")
    with pytest.raises(pickle.UnpicklingError, match="bytearray"):
        ember.load(tmp_path / "a.pt")
    _archive(tmp_path / "b.pt", b"\x80\x05\x96" + (2**40).to_bytes(8, "little") + b"ab.")
    with pytest.raises(pickle.UnpicklingError, match="BYTEARRAY8"):
        ember.load(tmp_path / "b.pt")
    assert ember.load(io.BytesIO(_saved(bytearray(b"xy")))) == bytearray(b"xy")


def test_a_bare_storage_is_refused_clearly(tmp_path):
    with pytest.warns(UserWarning):
        torch.save({"s": torch.ones(3).storage()}, tmp_path / "s.pt")
    assert torch.load(tmp_path / "s.pt")["s"].tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(RuntimeError, match="storage outside any tensor"):
        ember.load(tmp_path / "s.pt")


def _patch_numel(src, dst, numel: int) -> None:
    """Rewrite a one-tensor checkpoint's declared storage size (its ``numel`` field)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename.endswith("data.pkl"):
                assert data.count(b"K\x04t") == 1
                data = data.replace(b"K\x04t", b"\x8a\x08" + numel.to_bytes(8, "little") + b"t")
            zout.writestr(info, data)


@pytest.mark.parametrize("numel", [5, 2**40, 2**50])
def test_declared_storage_size_is_checked_before_allocating(tmp_path, numel):
    torch.save(torch.ones(4), tmp_path / "t.pt")
    _patch_numel(tmp_path / "t.pt", tmp_path / "h.pt", numel)
    phrase = "record size \\(16 bytes\\) does not match expected size"
    with pytest.raises(RuntimeError, match=phrase) as ei:
        ember.load(tmp_path / "h.pt")
    assert "h.pt" in str(ei.value) and "data/0" in str(ei.value)
    with pytest.raises(RuntimeError, match=phrase):
        torch.load(tmp_path / "h.pt")


def _patch_zip_field(data: bytes, signature: bytes, offset: int, value: int) -> bytes:
    """Set a 2-byte field at ``offset`` in every zip header with ``signature``."""
    out = bytearray(data)
    i = out.find(signature)
    while i >= 0:
        out[i + offset:i + offset + 2] = struct.pack("<H", value)
        i = out.find(signature, i + 4)
    return bytes(out)


def test_zip_version_needed_is_ignored_as_torch_does(tmp_path):
    torch.save({"w": torch.arange(4.0)}, tmp_path / "t.pt")
    data = (tmp_path / "t.pt").read_bytes()
    for version in (84, 0xFFFF):  # "zip file version 8.4"
        bad = _patch_zip_field(data, b"PK\x01\x02", 6, version)  # central directory
        bad = _patch_zip_field(bad, b"PK\x03\x04", 4, version)  # local headers
        (tmp_path / "v.pt").write_bytes(bad)
        assert torch.load(tmp_path / "v.pt")["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
        assert ember.load(tmp_path / "v.pt")["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
        assert ember.load(tmp_path / "v.pt", mmap=True)["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
        assert ember.load(io.BytesIO(bad))["w"].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_unsupported_compression_method_is_a_runtime_error(tmp_path):
    torch.save({"w": torch.ones(2)}, tmp_path / "t.pt")
    data = (tmp_path / "t.pt").read_bytes()
    bad = _patch_zip_field(data, b"PK\x01\x02", 10, 99)
    (tmp_path / "m.pt").write_bytes(_patch_zip_field(bad, b"PK\x03\x04", 8, 99))
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match="PytorchStreamReader failed") as ei:
            lib.load(tmp_path / "m.pt")
        assert type(ei.value) is RuntimeError
    with pytest.raises(RuntimeError, match="m.pt"):
        ember.load(tmp_path / "m.pt")


def test_garbled_deflated_record_is_a_runtime_error(tmp_path):
    """(torch's reader decompresses such garbage unchecked and fails later, in the unpickler
    or not at all: ember checks the stream and names the record.)"""
    ember.save({"w": ember.ones(64)}, tmp_path / "e.pt")
    with zipfile.ZipFile(tmp_path / "e.pt") as zin, \
            zipfile.ZipFile(tmp_path / "d.pt", "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, zin.read(info))
    assert ember.load(tmp_path / "d.pt")["w"].tolist() == [1.0] * 64
    with zipfile.ZipFile(tmp_path / "d.pt") as z:
        for name in ("e/data.pkl", "e/data/0"):
            info = z.getinfo(name)
            start = info.header_offset + 30 + len(info.filename) + len(info.extra)
            data = bytearray((tmp_path / "d.pt").read_bytes())
            data[start:start + 4] = b"\xff\xff\xff\xff"  # not a deflate stream: zlib.error
            (tmp_path / "g.pt").write_bytes(bytes(data))
            with pytest.raises(RuntimeError, match=f"PytorchStreamReader failed reading file "
                                                   f"{name}") as ei:
                ember.load(tmp_path / "g.pt")
            assert type(ei.value) is RuntimeError and "g.pt" in str(ei.value)


@pytest.mark.parametrize("pid", [b"(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00"
                                 b"\x000X\x03\x00\x00\x00cpuJ\xff\xff\xff\xfftQ",
                                 b"(X\x03\x00\x00\x00fooK\x01tQ", b"K\x05Q"],
                         ids=["negative numel", "not a storage", "an int"])
def test_bad_persistent_ids_are_refused(tmp_path, pid):
    _archive(tmp_path / "p.pt", b"\x80\x02" + pid + b".", {"data/0": b"\x00" * 4})
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        ember.load(tmp_path / "p.pt")
