"""ember.save and the file system: atomic where it can be, in place where it must, like torch
in what the user sees (modes, links, FIFOs, devices, errors), and no temporary files left."""

from __future__ import annotations

import io
import os
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time

import pytest
import torch

import ember
from ember import _save_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _entries(d) -> list[str]:
    return sorted(os.listdir(d))


def _value(path) -> list:
    return ember.load(path).tolist()


@pytest.fixture
def umask():
    """Set the process umask for one test (restored after)."""
    old = os.umask(0o022)
    yield lambda m: os.umask(m)
    os.umask(old)


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002, 0o027])
def test_new_file_gets_the_mode_open_gives(tmp_path, umask, mask):
    umask(mask)
    ember.save(ember.ones(2), tmp_path / "e.pt")
    torch.save(torch.ones(2), tmp_path / "t.pt")
    with open(tmp_path / "o", "wb"):
        pass
    modes = {n: stat.S_IMODE(os.stat(tmp_path / n).st_mode) for n in ("e.pt", "t.pt", "o")}
    assert modes["e.pt"] == modes["t.pt"] == modes["o"] == 0o666 & ~mask, modes


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o664, 0o444])
def test_existing_file_keeps_its_mode(tmp_path, umask, mode):
    umask(0o077)  # would give 0600 to a new file
    path = tmp_path / "ckpt.pt"
    ember.save(ember.zeros(1), path)
    os.chmod(path, mode)
    if mode == 0o444 and os.geteuid() != 0:
        with pytest.raises(RuntimeError, match="Permission denied"):  # as torch refuses
            ember.save(ember.ones(1), path)
        return
    ember.save(ember.ones(1), path)
    assert stat.S_IMODE(os.stat(path).st_mode) == mode and _value(path) == [1.0]
    assert _entries(tmp_path) == ["ckpt.pt"]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="only root may give a file to another user")
def test_existing_file_keeps_its_owner(tmp_path):
    path = tmp_path / "ckpt.pt"
    ember.save(ember.zeros(1), path)
    os.chown(path, 65534, 65534)
    ember.save(ember.ones(1), path)
    st = os.stat(path)
    assert (st.st_uid, st.st_gid) == (65534, 65534) and _value(path) == [1.0]


def test_symlink_is_kept_and_its_target_replaced(tmp_path):
    ember.save(ember.zeros(2), tmp_path / "ckpt_100.pt")
    os.chmod(tmp_path / "ckpt_100.pt", 0o640)
    os.symlink("ckpt_100.pt", tmp_path / "latest.pt")
    os.symlink(tmp_path / "latest.pt", tmp_path / "chain.pt")  # absolute, to a link
    ember.save(ember.ones(2), tmp_path / "latest.pt")
    assert os.readlink(tmp_path / "latest.pt") == "ckpt_100.pt"
    assert _value(tmp_path / "ckpt_100.pt") == [1.0, 1.0]
    ember.save(ember.full((2,), 7.0), tmp_path / "chain.pt")
    assert os.path.islink(tmp_path / "chain.pt") and os.path.islink(tmp_path / "latest.pt")
    assert _value(tmp_path / "ckpt_100.pt") == [7.0, 7.0]
    assert stat.S_IMODE(os.stat(tmp_path / "ckpt_100.pt").st_mode) == 0o640
    assert torch.load(tmp_path / "latest.pt").tolist() == [7.0, 7.0]
    assert _entries(tmp_path) == ["chain.pt", "ckpt_100.pt", "latest.pt"]


def test_dangling_symlink_creates_its_target_as_torch_does(tmp_path):
    for lib, name in ((ember, "e"), (torch, "t")):
        os.symlink(f"{name}_target.pt", tmp_path / f"{name}.pt")
        lib.save(lib.ones(1), tmp_path / f"{name}.pt")
        assert os.path.islink(tmp_path / f"{name}.pt")
        assert os.path.isfile(tmp_path / f"{name}_target.pt")
    assert _value(tmp_path / "t_target.pt") == _value(tmp_path / "e_target.pt") == [1.0]


def test_fifo_is_written_through(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    ember.save({"w": ember.arange(5.0)}, fifo)
    reader.join(timeout=30)
    assert not reader.is_alive() and stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert ember.load(io.BytesIO(got[0]))["w"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert torch.load(io.BytesIO(got[0]))["w"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert _entries(tmp_path) == ["pipe"]


def test_character_devices_are_written_through(tmp_path):
    # First a device node of our own (root can make one): an implementation that replaced it
    # would, as root, replace /dev/null itself below; so /dev/null is tried only after this.
    node = tmp_path / "zero"
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 5))  # like /dev/zero
    except OSError:
        if os.geteuid() == 0:
            pytest.skip("root that cannot make a device node: not risking /dev/null")
    else:
        ember.save(ember.ones(3), node)
        assert stat.S_ISCHR(os.stat(node).st_mode) and _entries(tmp_path) == ["zero"]
        node.unlink()
    before = os.stat("/dev/null")
    ember.save(ember.ones(3), "/dev/null")
    os.symlink("/dev/null", tmp_path / "null.pt")  # through a link too
    ember.save(ember.ones(3), tmp_path / "null.pt")
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev, after.st_mode) == (
        before.st_ino, before.st_rdev, before.st_mode)
    assert os.path.islink(tmp_path / "null.pt") and _entries(tmp_path) == ["null.pt"]


def _run_unprivileged(fn) -> None:
    """Run ``fn`` where directory permissions apply: as is when not root, else in a forked
    child that has dropped to uid/gid 65534 (root ignores permissions)."""
    if os.geteuid() != 0:
        fn()
        return
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(r)
        try:
            os.setgid(65534)
            os.setuid(65534)
            fn()
            msg = b""
        except BaseException as e:
            msg = repr(e).encode() or b"failed"
        os.write(w, msg)
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as fh:
        msg = fh.read()
    os.waitpid(pid, 0)
    assert not msg, msg.decode()


@pytest.fixture
def shared_dir():
    """A directory under /tmp that uid 65534 can reach (pytest's tmp_path is root's 0700)."""
    d = tempfile.mkdtemp(prefix="ember-save-")
    os.chmod(d, 0o755)
    yield d
    for root, dirs, files in os.walk(d, topdown=False):
        for n in files:
            os.unlink(os.path.join(root, n))
        for n in dirs:
            os.rmdir(os.path.join(root, n))
    os.rmdir(d)


def test_writable_file_in_read_only_directory(shared_dir):
    ro = os.path.join(shared_dir, "ro")
    os.mkdir(ro)
    path = os.path.join(ro, "ckpt.pt")
    ember.save(ember.zeros(2), path)
    os.chmod(path, 0o666)
    os.chmod(ro, 0o555)

    def check():
        ember.save(ember.ones(2), path)  # in place: the directory takes no new file
        assert _value(path) == [1.0, 1.0] and _entries(ro) == ["ckpt.pt"]
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o666
        try:
            ember.save(ember.ones(2), os.path.join(ro, "new.pt"))
        except RuntimeError as e:  # as torch: "open file failed with strerror: ..."
            assert "Permission denied" in str(e)
        else:
            raise AssertionError("a new file in a read-only directory was created")

    _run_unprivileged(check)


def test_read_only_file_in_writable_directory_is_refused(shared_dir):
    """chmod a-w protects a checkpoint from torch.save: ember must not replace it either."""
    os.chmod(shared_dir, 0o777)
    path = os.path.join(shared_dir, "best.pt")

    def check():
        ember.save(ember.zeros(2), path)
        os.chmod(path, 0o444)
        for lib in (ember, torch):
            try:
                lib.save(lib.ones(2), path)
            except RuntimeError as e:
                assert "Permission denied" in str(e), e
            else:
                raise AssertionError(f"{lib.__name__} replaced a read-only file")
        assert _value(path) == [0.0, 0.0] and _entries(shared_dir) == ["best.pt"]

    _run_unprivileged(check)


def test_errors_match_torch(tmp_path):
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match="Parent directory .*nodir does not exist"):
            lib.save(lib.ones(1), tmp_path / "nodir" / "x.pt")
        with pytest.raises(RuntimeError, match="Is a directory"):
            lib.save(lib.ones(1), tmp_path)


# --- temporary files of crashed saves -------------------------------------------------------
_BLOCKING_SAVE = """
import sys, time, ember
from ember import serialization
real = serialization._AlignedZipWriter.write
def write(self, name, data):
    real(self, name, data)
    if name.startswith("data/"):
        self.zf.fp.flush()
        print("writing", flush=True)
        time.sleep(600)
serialization._AlignedZipWriter.write = write
ember.save({"w": ember.ones(1000)}, sys.argv[1])
"""


def _start_save(path) -> subprocess.Popen:
    """A process saving to ``path`` that stops mid-save (temporary file written and locked)."""
    p = subprocess.Popen([sys.executable, "-c", _BLOCKING_SAVE, str(path)], cwd=ROOT,
                         stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": ROOT})
    assert p.stdout.readline() == b"writing\n"
    return p


def _temps(d, name="ckpt.pt") -> list[str]:
    return [n for n in os.listdir(d) if n.startswith(f".{name}.") and n.endswith(".tmp")]


def test_killed_save_leaves_a_temp_file_the_next_save_removes(tmp_path):
    path = tmp_path / "ckpt.pt"
    ember.save(ember.zeros(2), path)
    p = _start_save(path)
    try:
        (tmp,) = _temps(tmp_path)
        assert f".{p.pid}." in tmp
        ember.save(ember.ones(2), path)  # a live writer's file is left alone
        assert _temps(tmp_path) == [tmp] and _value(path) == [1.0, 1.0]
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    assert _temps(tmp_path) == [tmp]  # what a crash leaves
    ember.save(ember.full((2,), 3.0), path)
    assert _temps(tmp_path) == [] and _value(path) == [3.0, 3.0]
    assert _entries(tmp_path) == ["ckpt.pt"]


def test_stale_temp_file_rules(tmp_path):
    path = tmp_path / "ckpt.pt"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    old = time.time() - _save_file.STALE_AGE_S - 60
    files = {
        f".ckpt.pt.{dead.pid}.0123456789ab.tmp": True,  # writer dead, lock free
        f".ckpt.pt.{os.getpid()}.0123456789ab.tmp": False,  # writer alive (between create
        # and lock, as far as anyone can tell)
        ".ckpt.pt.1.ba5eba11cafe.tmp": True,  # an hour old (whatever its pid says)
        f".other.pt.{dead.pid}.0123456789ab.tmp": False,  # another target's
        ".ckpt.pt.backup01.tmp": False,  # not a name ember makes, however old
    }
    for name in files:
        (tmp_path / name).write_bytes(b"partial")
    for name in (".ckpt.pt.1.ba5eba11cafe.tmp", ".ckpt.pt.backup01.tmp"):
        os.utime(tmp_path / name, (old, old))
    ember.save(ember.ones(1), path)
    left = set(os.listdir(tmp_path))
    assert left == {"ckpt.pt"} | {n for n, gone in files.items() if not gone}


def test_concurrent_saves_to_one_target(tmp_path):
    """Threads saving the same file at once: each save is whole, none removes another's
    temporary file, and nothing is left behind."""
    path = tmp_path / "ckpt.pt"
    errors = []

    def saver(v):
        try:
            for _ in range(15):
                ember.save({"v": ember.full((256,), float(v))}, path)
                got = ember.load(path)["v"]
                assert got.shape == (256,) and len(set(got.tolist())) == 1
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=saver, args=(v,)) for v in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert _entries(tmp_path) == ["ckpt.pt"]


def test_file_objects_still_work(tmp_path):
    buf = io.BytesIO()
    ember.save({"w": ember.ones(2)}, buf)
    assert ember.load(io.BytesIO(buf.getvalue()))["w"].tolist() == [1.0, 1.0]

    class Unseekable(io.RawIOBase):
        def __init__(self):
            self.data = bytearray()

        def writable(self):
            return True

        def write(self, b):
            self.data += b
            return len(b)

    out = Unseekable()
    ember.save({"w": ember.ones(2)}, out)
    assert torch.load(io.BytesIO(bytes(out.data)))["w"].tolist() == [1.0, 1.0]
    assert _entries(tmp_path) == []
