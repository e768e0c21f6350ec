"""torch.profiler's ``profile``: the autograd profiler with activities, a step schedule and a
trace-ready callback (``on_trace_ready``), as torch's ``torch.profiler.profiler``."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterable
from enum import Enum

from ember.autograd import profiler as _autograd_profiler
from ember.autograd.profiler import record_function

__all__ = ["ProfilerAction", "ProfilerActivity", "profile", "schedule", "supported_activities",
           "tensorboard_trace_handler"]


class ProfilerActivity(Enum):
    """What to record: ember records CPU activity (CUDA kernels run through CuPy untimed)."""

    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


def supported_activities() -> set:
    return {ProfilerActivity.CPU}


class ProfilerAction(Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3
    DEVICE_STOPPED = 4


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable:
    """The action at each ``prof.step()``: skip ``skip_first`` steps, then cycles of ``wait``
    idle, ``warmup`` and ``active`` recorded steps (``repeat`` cycles, 0 for no limit)."""

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod_step < num_steps - 1 else \
            ProfilerAction.RECORD_AND_SAVE

    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), "
            f"warmup={warmup} (need >= 0), active={active} (need > 0), repeat={repeat} "
            f"(need >= 0), skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)
    return schedule_fn


def _default_schedule_fn(_: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False, use_python_export: bool = False):
    """An ``on_trace_ready`` that writes each trace to ``dir_name`` as
    ``<worker>.<time_ns>.pt.trace.json`` (what TensorBoard's profiler plugin reads)."""
    import socket
    import time

    def handler_fn(prof) -> None:
        nonlocal worker_name
        os.makedirs(dir_name, exist_ok=True)
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker_name}.{time.time_ns()}.pt.trace.json"
        prof.export_chrome_trace(os.path.join(dir_name, file_name))

    return handler_fn


_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


class profile(_autograd_profiler.profile):  # noqa: N801 - torch's name
    """``with profile(activities=[ProfilerActivity.CPU], schedule=..., on_trace_ready=...)``;
    call ``prof.step()`` after each training step. Without a schedule every step records;
    with one, each ``RECORD_AND_SAVE`` step ends a trace and calls ``on_trace_ready``.
    Each step is a ``ProfilerStep#N`` range."""

    def __init__(self, *, activities: Iterable | None = None, schedule: Callable | None = None,
                 on_trace_ready: Callable | None = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False,
                 with_flops: bool = False, with_modules: bool = False,
                 experimental_config=None, execution_trace_observer=None,
                 acc_events: bool = False, use_cuda: bool | None = None,
                 custom_trace_id_callback=None) -> None:
        super().__init__(record_shapes=record_shapes, profile_memory=profile_memory,
                         with_stack=with_stack)
        self.activities = set(activities) if activities else supported_activities()
        self.schedule = schedule if schedule is not None else _default_schedule_fn
        self.record_steps = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self.step_rec_fn = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb) -> None:
        self.stop()

    def start(self) -> None:
        if self.current_action in _RECORDING:
            self._start()
        self._begin_step()

    def stop(self) -> None:
        self._end_step()
        if self.current_action in _RECORDING:
            self._stop()
            if self.on_trace_ready:
                self.on_trace_ready(self)
        elif self.function_events is None:
            self.function_events = _autograd_profiler.EventList([])

    def step(self) -> None:
        """Signal the end of a step: the schedule decides what the next one records."""
        self._end_step()
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        if prev == ProfilerAction.RECORD_AND_SAVE or (
                prev == ProfilerAction.RECORD and self.current_action not in _RECORDING):
            self._stop()
            if self.on_trace_ready:
                self.on_trace_ready(self)
        if self.current_action in _RECORDING and (
                prev not in _RECORDING or prev == ProfilerAction.RECORD_AND_SAVE):
            self._start()
        self._begin_step()

    def _begin_step(self) -> None:
        if self.record_steps:
            self.step_rec_fn = record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def _end_step(self) -> None:
        if self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
