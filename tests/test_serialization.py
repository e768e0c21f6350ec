"""ember.save / ember.load against torch's checkpoint format, both directions."""

from __future__ import annotations

import io
import os
import pathlib
import pickle
import zipfile
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ember
from ember import serialization

DTYPES = ["float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8", "bool"]


def _arr(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    return (rng.standard_normal(shape) * 10).astype(dtype)


def _same(e, t):
    """An ember tensor equals a torch tensor: values, dtype, shape, strides and offset."""
    assert isinstance(e, ember.Tensor) and isinstance(t, torch.Tensor)
    assert str(e.dtype).removeprefix("ember.") == str(t.dtype).removeprefix("torch.")
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_array_equal(e.detach().numpy(), t.detach().numpy())
    assert e.requires_grad == t.requires_grad
    if t.numel() > 1:
        assert e.stride() == t.stride()
        assert e.storage_offset() == t.storage_offset()


def _plain_state(m):
    """Tensors of every dtype, 0-d, empty, non-contiguous, and views sharing one storage."""
    base = m.tensor(_arr((4, 5), "float32"))
    d = OrderedDict()
    for i, dt in enumerate(DTYPES):
        d[dt] = m.from_numpy(_arr((2, 3), dt, seed=i).copy())
    d["scalar"] = m.tensor(2.5)
    d["int0d"] = m.tensor(7)
    d["empty"] = m.zeros(0, 3)
    d["base"] = base
    d["row"] = base[1]
    d["col"] = base[:, 2]
    d["t"] = base.t()
    d["slice"] = base[1:3, ::2]
    return d


def _save_load(obj_e, path):
    ember.save(obj_e, path)
    return torch.load(path, weights_only=True)


def test_ember_to_torch_to_ember(tmp_path):
    e = _plain_state(ember)
    t = _save_load(e, tmp_path / "e.pt")
    assert type(t) is OrderedDict and list(t) == list(e)
    for k in e:
        _same(e[k], t[k])
    # Views share one storage in torch after loading ember's file.
    ptr = t["base"].untyped_storage().data_ptr()
    assert all(t[k].untyped_storage().data_ptr() == ptr for k in ("row", "col", "t", "slice"))
    torch.save(t, tmp_path / "t.pt")
    e2 = ember.load(tmp_path / "t.pt")
    for k in e:
        _same(e2[k], t[k])
    e2["base"].mul_(0)
    for k in ("row", "col", "t", "slice"):
        assert not e2[k].detach().numpy().any(), k  # still one storage in ember


def test_torch_to_ember_to_torch(tmp_path):
    t = _plain_state(torch)
    torch.save(t, tmp_path / "t.pt")
    e = ember.load(tmp_path / "t.pt")
    for k in t:
        _same(e[k], t[k])
    ember.save(e, tmp_path / "e.pt")
    t2 = torch.load(tmp_path / "e.pt", weights_only=True)
    for k in t:
        assert torch.equal(t2[k], t[k]) and t2[k].stride() == t[k].stride()
        assert t2[k].storage_offset() == t[k].storage_offset()
    t2["base"].zero_()
    assert not t2["col"].any() and not t2["t"].any()


def test_pickle_bytes_identical_to_torch():
    a = _arr((2, 3), "float32")

    def make(m):
        w = m.tensor(a)
        return OrderedDict([("w", w), ("v", w[:, 1]), ("n", m.tensor(3)),
                            ("x", [1, 2.5, "s", None, True, (1, 2)])])

    eb, tb = io.BytesIO(), io.BytesIO()
    ember.save(make(ember), eb)
    torch.save(make(torch), tb)
    ez, tz = zipfile.ZipFile(eb), zipfile.ZipFile(tb)
    assert ez.namelist() == tz.namelist()
    for name in ez.namelist():
        if not name.endswith("serialization_id"):
            assert ez.read(name) == tz.read(name), name
    for info in ez.infolist():  # every record's data is 64-byte aligned
        assert (info.header_offset + 30 + len(info.filename) + len(info.extra)) % 64 == 0
    assert ez.read("archive/version") == b"3\n"
    assert ez.read("archive/byteorder") == b"little"


def test_archive_name_follows_file_name(tmp_path):
    ember.save({"a": ember.ones(1)}, tmp_path / "model.best.pt")
    names = zipfile.ZipFile(tmp_path / "model.best.pt").namelist()
    assert names[0] == "model.best/data.pkl"


def test_non_contiguous_and_negative_strides(tmp_path):
    a = _arr((3, 4), "float64")
    e = {"neg": ember.from_numpy(a[::-1]), "step": ember.from_numpy(a[:, ::2]),
         "bcast": ember.from_numpy(np.broadcast_to(a[0], (3, 4)))}
    t = _save_load(e, tmp_path / "n.pt")
    for k in e:
        np.testing.assert_array_equal(t[k].numpy(), e[k].numpy())
    assert t["step"].stride() == (4, 2) and t["bcast"].stride() == (0, 1)


def test_parameters_round_trip(tmp_path):
    p = ember.nn.Parameter(ember.tensor([[1.0, 2.0]]))
    frozen = ember.nn.Parameter(ember.ones(2), requires_grad=False)
    t = _save_load({"p": p, "f": frozen}, tmp_path / "p.pt")
    assert isinstance(t["p"], torch.nn.Parameter) and t["p"].requires_grad
    assert isinstance(t["f"], torch.nn.Parameter) and not t["f"].requires_grad
    torch.save(t, tmp_path / "t.pt")
    e = ember.load(tmp_path / "t.pt")
    assert isinstance(e["p"], ember.nn.Parameter) and e["p"].requires_grad
    assert not e["f"].requires_grad
    _same(e["p"], t["p"])


def test_nested_structures_and_plain_values(tmp_path):
    obj = {"list": [ember.ones(2), {"deep": (ember.zeros(1), 3)}], "tuple": (1, 2.5, "x"),
           "none": None, "flag": True, "bytes": b"\x00\x01", "size": ember.Size([2, 3]),
           "dtype": ember.float16, "device": ember.device("cpu"), "big": 2**70,
           "od": OrderedDict(a=1), "set": {1, 2}}
    t = _save_load(obj, tmp_path / "n.pt")
    assert t["tuple"] == (1, 2.5, "x") and t["none"] is None and t["flag"] is True
    assert t["bytes"] == b"\x00\x01" and t["size"] == torch.Size([2, 3])
    assert t["dtype"] is torch.float16 and t["device"] == torch.device("cpu")
    assert t["big"] == 2**70 and type(t["od"]) is OrderedDict and t["set"] == {1, 2}
    torch.save(t, tmp_path / "t.pt")
    e = ember.load(tmp_path / "t.pt")
    assert e["size"] == ember.Size([2, 3]) and type(e["size"]) is ember.Size
    assert e["dtype"] is ember.float16 and e["device"] == ember.device("cpu")
    assert type(e["list"][1]["deep"]) is tuple and e["list"][1]["deep"][1] == 3
    assert e["list"][0].tolist() == [1.0, 1.0]


def test_tensor_attributes_survive(tmp_path):
    x = ember.ones(2)
    x.tag = "hello"
    t = _save_load(x, tmp_path / "x.pt")
    assert t.tag == "hello"
    torch.save(t, tmp_path / "t.pt")
    assert ember.load(tmp_path / "t.pt").tag == "hello"


def test_optimizer_state_dicts_cross_over(tmp_path):
    rng = np.random.default_rng(0)
    w0, grads = rng.standard_normal((3, 2)), rng.standard_normal((6, 3, 2))
    ew = ember.tensor(w0, requires_grad=True)
    tw = torch.tensor(w0, requires_grad=True)
    eo = ember.optim.Adam([ew], lr=0.1, amsgrad=True)
    to = torch.optim.Adam([tw], lr=0.1, amsgrad=True)
    for g in grads[:3]:
        ew.grad, tw.grad = ember.tensor(g), torch.tensor(g)
        eo.step()
        to.step()
    ember.save(eo.state_dict(), tmp_path / "eo.pt")
    tsd = torch.load(tmp_path / "eo.pt", weights_only=True)
    assert tsd["param_groups"] == to.state_dict()["param_groups"]
    assert tsd["state"][0]["step"].dtype == torch.float32
    to2 = torch.optim.Adam([tw], lr=0.5)
    to2.load_state_dict(tsd)
    torch.save(to.state_dict(), tmp_path / "to.pt")
    eo2 = ember.optim.Adam([ew], lr=0.5)
    eo2.load_state_dict(ember.load(tmp_path / "to.pt"))
    for g in grads[3:]:
        ew.grad, tw.grad = ember.tensor(g), torch.tensor(g)
        eo2.step()
        to2.step()
    np.testing.assert_allclose(ew.detach().numpy(), tw.detach().numpy(), rtol=1e-12)


def test_module_state_dict_loads_into_torch_module(tmp_path):
    em = ember.nn.Linear(4, 3)
    ember.save(em.state_dict(), tmp_path / "m.pt")
    tm = torch.nn.Linear(4, 3)
    tm.load_state_dict(torch.load(tmp_path / "m.pt"))
    x = _arr((2, 4), "float32")
    np.testing.assert_allclose(tm(torch.tensor(x)).detach().numpy(),
                               em(ember.tensor(x)).detach().numpy(), rtol=1e-6)
    torch.save(tm.state_dict(), tmp_path / "t.pt")
    em2 = ember.nn.Linear(4, 3)
    em2.load_state_dict(ember.load(tmp_path / "t.pt"))
    np.testing.assert_array_equal(em2.weight.detach().numpy(), tm.weight.detach().numpy())


def test_whole_module_needs_weights_only_false(tmp_path):
    em = ember.nn.Linear(3, 2)
    ember.save(em, tmp_path / "m.pt")
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed") as ei:
        ember.load(tmp_path / "m.pt")
    assert "ember.nn.modules.linear.Linear" in str(ei.value)
    m2 = ember.load(tmp_path / "m.pt", weights_only=False)
    assert type(m2) is type(em)
    x = ember.ones(1, 3)
    np.testing.assert_array_equal(m2(x).detach().numpy(), em(x).detach().numpy())
    with serialization.safe_globals([type(em)]):
        assert type(ember.load(tmp_path / "m.pt")) is type(em)
    with pytest.raises(pickle.UnpicklingError):
        ember.load(tmp_path / "m.pt")


class _Evil:
    def __reduce__(self):
        return (os.system, ("touch pwned_by_pickle",))


class _Custom:
    def __init__(self):
        self.x = 1


def test_refuses_arbitrary_globals(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    torch.save({"x": torch.ones(1), "evil": _Evil()}, tmp_path / "evil.pt")
    blocked = "unsupported GLOBAL posix.system whose module posix is blocked"
    with pytest.raises(pickle.UnpicklingError, match=blocked):
        ember.load(tmp_path / "evil.pt")
    with pytest.raises(pickle.UnpicklingError, match=blocked):  # torch's words too
        torch.load(tmp_path / "evil.pt")
    assert not (tmp_path / "pwned_by_pickle").exists()
    torch.save({"obj": _Custom()}, tmp_path / "cls.pt")
    with pytest.raises(pickle.UnpicklingError, match="test_serialization._Custom"):
        ember.load(tmp_path / "cls.pt")


def test_file_objects_and_pathlike(tmp_path):
    buf = io.BytesIO()
    ember.save([ember.arange(3)], buf)
    buf.seek(0)
    assert ember.load(buf)[0].tolist() == [0, 1, 2]
    path = pathlib.Path(tmp_path) / "p.pt"
    ember.save(ember.ones(2), path)
    with open(path, "rb") as fh:
        assert ember.load(fh).tolist() == [1.0, 1.0]
    assert torch.load(io.BytesIO(buf.getvalue()))[0].tolist() == [0, 1, 2]


def test_map_location_forms(tmp_path):
    ember.save({"w": ember.ones(2)}, tmp_path / "w.pt")
    for loc in ["cpu", ember.device("cpu"), {"cpu": "cpu"}, lambda storage, loc: storage]:
        assert ember.load(tmp_path / "w.pt", map_location=loc)["w"].tolist() == [1.0, 1.0]


def _rewrite_location(src, dst, new: bytes):
    """Copy a checkpoint, changing the saved device of its storages from 'cpu' to ``new``."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename.endswith("data.pkl"):
                data = data.replace(b"X\x03\x00\x00\x00cpu",
                                    b"X" + len(new).to_bytes(4, "little") + new)
            zout.writestr(info.filename, data)


@pytest.mark.skipif(ember.cuda.is_available(), reason="a CUDA checkpoint loads where a GPU is")
def test_cuda_checkpoint_needs_map_location(tmp_path):
    ember.save({"w": ember.ones(2)}, tmp_path / "w.pt")
    _rewrite_location(tmp_path / "w.pt", tmp_path / "cuda.pt", b"cuda:0")
    with pytest.raises(RuntimeError, match="map_location"):
        ember.load(tmp_path / "cuda.pt")
    for loc in ["cpu", {"cuda:0": "cpu"}, lambda s, loc: s]:
        assert ember.load(tmp_path / "cuda.pt", map_location=loc)["w"].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("cut", [10, 100, 0.5, -30, -1])
def test_truncated_file_raises_clear_error(tmp_path, cut):
    ember.save({"w": ember.ones(100)}, tmp_path / "w.pt")
    data = (tmp_path / "w.pt").read_bytes()
    n = int(len(data) * cut) if isinstance(cut, float) else cut
    (tmp_path / "bad.pt").write_bytes(data[:n])
    with pytest.raises(RuntimeError, match="bad.pt") as ei:
        ember.load(tmp_path / "bad.pt")
    assert "PytorchStreamReader failed" in str(ei.value)


def test_corrupt_storage_bytes_are_detected(tmp_path):
    ember.save({"w": ember.ones(100)}, tmp_path / "w.pt")
    data = bytearray((tmp_path / "w.pt").read_bytes())
    info = zipfile.ZipFile(tmp_path / "w.pt").getinfo("w/data/0")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    data[start + 5] ^= 0xFF
    (tmp_path / "bad.pt").write_bytes(bytes(data))
    with pytest.raises(RuntimeError, match="data/0"):
        ember.load(tmp_path / "bad.pt")


@pytest.mark.parametrize("content", [b"", b"hello world" * 10, b"\x80\x02}q\x00."])
def test_non_zip_file_raises(tmp_path, content):
    (tmp_path / "x.pt").write_bytes(content)
    with pytest.raises(RuntimeError, match="x.pt"):
        ember.load(tmp_path / "x.pt")


def test_missing_file():
    with pytest.raises(FileNotFoundError):
        ember.load("/nonexistent/dir/file.pt")


def test_atomic_save_keeps_old_file_on_failure(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.pt"
    ember.save({"v": ember.tensor([1.0])}, path)
    before = path.read_bytes()
    real_write = serialization._AlignedZipWriter.write
    calls = []

    def failing_write(self, name, data):
        calls.append(name)
        if name.startswith("data/"):
            raise OSError("disk full (simulated)")
        return real_write(self, name, data)

    monkeypatch.setattr(serialization._AlignedZipWriter, "write", failing_write)
    with pytest.raises(OSError, match="disk full"):
        ember.save({"v": ember.tensor([2.0, 3.0])}, path)
    assert calls and path.read_bytes() == before
    assert os.listdir(tmp_path) == ["ckpt.pt"]  # no temporary file left behind
    monkeypatch.undo()
    assert ember.load(path)["v"].tolist() == [1.0]


def test_unpicklable_object_does_not_touch_target(tmp_path):
    path = tmp_path / "ckpt.pt"
    ember.save([1], path)
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        ember.save({"f": lambda: 0}, path)
    assert ember.load(path) == [1]
    assert os.listdir(tmp_path) == ["ckpt.pt"]


def test_mmap_load_is_copy_on_write(tmp_path):
    t = _plain_state(torch)
    torch.save(t, tmp_path / "t.pt")
    before = (tmp_path / "t.pt").read_bytes()
    e = ember.load(tmp_path / "t.pt", mmap=True)
    for k in t:
        _same(e[k], t[k])
    e["base"].add_(1)
    assert e["col"].tolist() == (t["col"] + 1).tolist()  # views still share
    assert (tmp_path / "t.pt").read_bytes() == before
    with pytest.raises(ValueError, match="file path"):
        ember.load(io.BytesIO(before), mmap=True)


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_other_pickle_protocols_load_in_torch(tmp_path, protocol):
    ember.save({"w": ember.ones(2), "n": [1, "x"]}, tmp_path / "p.pt", pickle_protocol=protocol)
    # torch's weights-only unpickler reads protocols 2 and 3 only (its own 4/5 files too).
    t = torch.load(tmp_path / "p.pt", weights_only=protocol <= 3)
    assert t["w"].tolist() == [1.0, 1.0] and t["n"] == [1, "x"]
    assert ember.load(tmp_path / "p.pt")["n"] == [1, "x"]


def test_torch_pickled_module_loads_as_ember_module(tmp_path):
    """weights_only=False maps torch.nn classes onto ember.nn's."""
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    torch.save(tm, tmp_path / "m.pt")
    with pytest.raises(pickle.UnpicklingError, match="torch.nn.modules.container.Sequential"):
        ember.load(tmp_path / "m.pt")
    em = ember.load(tmp_path / "m.pt", weights_only=False)
    assert isinstance(em, ember.nn.Sequential)
    x = _arr((2, 3), "float32")
    np.testing.assert_allclose(em(ember.tensor(x)).detach().numpy(),
                               tm(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.uint16]
                         + ([] if hasattr(ember, "bfloat16") else [torch.bfloat16]))
def test_unsupported_torch_dtypes_raise_clearly(tmp_path, dtype):
    torch.save({"x": torch.zeros(2, dtype=dtype)}, tmp_path / "x.pt")
    with pytest.raises(RuntimeError, match="dtype ember does not have"):
        ember.load(tmp_path / "x.pt")
