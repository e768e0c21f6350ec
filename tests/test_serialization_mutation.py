"""Mutated checkpoints: every load gives a well-formed result or a clean error, never more.

Valid checkpoints (ember's and torch's: tensors of every dtype, shared-storage views, a model's
and an optimizer's state_dict, nested containers, tensors with attributes) have their data.pkl
flipped, overwritten, cut, spliced with other pickles' bytes and injected with state-changing
opcode sequences (with a valid CRC, so that the unpickler sees them). Each load must return a
result built only of allowed, consistent objects, or raise exactly ``pickle.UnpicklingError``
or ``RuntimeError``; and afterwards ember's own objects (dtypes, classes, rebuild functions,
module namespaces) must be unchanged.
"""

from __future__ import annotations

import io
import pickle
import pickletools
import sys
import types
import zipfile
from collections import Counter, OrderedDict

import numpy as np
import pytest
import torch

import ember
from ember import _dtype, _serialization_load, _tensor, _weights_only_unpickler, serialization
from ember._backend import CPU
from ember.nn.parameter import Parameter

SEED = 20261125


def _checkpoints() -> dict[str, bytes]:
    """name -> bytes of a valid checkpoint."""
    rng = np.random.default_rng(0)
    dtypes = {d: ember.from_numpy((rng.standard_normal((2, 3)) * 5).astype(d))
              for d in ("float32", "float64", "float16", "int64", "int32", "int16", "int8",
                        "uint8")}
    dtypes["bool"] = ember.from_numpy(rng.random((2, 3)) < 0.5)
    base = ember.from_numpy(rng.standard_normal((4, 5)).astype("float32"))
    views = {"base": base, "row": base[1], "col": base[:, 2], "t": base.t(), "s": base[1:3, ::2]}
    model = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.BatchNorm1d(4),
                                ember.nn.Linear(4, 2))
    opt = ember.optim.Adam(model.parameters(), lr=0.1)
    model(ember.randn(5, 3)).sum().backward()
    opt.step()
    tagged = ember.ones(2)
    tagged.tag = "hello"
    param = Parameter(ember.zeros(3))
    param.note = [1, 2]
    nested = {"list": [ember.ones(2), {"deep": (ember.zeros(1), 3)}], "tuple": (1, 2.5, "x"),
              "none": None, "flag": True, "bytes": b"\x00\x01", "size": ember.Size([2, 3]),
              "dtype": ember.float16, "device": ember.device("cpu"), "big": 2**70,
              "od": OrderedDict(a=1), "set": {1, 2}, "counter": Counter("aab"),
              "complex": 1 + 2j, "bytearray": bytearray(b"ab"), "tagged": tagged, "p": param}
    objs = {"dtypes": dtypes, "views": views, "model": model.state_dict(),
            "optim": opt.state_dict(), "nested": nested}
    out = {}
    for name, obj in objs.items():
        for protocol in (2, 4):
            buf = io.BytesIO()
            ember.save(obj, buf, pickle_protocol=protocol)
            out[f"{name}-p{protocol}"] = buf.getvalue()
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    buf = io.BytesIO()
    torch.save(tm.state_dict(), buf)  # an OrderedDict with _metadata: a legitimate BUILD
    out["torch-model"] = buf.getvalue()
    return out


def _pkl_name(zf: zipfile.ZipFile) -> str:
    return next(n for n in zf.namelist() if n.endswith("/data.pkl"))


def _with_pkl(ckpt: bytes, pkl: bytes) -> bytes:
    """The checkpoint with its data.pkl replaced (and a CRC that matches the new bytes)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(ckpt)) as zin, zipfile.ZipFile(out, "w") as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, pkl if info.filename.endswith("/data.pkl")
                          else zin.read(info))
    return out.getvalue()


def _opcode_starts(pkl: bytes) -> list[int]:
    return [pos for _, _, pos in pickletools.genops(pkl)]


def _u(s: str) -> bytes:
    b = s.encode()
    return b"X" + len(b).to_bytes(4, "little") + b


def _g(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def _set_slot(key: str, value: bytes) -> bytes:
    """BUILD with (None, {key: value}): setattr(top of stack, key, value) in plain pickle."""
    return b"N}" + _u(key) + value + b"s\x86b0"


def _set_dict(key: str, value: bytes) -> bytes:
    """BUILD with {key: value}: top of stack's __dict__ updated in plain pickle."""
    return b"}" + _u(key) + value + b"sb0"


# Stack-neutral sequences that try to change state on something the load did not build; put
# between two opcodes of a valid pickle, the rest still loads (if they are refused, all fails).
INJECTIONS = [
    _g("torch", "float32") + _set_slot("np", _u("int8")),
    _g("torch", "float32") + _set_slot("is_floating_point", b"\x89"),
    _g("torch.nn.parameter", "Parameter") + _set_slot("requires_grad", b"\x89"),
    _g("torch.nn.parameter", "Parameter") + _set_dict("__repr__", b"N"),
    _g("torch._utils", "_rebuild_tensor_v2") + _set_slot("__defaults__", b")"),
    _g("torch._utils", "_rebuild_tensor_v2") + _set_slot("__kwdefaults__", b"}"),
    _g("torch._utils", "_rebuild_parameter") + _set_dict("__defaults__", b"(\x89}t"),
    _g("torch._tensor", "_rebuild_from_type_v2") + _set_slot("__code__", b"N"),
    _g("torch", "Tensor") + _set_slot("__add__", b"N"),
    _g("torch", "device") + _set_slot("__init__", b"N"),
    _g("torch", "FloatStorage") + _set_dict("dtype", _g("torch", "int8")),
    _g("collections", "OrderedDict") + _u("x") + b"K\x01s0",
    _g("collections", "Counter") + b"(" + _u("x") + b"K\x01u0",
    _g("torch", "Size") + b"K\x01a0",
    _g("builtins", "set") + b"(K\x01\x900",
    # a fresh container is fine: these leave ember alone and must load
    b"}" + _u("k") + b"K\x01s0",
    b"]K\x01a0",
]


def _mutants(pkls: list[bytes], n: int, rng: np.random.Generator):
    """(index of the checkpoint, mutated data.pkl) pairs, ``n`` of them."""
    kinds = ["flip", "byte", "opcode", "delete", "dup", "splice", "truncate", "inject"]
    opcodes = [op.code.encode("latin-1") for op in pickletools.opcodes]
    for i in range(n):
        k = int(rng.integers(len(pkls)))
        p = bytearray(pkls[k])
        kind = kinds[i % len(kinds)]
        pos = int(rng.integers(len(p)))
        if kind == "flip":
            p[pos] ^= 1 << int(rng.integers(8))
        elif kind == "byte":
            p[pos] = int(rng.integers(256))
        elif kind == "opcode":
            starts = _opcode_starts(bytes(p))
            p[starts[int(rng.integers(len(starts)))]] = opcodes[int(rng.integers(len(opcodes)))][0]
        elif kind == "delete":
            del p[pos:pos + int(rng.integers(1, 16))]
        elif kind == "dup":
            p[pos:pos] = p[pos:pos + int(rng.integers(1, 16))]
        elif kind == "splice":
            other = pkls[int(rng.integers(len(pkls)))]
            a = int(rng.integers(len(other)))
            p[pos:pos + int(rng.integers(0, 8))] = other[a:a + int(rng.integers(1, 32))]
        elif kind == "truncate":
            del p[pos:]
        else:
            starts = _opcode_starts(bytes(p))[1:-1]  # after PROTO, before STOP
            at = starts[int(rng.integers(len(starts)))]
            p[at:at] = INJECTIONS[i // len(kinds) % len(INJECTIONS)]
        yield k, bytes(p)


# --- what "unchanged" means ---------------------------------------------------------------
def _snapshot() -> dict:
    """ember's process-wide objects that a checkpoint must not be able to change."""
    snap: dict = {}
    for d in _dtype.ALL:
        snap[repr(d)] = tuple((s, getattr(d, s)) for s in type(d).__slots__)
    for cls in (ember.Tensor, Parameter, ember.device, ember.Size, _dtype.dtype,
                _serialization_load.StorageType, _serialization_load._LoadedStorage,
                _weights_only_unpickler.WeightsOnlyUnpickler, OrderedDict, Counter):
        snap[cls] = {k: id(v) for k, v in vars(cls).items()}
    for mod in (ember, _tensor, _dtype, _serialization_load, _weights_only_unpickler,
                serialization, sys.modules["ember.nn.parameter"]):
        snap[mod.__name__] = {k: id(v) for k, v in vars(mod).items()}
        for k, v in vars(mod).items():
            if isinstance(v, types.FunctionType):
                snap[(mod.__name__, k)] = (v.__defaults__, v.__kwdefaults__, v.__code__,
                                           dict(vars(v)))
    snap["safe globals"] = list(serialization.get_safe_globals())
    snap["cpu"] = (CPU.type, CPU.index)
    snap["state"] = (ember.get_default_dtype(), ember.is_grad_enabled())
    return snap


def _behaves() -> None:
    t = ember.tensor([0.5, 1.5, 300.0])
    assert t.dtype is ember.float32 and t.tolist() == [0.5, 1.5, 300.0]
    assert Parameter(ember.ones(1)).requires_grad


# --- what "well formed" means -------------------------------------------------------------
_LEAVES = (type(None), bool, int, float, complex, str, bytes, bytearray, _dtype.dtype,
           ember.device, _serialization_load.StorageType)
_CONTAINERS = (list, tuple, set, frozenset, dict, OrderedDict, Counter, ember.Size)


def _well_formed(obj, allowed_ids: set, seen: set) -> None:
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, ember.Tensor):
        data = obj._data
        assert type(data) is np.ndarray and obj.dtype in _dtype.ALL
        assert tuple(obj.shape) == data.shape and obj.dtype.np == data.dtype
        if data.size <= 10**6:
            obj.tolist()
        _well_formed(obj.__dict__, allowed_ids, seen)
    elif type(obj) in _CONTAINERS:
        items = obj.items() if isinstance(obj, dict) else [(None, v) for v in obj]
        for k, v in items:
            _well_formed(k, allowed_ids, seen)
            _well_formed(v, allowed_ids, seen)
        if type(obj) is OrderedDict:
            _well_formed(vars(obj), allowed_ids, seen)
    elif type(obj) is ember.device:
        assert (obj.type, obj.index) == (ember.device(str(obj)).type, ember.device(str(obj)).index)
    else:
        assert type(obj) in _LEAVES or id(obj) in allowed_ids, type(obj)


def _shape_of(obj):
    """The structure of a loaded object: containers (type, length), tensors (class, dtype) and
    where the other values are (a mutated number or name is still a value)."""
    if isinstance(obj, ember.Tensor):
        return (type(obj).__name__, obj.dtype)
    if isinstance(obj, dict):
        return (type(obj).__name__, tuple(_shape_of(v) for v in obj.values()))
    if type(obj) in (list, tuple):
        return (type(obj).__name__, tuple(_shape_of(v) for v in obj))
    return "value"


def _load(data: bytes):
    return ember.load(io.BytesIO(data))


def test_mutated_pickles_load_cleanly_and_change_nothing():
    ckpts = list(_checkpoints().values())
    pkls = []
    for c in ckpts:
        with zipfile.ZipFile(io.BytesIO(c)) as zf:
            pkls.append(zf.read(_pkl_name(zf)))
    originals = [_shape_of(_load(c)) for c in ckpts]
    allowed_ids = {id(v) for v in _serialization_load._allowed_globals().values()}
    allowed_ids |= {id(d) for d in _dtype.ALL}
    before = _snapshot()
    rng = np.random.default_rng(SEED)
    tally = Counter()
    for k, pkl in _mutants(pkls, 960, rng):
        try:
            out = _load(_with_pkl(ckpts[k], pkl))
        except (pickle.UnpicklingError, RuntimeError) as e:
            # exactly these (NotImplementedError and RecursionError are RuntimeErrors too)
            assert type(e) in (pickle.UnpicklingError, RuntimeError), repr(e)
            tally["refused"] += 1
            continue
        # anything else propagates and fails the test
        _well_formed(out, allowed_ids, set())
        tally["same" if _shape_of(out) == originals[k] else "other"] += 1
    assert _snapshot() == before
    _behaves()
    # Most mutants are refused; a changed number or name loads with the original structure.
    # A few are other valid pickles (a STOP moved forward, a memo index pointing elsewhere):
    # no loader can tell those from an intended file, so they are held to being well formed.
    assert tally["refused"] > 600 and tally["same"] > 20, tally


def test_injected_state_changes_are_refused():
    """Each injection between two opcodes of a valid pickle is refused, or (a fresh container)
    loads; the dtypes, Parameter and rebuild functions are untouched either way."""
    ckpt = _checkpoints()["model-p2"]
    with zipfile.ZipFile(io.BytesIO(ckpt)) as zf:
        pkl = zf.read(_pkl_name(zf))
    at = _opcode_starts(pkl)[1]
    before = _snapshot()
    for inj in INJECTIONS:
        data = _with_pkl(ckpt, pkl[:at] + inj + pkl[at:])
        if inj.startswith((b"}", b"]")):
            assert list(_load(data)) == list(_load(ckpt))
            continue
        with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
            _load(data)
    assert _snapshot() == before
    _behaves()


def test_mutated_archives_fail_cleanly():
    """Bytes flipped anywhere in the file (zip headers, records, central directory): a result
    or a clean error."""
    rng = np.random.default_rng(SEED + 1)
    ckpts = list(_checkpoints().values())
    before = _snapshot()
    for i in range(160):
        data = bytearray(ckpts[i % len(ckpts)])
        for _ in range(1 + i % 3):
            data[int(rng.integers(len(data)))] ^= 1 << int(rng.integers(8))
        try:
            _load(bytes(data))
        except (pickle.UnpicklingError, RuntimeError) as e:
            assert type(e) in (pickle.UnpicklingError, RuntimeError), repr(e)
    assert _snapshot() == before
