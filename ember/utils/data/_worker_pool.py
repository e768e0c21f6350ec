"""The main process's side of DataLoader workers: start them, keep batches in sampler order,
reuse them across epochs, and stop them promptly whatever happens."""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing as mp
import os
import queue
import signal
import time
from multiprocessing.connection import wait
from typing import NoReturn

from ember.utils.data import _worker

_POLL = 0.2  # seconds between checks that workers are still alive
SHUTDOWN_GRACE = 1.0  # seconds all workers together get to exit before they are terminated


@contextlib.contextmanager
def _sigint_blocked():
    """A new worker inherits the blocked SIGINT and unblocks it once its handler is set, so
    Ctrl-C during a fork is never a traceback from a half-started worker. The main process
    gets a Ctrl-C that came meanwhile when the mask is restored."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _stop_workers(workers, grace: float) -> None:
    """Wait up to ``grace`` seconds in all for the workers to exit, then terminate the rest:
    a hung worker costs the grace once, not once per worker."""
    deadline = time.monotonic() + grace
    alive = [w for w in workers if w.exitcode is None]
    while alive and (left := deadline - time.monotonic()) > 0:
        wait([w.sentinel for w in alive], left)
        alive = [w for w in alive if w.exitcode is None]
    for w in alive:
        w.terminate()
    for w in alive:
        w.join(timeout=1)
        if w.exitcode is None:  # SIGTERM caught or ignored by user code
            w.kill()
    for w in workers:
        w.join()


class MultiProcessIter:
    """Workers fetch batches in parallel; batches come back in sampler order.

    Holds no reference to its loader (a persistent loader holds the iterator), so dropping
    the loader stops the workers at once rather than at the next cycle collection.
    """

    def __init__(self, loader) -> None:
        self.shut = False
        self.failure = None  # why the workers were stopped early, repeated by later next()
        self.workers, self.index_queues = [], []
        self.result_queue = self.done = None
        self.timeout = loader.timeout
        self.persistent = loader.persistent_workers
        self.prefetch = loader.prefetch_factor
        self.index_sampler = loader._index_sampler
        ctx = loader.multiprocessing_context
        if isinstance(ctx, str) or ctx is None:
            ctx = mp.get_context(ctx or ("fork" if "fork" in mp.get_all_start_methods()
                                         else None))
        # a fork server's children have it as parent (and it lives as long as they do)
        parent = None if ctx.get_start_method() == "forkserver" else os.getpid()
        base_seed = loader._base_seed()
        n = loader.num_workers
        self.result_queue = ctx.Queue()
        self.done = ctx.Event()
        fetch = loader._fetcher()
        for wid in range(n):
            iq = ctx.Queue()
            iq.cancel_join_thread()  # tasks left for a stopped worker need not be flushed
            w = ctx.Process(target=_worker.worker_loop, daemon=True, args=(
                loader.dataset, iq, self.result_queue, self.done, fetch, wid, n,
                base_seed + wid, loader.worker_init_fn, loader._iterable, parent))
            with _sigint_blocked():
                w.start()
            self.index_queues.append(iq)
            self.workers.append(w)
        self._start_epoch(loader)

    def _start_epoch(self, loader) -> None:
        self.index_stream = loader._index_stream()
        self.send_idx = self.rcvd_idx = 0
        self.task_worker: dict = {}
        self.buffer: dict = {}
        self.exhausted = False
        self.active = set(range(len(self.workers)))
        self.next_worker = itertools.cycle(range(len(self.workers)))
        for _ in range(self.prefetch * len(self.workers)):
            self._send()

    def reset(self, loader) -> bool:
        """Start another epoch on the same (persistent) workers; False if they were stopped.

        As torch: each worker finishes the tasks of an abandoned epoch (its random draws stay
        in step with torch's), then starts a fresh pass; those stale batches are dropped.
        """
        if self.shut:
            return False
        for q in self.index_queues:
            q.put(_worker.ResumeIteration())
        acks = len(self.workers)
        while acks:
            idx, _ = self._get()
            acks -= isinstance(idx, _worker.ResumeIteration)
        self._start_epoch(loader)
        return True

    def _send(self) -> None:
        if self.exhausted or not self.active:
            return
        try:
            indices = next(self.index_stream)
        except StopIteration:
            self.exhausted = True
            return
        wid = next(self.next_worker)
        while wid not in self.active:
            wid = next(self.next_worker)
        self.index_queues[wid].put((self.send_idx, indices))
        self.task_worker[self.send_idx] = wid
        self.send_idx += 1

    def __iter__(self):
        return self

    def __next__(self):
        if self.shut:
            if self.failure:
                raise RuntimeError(self.failure)
            raise StopIteration
        while True:
            if self.rcvd_idx in self.buffer:
                data = self.buffer.pop(self.rcvd_idx)
                del self.task_worker[self.rcvd_idx]
                self.rcvd_idx += 1
                if isinstance(data, _worker.IterableEnd):
                    self.active.discard(data.worker_id)
                    continue
                self._send()
                if isinstance(data, _worker.ExceptionWrapper):
                    data.reraise()  # as torch: the workers live on, next() goes on after it
                return data
            if not self.task_worker:
                if not self.persistent:
                    self._shutdown()
                raise StopIteration
            idx, data = self._get()
            self.buffer[idx] = data

    def _get(self):
        deadline = time.monotonic() + self.timeout if self.timeout else None
        while True:
            wait_s = _POLL if deadline is None else max(0.0, min(_POLL, deadline -
                                                                 time.monotonic()))
            try:
                return self.result_queue.get(timeout=wait_s)
            except queue.Empty:
                pass
            dead = [w.pid for w in self.workers if not w.is_alive()]
            if dead:
                self._fail(f"DataLoader worker (pid(s) {', '.join(map(str, dead))}) exited "
                           "unexpectedly")
            if deadline is not None and time.monotonic() >= deadline:
                self._fail(f"DataLoader timed out after {self.timeout} seconds")

    def _fail(self, message: str) -> NoReturn:
        # a late worker is hung or far too slow, a dead one took its tasks with it: waiting
        # for any of them helps nobody
        self.failure = message
        self._shutdown(grace=0)
        raise RuntimeError(message)

    def __len__(self) -> int:
        return len(self.index_sampler)

    def _shutdown(self, grace: float = SHUTDOWN_GRACE) -> None:
        if self.shut:
            return
        self.shut = True
        if self.done is not None:
            self.done.set()  # queued tasks are skipped: only a fetch under way is finished
        for q in self.index_queues:
            with contextlib.suppress(OSError, ValueError):
                q.put(None)
        _stop_workers(self.workers, grace)
        for q in (*self.index_queues, self.result_queue):
            if q is not None:
                q.cancel_join_thread()
                q.close()

    def __del__(self) -> None:
        self._shutdown()
