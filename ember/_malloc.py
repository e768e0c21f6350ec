"""Keep freed array memory in the process (glibc's malloc), so big arrays are not faulted in
again at every training step.

glibc serves a block above its mmap threshold with a fresh mapping and returns the free top of
its heap to the OS once it exceeds the trim threshold; both thresholds adapt to the largest
block freed so far. A define-by-run training step allocates and frees the same few megabytes of
activations, columns and gradients every step, and depending on the order of those frees glibc
may hand the memory back each time: then every step pays the page faults of touching it again
(3,000 - 7,000 a step on the siamese CNN of ``bench/programs``, 7 - 14 ms of system time, a
quarter of the step). Fixed thresholds (64 MiB for mmap, 512 MiB for trimming, the settings
that ``MALLOC_MMAP_THRESHOLD_`` / ``MALLOC_TRIM_THRESHOLD_`` give) keep that memory for reuse.
Set ``EMBER_MALLOC_TUNING=0`` to leave malloc alone; other C libraries are left alone.
"""

from __future__ import annotations

import ctypes
import os
import sys

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters
MMAP_THRESHOLD = 64 << 20
TRIM_THRESHOLD = 512 << 20


def tune() -> bool:
    """Fix glibc's thresholds (once, at import); whether they were set."""
    if not sys.platform.startswith("linux") or os.environ.get("EMBER_MALLOC_TUNING") == "0":
        return False
    if any(k in os.environ for k in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")):
        return False  # the user chose
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 - glibc only (musl has no such thresholds)
    except (OSError, AttributeError):
        return False
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                and libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))


TUNED = tune()
