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
                 outputs: list | None = None, eager: bool = True, seq: int | None = None,
                 start: float | None = None) -> None:
        if seq is None:  # given: a blocking collective hands over the sequence number it took
            channel.seq += 1
            seq = channel.seq
        self._channel, self._op, self._numel, self._seq = channel, op, numel, seq
        self._timeout = timeout
        self._start = time.monotonic() if start is None else start
        # check: (requests of the fingerprint exchange, verify() -> exception or None)
        self._check, self._issue, self._finish = check, issue, finish
        self._outputs = outputs or []
        self._reqs: list = []
        self._stage = CHECKING
        self._error: BaseException | None = None
        channel.works.append(self)
        if eager:  # start what can start now; a blocking call skips this, it waits at once
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
        """Block until done (raising the collective's error), or raise ``DistBackendError``
        once ``timeout`` (default: the group's) has passed since the collective started."""
        limit = self._timeout if timeout is None else _seconds(timeout)
        if self._stage != DONE:
            works = self._channel.works
            # Alone on its channel, it is stepped without the channel's bookkeeping, and its
            # transfer polled on its own requests (MPI moves data only while it is polled);
            # else every work is, oldest first, so that the later ones start when they can.
            alone = len(works) == 1 and works[0] is self
            if alone:
                ok = poll(self._issued, self._start, limit, True)
                ok = ok and poll(self._transferred, self._start, limit, False)
            else:
                ok = poll(self._progressed, self._start, limit, self._checking)
            if not ok:
                waited = time.monotonic() - self._start
                raise DistBackendError(self._timeout_message(waited, limit))
            if alone:
                works.popleft()
        if self._error is not None:
            raise self._error
        return True

    def _issued(self) -> bool:
        """Step this work; whether its transfer has started (or it is done)."""
        self._step(True)
        return self._stage != CHECKING

    def _transferred(self) -> bool:
        """Whether the transfer has completed (then finished here, as ``_step`` would)."""
        if self._stage == ISSUED:
            try:
                if not self._channel.test(self._reqs):
                    return False
                self._complete(self._finish, self._outputs)
            except Exception as e:  # surfaces at wait(), like an error in a torch Work
                self._error, self._stage = e, DONE
        return True

    def _progressed(self) -> bool:
        self._channel.progress()
        return self._stage == DONE

    def _checking(self) -> bool:
        return self._stage == CHECKING

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


def then(work: Work | None, fn: Callable, outputs: list | None = None) -> Work | None:
    """Make ``work`` run ``fn()`` when its transfer completes, before it reports completion
    (to unpack a gathered buffer into the caller's tensors). ``work`` None: a blocking
    collective that has completed already, so ``fn`` runs now."""
    if work is None:
        fn()
        for t in outputs or ():
            t._vc[0] += 1
        return None
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


def poll(done: Callable[[], bool], start: float, limit: float,
         arriving: bool | Callable[[], bool]) -> bool:
    """Call ``done()`` until it says True (then True), or until ``limit`` seconds have passed
    since ``start`` (then False). It spins a little, then yields the core between calls;
    while ``arriving`` (a bool, or a function saying whether the other ranks have yet to reach
    the collective) it sleeps instead after 10 ms: ranks sharing a core leave it to the rank
    that has work to do."""
    spins = 0
    while not done():
        spins += 1
        if spins > 200:  # spin a little first: a yield may hand the core away for long
            waited = time.monotonic() - start
            if waited > limit:
                return False
            if waited > 0.01 and (arriving() if callable(arriving) else arriving):
                time.sleep(0.001 if waited > 0.1 else 0.0001)
            else:
                os.sched_yield()
    return True


def _seconds(timeout) -> float:
    return timeout.total_seconds() if hasattr(timeout, "total_seconds") else float(timeout)
