"""``Work``: a collective in flight, and the per-communicator queue that drives it.

A collective has two stages. First every rank contributes a small *fingerprint* (the op, the
dtype, the shape) on a communicator of its own; once all fingerprints are in, they are compared
(a mismatch raises on every rank) and the data stage is issued. The fingerprint exchange is also
the rendezvous that a timeout watches: a rank that never arrives makes the others raise instead
of hanging. A work issues its data stage only after every earlier work on the same communicator
has issued its own, so all ranks issue the transport's collectives in the same order.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable

CHECKING, ISSUED, DONE = 0, 1, 2


class DistError(RuntimeError):
    """Base of ember.distributed's errors (torch's ``DistError``)."""


class DistBackendError(DistError):
    """A collective failed or timed out in the backend (torch's ``DistBackendError``)."""


class DistStoreError(DistError):
    """Rendezvous failed: a rank did not join in time (torch's ``DistStoreError``)."""


class Channel:
    """The works of one communicator, oldest first. ``test(requests)`` says whether a list of
    the transport's requests has completed."""

    def __init__(self, rank: int, test: Callable) -> None:
        self.rank = rank
        self.test = test
        self.works: deque = deque()
        self.seq = 0

    def progress(self) -> None:
        may_issue = True
        for w in tuple(self.works):
            w._step(may_issue)
            may_issue = may_issue and w._stage != CHECKING
        while self.works and self.works[0]._stage == DONE:
            self.works.popleft()


class Work:
    """torch's ``Work``: ``wait()`` blocks until the collective is done (raising its error, or
    ``DistBackendError`` after the group's timeout); ``is_completed()`` polls."""

    def __init__(self, channel: Channel, op: str, numel: int, timeout: float,
                 check: tuple | None, issue: Callable, finish: Callable | None = None,
                 outputs: list | None = None) -> None:
        channel.seq += 1
        self._channel, self._op, self._numel, self._seq = channel, op, numel, channel.seq
        self._timeout, self._start = timeout, time.monotonic()
        # check: (requests of the fingerprint exchange, verify() -> exception or None)
        self._check, self._issue, self._finish = check, issue, finish
        self._outputs = outputs or []
        self._reqs: list = []
        self._stage = CHECKING
        self._error: BaseException | None = None
        channel.works.append(self)
        channel.progress()

    def _step(self, may_issue: bool) -> None:
        try:
            if self._stage == CHECKING:
                if self._check is not None:
                    reqs, verify = self._check
                    if not self._channel.test(reqs):
                        return
                    self._check = None
                    err = verify()
                    if err is not None:
                        raise err
                if not may_issue:
                    return
                self._reqs = self._issue() or []
                self._stage = ISSUED
            if self._stage == ISSUED and self._channel.test(self._reqs):
                self._complete(self._finish, self._outputs)
        except Exception as e:  # surfaces at wait(), like an error in a torch Work
            self._error, self._stage = e, DONE

    def _complete(self, finish, outputs) -> None:
        if finish is not None:
            finish()
        for t in outputs:
            t._vc[0] += 1  # written in place, as torch's collectives do
        self._stage = DONE

    def is_completed(self) -> bool:
        if self._stage != DONE:
            self._channel.progress()
        return self._stage == DONE

    def is_success(self) -> bool:
        return self.is_completed() and self._error is None

    def exception(self) -> BaseException | None:
        return self._error

    def wait(self, timeout=None) -> bool:
        """Block until done. Idle waits back off (yield, then sleep) so that ranks sharing a
        core leave it to the rank that has work to do."""
        limit = self._timeout if timeout is None else _seconds(timeout)
        channel = self._channel
        spins = 0
        while self._stage != DONE:
            channel.progress()
            if self._stage == DONE:
                break
            waited = time.monotonic() - self._start
            if waited > limit:
                raise DistBackendError(self._timeout_message(waited, limit))
            spins += 1
            if self._stage == CHECKING and waited > 0.01:
                time.sleep(0.001 if waited > 0.1 else 0.0001)
            elif spins > 200:  # spin a little first: a yield may hand the core away for long
                os.sched_yield()
        if self._error is not None:
            raise self._error
        return True

    def result(self) -> list:
        self.wait()
        return list(self._outputs)

    def synchronize(self) -> None:
        self.wait()

    def _timeout_message(self, waited: float, limit: float) -> str:
        stage = ("not every rank reached it (a rank is missing, stuck, or calling collectives in "
                 "another order)" if self._stage == CHECKING else "the transfer did not finish")
        return (f"[Rank {self._channel.rank}] Watchdog caught collective operation timeout: "
                f"Work(SeqNum={self._seq}, OpType={self._op.upper()}, NumelIn={self._numel}, "
                f"Timeout(ms)={int(limit * 1000)}) ran for {int(waited * 1000)} milliseconds "
                f"before timing out: {stage}.")

    def __repr__(self) -> str:
        return f"<Work {self._op} seq={self._seq} completed={self._stage == DONE}>"


def then(work: Work, fn: Callable, outputs: list | None = None) -> Work:
    """Make ``work`` run ``fn()`` when its transfer completes, before it reports completion
    (to unpack a gathered buffer into the caller's tensors)."""
    work._outputs = outputs or []
    if work._stage == DONE:  # it may have completed while it was being made
        if work._error is None:
            work._complete(fn, work._outputs)
        return work
    inner = work._finish

    def finish() -> None:
        if inner is not None:
            inner()
        fn()
    work._finish = finish
    return work


def _seconds(timeout) -> float:
    return timeout.total_seconds() if hasattr(timeout, "total_seconds") else float(timeout)
