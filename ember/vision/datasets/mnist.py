"""MNIST and Fashion-MNIST in torchvision's layout: ``root/<Name>/raw/*-ubyte.gz``."""

from __future__ import annotations

import os
import shutil
import subprocess
import urllib.request

import numpy as np

from ember._tensor import Tensor
from ember.utils.data.dataset import Dataset
from ember.vision.datasets._idx import IDXError, read_idx

DEBIAN_DIRS = {"FashionMNIST": "/usr/share/datasets/fashion-mnist"}
DEBIAN_PACKAGES = {"FashionMNIST": "dataset-fashion-mnist"}


class MNIST(Dataset):
    """The MNIST digits: ``data`` (N, 28, 28) uint8, ``targets`` (N,) int64, ``classes``."""

    mirrors = ["https://ossci-datasets.s3.amazonaws.com/mnist/",
               "http://yann.lecun.com/exdb/mnist/"]
    files = {
        "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
        "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
    }
    # Items per split: a download is checked on its decompressed content against these.
    counts = {"train": 60000, "test": 10000}
    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five",
               "6 - six", "7 - seven", "8 - eight", "9 - nine"]

    def __init__(self, root: str | os.PathLike, train: bool = True, transform=None,
                 target_transform=None, download: bool = False) -> None:
        self.root = os.fspath(os.path.expanduser(root))
        self.train = train
        self.transform = transform
        self.target_transform = target_transform
        if download:
            self.download()
        if not self._check_exists():
            raise RuntimeError("Dataset not found. You can use download=True to download it")
        images_file, labels_file = self.files["train" if train else "test"]
        images = read_idx(os.path.join(self.raw_folder, images_file))
        labels = read_idx(os.path.join(self.raw_folder, labels_file))
        if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
            raise IDXError(f"{self.raw_folder}: images {list(images.shape)} and labels "
                           f"{list(labels.shape)} do not form a dataset")
        self.data = Tensor._make(np.ascontiguousarray(images, dtype=np.uint8))
        self.targets = Tensor._make(labels.astype(np.int64))

    @property
    def raw_folder(self) -> str:
        return os.path.join(self.root, type(self).__name__, "raw")

    @property
    def class_to_idx(self) -> dict:
        return {c: i for i, c in enumerate(self.classes)}

    def __getitem__(self, index: int):
        img = self.data._data[index]
        target = int(self.targets._data[index])
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __len__(self) -> int:
        return len(self.data)

    def extra_repr(self) -> str:
        return f"Split: {'Train' if self.train else 'Test'}"

    def __repr__(self) -> str:
        lines = [f"Number of datapoints: {len(self)}", f"Root location: {self.root}",
                 self.extra_repr()]
        if self.transform is not None:
            lines.append(repr(self.transform))
        return f"Dataset {type(self).__name__}\n" + "\n".join("    " + ln for ln in lines)

    def _all_files(self):
        return [f for pair in self.files.values() for f in pair]

    def _check_exists(self) -> bool:
        return all(os.path.isfile(os.path.join(self.raw_folder, f)) for f in self._all_files())

    def _local_dirs(self) -> list[str]:
        dirs = []
        env = os.environ.get("EMBER_DATASETS")
        if env:
            dirs += [os.path.join(env, type(self).__name__, "raw"),
                     os.path.join(env, type(self).__name__), env]
        name = type(self).__name__
        if name in DEBIAN_PACKAGES:
            dirs += _dpkg_dirs(DEBIAN_PACKAGES[name]) + [DEBIAN_DIRS[name]]
        return dirs

    def download(self) -> None:
        """Find the files: under root, then local copies, then the official mirrors."""
        if self._check_exists():
            return
        os.makedirs(self.raw_folder, exist_ok=True)
        errors = []
        for fname in self._all_files():
            dest = os.path.join(self.raw_folder, fname)
            if os.path.isfile(dest):
                continue
            if self._copy_local(fname, dest) or self._fetch(fname, dest, errors):
                continue
            name = type(self).__name__
            deb = DEBIAN_PACKAGES.get(name)
            ways = [f"put the files ({', '.join(self._all_files())}) in {self.raw_folder}",
                    "point $EMBER_DATASETS at a folder that holds them"]
            if deb:
                ways.append(f"install the Debian package: apt-get install {deb}")
            ways.append(f"download from {', '.join(self.mirrors)} (tried: "
                        f"{'; '.join(errors) or 'no network'})")
            raise RuntimeError(f"{name}: could not find {fname}. Ways to get the data:\n  - "
                               + "\n  - ".join(ways))

    def _copy_local(self, fname: str, dest: str) -> bool:
        for d in self._local_dirs():
            src = os.path.join(d, fname)
            if os.path.isfile(src):
                read_idx(src)  # refuse to copy a corrupt file
                shutil.copyfile(src, dest + ".part")
                os.replace(dest + ".part", dest)
                return True
        return False

    def _fetch(self, fname: str, dest: str, errors: list) -> bool:
        for mirror in self.mirrors:
            url = mirror + fname
            try:
                with urllib.request.urlopen(url, timeout=20) as r, open(dest + ".part", "wb") as f:
                    shutil.copyfileobj(r, f)
                _verify(dest + ".part", self._expected_len(fname))
                os.replace(dest + ".part", dest)
                return True
            except (OSError, IDXError) as e:
                errors.append(f"{url}: {e}")
                if os.path.exists(dest + ".part"):
                    os.remove(dest + ".part")
        return False

    def _expected_len(self, fname: str) -> int:
        return self.counts["train" if fname.startswith("train") else "test"]


def _verify(path: str, count: int) -> None:
    """Integrity check on the decompressed content: a parseable IDX file of ``count`` items."""
    arr = read_idx(path)
    if arr.shape[0] != count:
        raise IDXError(f"{path}: expected {count} items, found {arr.shape[0]}")


def _dpkg_dirs(package: str) -> list[str]:
    try:
        out = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True,
                             timeout=10, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return sorted({os.path.dirname(p) for p in out.split() if p.endswith("-ubyte.gz")})


class FashionMNIST(MNIST):
    """Zalando's Fashion-MNIST: 28x28 grey images of 10 kinds of clothing."""

    mirrors = ["http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"]
    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
               "Sneaker", "Bag", "Ankle boot"]

