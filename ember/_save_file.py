"""How ``ember.save`` puts a checkpoint at a path: atomically where it can, in place where it must.

- A regular file (new or existing) is written to a temporary file beside it, flushed to disk,
  and renamed over it only once complete: a crash or an error leaves the old checkpoint intact.
  Through a symlink, the file it points to is replaced and the link stays a link.
- A new file gets the mode ``open()`` gives (0666 less the umask, or the directory's default
  ACL); an existing one keeps its permission bits (and owner, where the OS lets us).
- A target that is not a regular file (a FIFO, ``/dev/null``, a device) is written through,
  as torch writes it; so is a writable file in a directory we may not create files in.
- A file we may not write is refused, as torch refuses it, even if its directory is writable.
- Temporary files are named ``.<name>.<pid>.<random>.tmp`` and locked (``flock``) while being
  written. Each save removes the ones of its target whose writer is gone (lock free and the
  process dead, or untouched for an hour), so a killed save costs disk space only until the
  next save; a save in progress in another thread or process is never disturbed.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import stat
import time
from collections.abc import Callable
from typing import IO

try:
    import fcntl
except ImportError:  # not POSIX: no locks; stale temporary files are recognised by age only
    fcntl = None

# A temporary file untouched this long is stale whoever wrote it (a live writer keeps writing).
STALE_AGE_S = 3600.0
_OPEN_FLAGS = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NO_PERMISSION = (errno.EACCES, errno.EPERM, errno.EROFS)
_EFFECTIVE_IDS = os.access in os.supports_effective_ids


def write_to_path(path: str, write: Callable[[IO[bytes]], None]) -> None:
    """Run ``write(file)`` to produce the content of ``path``, by the rules above."""
    target = os.path.realpath(path)
    directory, base = os.path.split(target)
    if not os.path.isdir(directory):
        raise RuntimeError(f"Parent directory {os.path.dirname(path) or '.'} does not exist.")
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise _open_error(path, e) from e
    if st is not None and (not stat.S_ISREG(st.st_mode)
                           or not os.access(target, os.W_OK, effective_ids=_EFFECTIVE_IDS)):
        # A FIFO or device (renaming over it would replace it), or a file we may not write:
        # open() it as torch does, which writes through or raises the error torch raises.
        _write_in_place(path, target, write)
        return
    _remove_stale(directory, base)
    try:
        fd, tmp = _create_temp(directory, base,
                               0o666 if st is None else stat.S_IMODE(st.st_mode) & 0o777)
    except OSError as e:
        if st is None or e.errno not in _NO_PERMISSION:
            raise _open_error(path, e) from e
        _write_in_place(path, target, write)  # a directory we may not create files in
        return
    try:
        with os.fdopen(fd, "wb") as fh:
            if st is not None:
                _copy_mode(fh.fileno(), st)
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


def _open_error(path: str, e: OSError) -> RuntimeError:
    return RuntimeError(f"File {path} cannot be opened: open file failed with strerror: "
                        f"{e.strerror or e}")


def _write_in_place(path: str, target: str, write: Callable[[IO[bytes]], None]) -> None:
    try:
        fh = open(target, "wb")  # not a with: its error is converted first
    except OSError as e:
        raise _open_error(path, e) from e
    with fh:
        write(fh)


def _copy_mode(fd: int, st: os.stat_result) -> None:
    """Give the new file the replaced one's permission bits, and its owner and group as far as
    we may (only root gives a file away; a user may pick any group of theirs)."""
    if not hasattr(os, "fchown"):  # Windows: no owners, and a mode of read-only or not
        return
    os.fchmod(fd, stat.S_IMODE(st.st_mode) & 0o777)
    if (st.st_uid, st.st_gid) == (os.geteuid(), os.getegid()):
        return
    for uid in (st.st_uid, -1):
        try:
            os.fchown(fd, uid, st.st_gid)
            return
        except OSError:
            continue


def _temp_pattern(base: str) -> re.Pattern:
    # Only names this module makes: a user's ".ckpt.pt.backup.tmp" is not ours to delete.
    return re.compile(rf"\.{re.escape(base)}\.(\d+)\.[0-9a-f]{{12}}\.tmp\Z")


def _create_temp(directory: str, base: str, mode: int) -> tuple[int, str]:
    """A new, locked temporary file beside the target (``mode`` less the umask)."""
    while True:
        tmp = os.path.join(directory, f".{base}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _OPEN_FLAGS, mode)
        except FileExistsError:
            continue  # 48 random bits collided: draw again
        _try_lock(fd)
        return fd, tmp


def _try_lock(fd: int) -> bool | None:
    """Lock ``fd`` exclusively without waiting: True, False if another holder has it, None
    where the file system (or the OS) has no locks."""
    if fcntl is None:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:
        return None
    return True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's process (EPERM)
    return True


def _remove_stale(directory: str, base: str) -> None:
    """Delete temporary files of ``base`` left by saves that died (see the module docstring)."""
    pattern = _temp_pattern(base)
    try:
        names = [e.name for e in os.scandir(directory) if pattern.match(e.name)]
    except OSError:
        return  # an unlistable directory: nothing to clean that we could see
    for name in names:
        path = os.path.join(directory, name)
        try:
            fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _OPEN_FLAGS)
        except OSError:
            continue
        try:
            locked = _try_lock(fd)
            if locked is False:
                continue  # a live writer holds it
            st = os.fstat(fd)
            old = time.time() - st.st_mtime > STALE_AGE_S
            # A lock we could take means the writer is gone, or is alive between creating the
            # file and locking it, or between closing it and renaming it: its pid tells.
            dead = locked is True and not _alive(int(pattern.match(name).group(1)))
            if stat.S_ISREG(st.st_mode) and (dead or old):
                os.unlink(path)
        except OSError:
            pass  # removed by a concurrent save, or not ours to remove: leave it
        finally:
            os.close(fd)
