"""vision: IDX parsing and validation, MNIST-layout datasets, transforms vs torchvision's rules."""

import gzip
import os

import numpy as np
import pytest

import ember
from ember.vision import datasets, transforms
from ember.vision.datasets._idx import IDXError, read_idx, write_idx


def _make_raw(root, name="FashionMNIST", n_train=6, n_test=4):
    raw = os.path.join(root, name, "raw")
    os.makedirs(raw, exist_ok=True)
    rng = np.random.default_rng(0)
    for split, n in (("train", n_train), ("t10k", n_test)):
        write_idx(os.path.join(raw, f"{split}-images-idx3-ubyte.gz"),
                  rng.integers(0, 256, (n, 28, 28), dtype=np.uint8))
        write_idx(os.path.join(raw, f"{split}-labels-idx1-ubyte.gz"),
                  rng.integers(0, 10, n, dtype=np.uint8))
    return raw


def test_idx_round_trip_and_validation(tmp_path):
    a = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    p = tmp_path / "x-idx3-ubyte.gz"
    write_idx(p, a)
    np.testing.assert_array_equal(read_idx(p), a)
    i32 = np.arange(6, dtype=np.int32).reshape(2, 3)
    write_idx(tmp_path / "y", i32)
    np.testing.assert_array_equal(read_idx(tmp_path / "y"), i32)
    raw = gzip.decompress(p.read_bytes())
    (tmp_path / "trunc").write_bytes(raw[:-5])
    with pytest.raises(IDXError, match="trunc.*length"):
        read_idx(tmp_path / "trunc")
    (tmp_path / "magic").write_bytes(b"\x01\x02" + raw[2:])
    with pytest.raises(IDXError, match="magic.*magic number"):
        read_idx(tmp_path / "magic")
    (tmp_path / "badgz").write_bytes(gzip.compress(raw)[:20])
    with pytest.raises(IDXError, match="badgz"):
        read_idx(tmp_path / "badgz")


def test_garbled_gzip_idx_raises_an_error_naming_the_file(tmp_path):
    """Every byte of a gzipped IDX file flipped in turn (garbled deflate data, CRC, header):
    the same array, or a RuntimeError (IDXError) naming the file; never a bare zlib.error."""
    a = np.arange(60, dtype=np.uint8).reshape(3, 4, 5)
    gz = gzip.compress(b"\x00\x00\x08\x03" + b"".join(d.to_bytes(4, "big") for d in a.shape)
                       + a.tobytes(), mtime=0)
    p = tmp_path / "garbled-idx3-ubyte.gz"
    errors = 0
    for i in range(len(gz)):
        bad = bytearray(gz)
        bad[i] ^= 0x55
        p.write_bytes(bytes(bad))
        try:
            out = read_idx(p)
        except RuntimeError as e:
            assert type(e) is IDXError and str(p) in str(e), repr(e)
            errors += 1
            continue
        np.testing.assert_array_equal(out, a)
    assert errors > len(gz) // 2


def test_dataset_layout_and_getitem(tmp_path):
    _make_raw(tmp_path)
    ds = datasets.FashionMNIST(tmp_path, train=True, transform=transforms.ToTensor(),
                               target_transform=lambda y: y + 100)
    assert len(ds) == 6 and tuple(ds.data.shape) == (6, 28, 28)
    assert ds.data.dtype is ember.uint8 and ds.targets.dtype is ember.int64
    img, y = ds[0]
    assert tuple(img.shape) == (1, 28, 28) and img.dtype is ember.float32
    np.testing.assert_allclose(img.numpy()[0], ds.data.numpy()[0] / 255.0, rtol=1e-6)
    assert y == ds.targets[0].item() + 100
    assert ds.classes[9] == "Ankle boot"
    assert len(datasets.FashionMNIST(tmp_path, train=False)) == 4


def test_missing_data_names_all_ways(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets.mnist, "DEBIAN_DIRS", {"FashionMNIST": str(tmp_path / "none")})
    monkeypatch.setattr(datasets.mnist, "_dpkg_dirs", lambda pkg: [])
    monkeypatch.setattr(datasets.FashionMNIST, "mirrors", ["http://127.0.0.1:9/"])
    monkeypatch.delenv("EMBER_DATASETS", raising=False)
    with pytest.raises(RuntimeError, match="Dataset not found"):
        datasets.FashionMNIST(tmp_path / "r", download=False)
    with pytest.raises(RuntimeError) as e:
        datasets.FashionMNIST(tmp_path / "r", download=True)
    msg = str(e.value)
    assert "EMBER_DATASETS" in msg and "apt-get install dataset-fashion-mnist" in msg
    assert "127.0.0.1" in msg


def test_download_copies_from_ember_datasets(tmp_path, monkeypatch):
    src = _make_raw(tmp_path / "store")
    monkeypatch.setenv("EMBER_DATASETS", str(tmp_path / "store"))
    ds = datasets.FashionMNIST(tmp_path / "root", download=True)
    assert len(ds) == 6
    assert os.path.isfile(tmp_path / "root" / "FashionMNIST" / "raw" /
                          "train-images-idx3-ubyte.gz")
    assert os.path.isdir(src)


def test_corrupt_local_copy_is_refused(tmp_path, monkeypatch):
    raw = _make_raw(tmp_path / "store")
    p = os.path.join(raw, "train-images-idx3-ubyte.gz")
    with open(p, "wb") as f:
        f.write(gzip.compress(b"\x00\x00\x08\x03" + b"\x00" * 10))
    monkeypatch.setenv("EMBER_DATASETS", str(tmp_path / "store"))
    with pytest.raises(IDXError, match="train-images"):
        datasets.FashionMNIST(tmp_path / "root", download=True)


def test_transforms_match_torchvision_semantics():
    img = np.random.default_rng(0).integers(0, 256, (5, 6, 3), dtype=np.uint8)
    t = transforms.ToTensor()(img)
    assert tuple(t.shape) == (3, 5, 6)
    np.testing.assert_allclose(t.numpy(), img.transpose(2, 0, 1) / 255.0, rtol=1e-6)
    n = transforms.Normalize((0.5, 0.5, 0.5), (0.25, 0.5, 1.0))(t)
    np.testing.assert_allclose(n.numpy()[1], (t.numpy()[1] - 0.5) / 0.5, rtol=1e-6)
    assert n.dtype is ember.float32
    c = transforms.Compose([transforms.ToTensor(), transforms.Lambda(lambda x: x * 2)])
    np.testing.assert_allclose(c(img).numpy(), t.numpy() * 2, rtol=1e-6)
    assert transforms.RandomHorizontalFlip(p=1.0)(t).numpy()[0, 0, 0] == t.numpy()[0, 0, -1]
    crop = transforms.RandomCrop(4, padding=2)(t)
    assert tuple(crop.shape) == (3, 4, 4)
    u8 = ember.tensor(np.array([[0, 255]], dtype=np.uint8))
    f = transforms.ConvertImageDtype(ember.float32)(u8)
    np.testing.assert_allclose(f.numpy(), [[0.0, 1.0]])
    back = transforms.ConvertImageDtype(ember.uint8)(f)
    assert back.tolist() == [[0, 255]]
    with pytest.raises(TypeError):
        transforms.Normalize((0.5,), (0.5,))(ember.ones(1, 2, 2, dtype=ember.int64))


def test_random_transforms_draw_torchvisions_numbers():
    # torchvision flips when torch.rand(1) < p and crops at torch.randint(0, h - th + 1) (then
    # for w), with no draw for a full-size crop; torchvision itself is not installed, so the
    # expected positions come from those same torch calls.
    import torch

    img = ember.tensor(np.arange(2 * 6 * 7, dtype=np.float32).reshape(2, 6, 7))
    flip, crop, full = (transforms.RandomHorizontalFlip(0.5), transforms.RandomCrop((3, 4)),
                        transforms.RandomCrop((6, 7)))
    ember.manual_seed(0)
    torch.manual_seed(0)
    for _ in range(20):
        flipped = flip(img) is not img
        assert flipped == bool(torch.rand(1) < 0.5)
        i, j = torch.randint(0, 4, (1,)).item(), torch.randint(0, 4, (1,)).item()
        np.testing.assert_array_equal(crop(img).numpy(), img.numpy()[:, i:i + 3, j:j + 4])
        assert full(img).numpy().tobytes() == img.numpy().tobytes()
    assert ember.rand(3).tolist() == torch.rand(3).tolist()
