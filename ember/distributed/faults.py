"""What happens when a rank fails: it reports and takes the whole job down, never hangs.

An uncaught exception in a rank prints its traceback with a ``[rankN]:`` prefix (as torchrun
does), leaves a one-line summary for the launcher (``EMBER_ERROR_DIR``), and calls
``MPI_Abort``, which makes the MPI launcher kill every other rank. Without the abort, Python's
exit would run ``MPI_Finalize``, which waits for ranks that are waiting for the dead one.
"""

from __future__ import annotations

import os
import sys
import traceback

_PREVIOUS: list = []


def install(rank: int) -> None:
    """Make an uncaught exception in this process abort the job (see the module docstring)."""
    if _PREVIOUS:
        return
    _PREVIOUS.append(sys.excepthook)

    def hook(tp, value, tb) -> None:
        text = "".join(traceback.format_exception(tp, value, tb)).rstrip()
        sys.stdout.flush()
        sys.stderr.write("".join(f"[rank{rank}]: {line}\n" for line in text.splitlines()))
        sys.stderr.flush()
        record(rank, f"{tp.__name__}: {value}")
        from ember.distributed.backends.mpi import mpi

        mpi().COMM_WORLD.Abort(1)

    sys.excepthook = hook


def uninstall() -> None:
    if _PREVIOUS:
        sys.excepthook = _PREVIOUS.pop()


def record(rank: int, summary: str) -> None:
    """Leave ``summary`` where ``ember-run`` looks for the cause of a failure."""
    folder = os.environ.get("EMBER_ERROR_DIR")
    if folder and os.path.isdir(folder):
        with open(os.path.join(folder, f"rank{rank}.txt"), "w") as f:
            f.write(summary.splitlines()[0] if summary else "")
