"""autograd.profiler: record how long each op, backward node and ``record_function`` block
takes (torch's ``torch.autograd.profiler``).

While a profile is active, ``Op.apply`` and the autograd engine hand every op and node to the
recording (one check each, ``PROFILER[0] is not None``, costs nothing when off). An op is named
after ember's op class (``Addmm`` -> ``aten::addmm``); a backward node appears as torch's
``autograd::engine::evaluate_function: MmBackward0`` row around an ``MmBackward0`` row, whose
children are the ops its gradient formula ran.

>>> with ember.autograd.profiler.profile(record_shapes=True) as prof:
...     with ember.autograd.profiler.record_function("forward"):
...         loss = model(x).sum()
...     loss.backward()
>>> print(prof.key_averages().table(sort_by="self_cpu_time_total"))
"""

from __future__ import annotations

import re
import sys
import threading
import time

from ember.autograd.function import PROFILER
from ember.autograd.profiler_util import EventList, FunctionEvent

__all__ = ["profile", "record_function", "EventList", "FunctionEvent"]

_NAMES: dict = {}  # op class -> its profiler name


def _op_name(cls) -> str:
    name = _NAMES.get(cls)
    if name is None:
        snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", cls.__name__.lstrip("_")).lower()
        name = _NAMES[cls] = "aten::" + snake
    return name


def _node_name(node) -> str:
    name = type(node).__name__
    return "torch::autograd::AccumulateGrad" if name == "AccumulateGrad" else name


def _shapes(values) -> list:
    return [list(v.shape) if hasattr(v, "_data") else [] for v in values]


def _user_stack() -> list:
    """The caller's frames outside ember, innermost first, as torch's ``file(line): fn``."""
    import os

    ember_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, out = sys._getframe(3), []
    while frame is not None and len(out) < 5:
        path = frame.f_code.co_filename
        if not path.startswith(ember_dir):
            out.append(f"{path}({frame.f_lineno}): {frame.f_code.co_name}")
        frame = frame.f_back
    return out


class _Recording:
    """The events of one profiling window, nested per thread as they were entered."""

    def __init__(self, record_shapes: bool, profile_memory: bool, with_stack: bool) -> None:
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.events: list = []
        self.stacks: dict = {}  # thread id -> open events
        self.t0 = time.perf_counter_ns()

    def _now(self) -> float:
        return (time.perf_counter_ns() - self.t0) / 1000.0

    def begin(self, name: str, kind: str = "cpu_op", inputs=(), seq: int = -1) -> FunctionEvent:
        tid = threading.get_ident()
        evt = FunctionEvent(len(self.events) + 1, name, tid, self._now(), 0.0,
                            _shapes(inputs) if self.record_shapes else None,
                            _user_stack() if self.with_stack else None, kind=kind,
                            sequence_nr=seq)
        stack = self.stacks.setdefault(tid, [])
        if stack:
            stack[-1].append_cpu_child(evt)
            evt.set_cpu_parent(stack[-1])
        stack.append(evt)
        self.events.append(evt)
        return evt

    def end(self, evt: FunctionEvent, outputs=()) -> None:
        evt.time_range.end = self._now()
        if self.profile_memory:  # bytes the outputs allocated (views allocate none)
            arrays = [getattr(o, "_data", None) for o in outputs]
            evt.cpu_memory_usage += sum(a.nbytes for a in arrays
                                        if hasattr(a, "flags") and a.flags.owndata)
            for child in evt.cpu_children:
                evt.cpu_memory_usage += child.cpu_memory_usage
        stack = self.stacks.get(evt.thread, [])
        while stack:  # close evt (and anything left open inside it)
            if stack.pop() is evt:
                break

    def op(self, cls, inputs, kw):
        """``Op.apply`` while recording: the op runs with recording paused for its body."""
        evt = self.begin(_op_name(cls), inputs=inputs)
        PROFILER[0] = None
        try:
            out = cls.apply(*inputs, **kw)
        finally:
            PROFILER[0] = self
            self.end(evt, out if type(out) is tuple else (out,))
        return out

    def node(self, node, run, grads):
        """One backward node as torch shows it: evaluate_function around the node's call."""
        name = _node_name(node)
        outer = self.begin("autograd::engine::evaluate_function: " + name)
        inner = self.begin(name, inputs=[g for g in grads if g is not None],
                           seq=getattr(node, "_seq", -1))
        try:
            outs = run(node, grads)
        finally:
            self.end(inner, [g for g in (outs if "outs" in locals() else ()) if g is not None])
            self.end(outer)
        return outs


class profile:  # noqa: N801 - torch's name
    """``with profile() as prof:`` records everything ember runs inside the block.

    ``prof.function_events`` (also ``prof.events()``) is the EventList; ``key_averages()``
    groups it, ``table()`` prints it, ``export_chrome_trace(path)`` writes a trace.
    """

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device=None,
                 record_shapes: bool = False, with_flops: bool = False,
                 profile_memory: bool = False, with_stack: bool = False,
                 with_modules: bool = False, use_kineto: bool = False, use_cpu: bool = True,
                 experimental_config=None, acc_events: bool = False,
                 custom_trace_id_callback=None) -> None:
        self.enabled = enabled
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.function_events = None
        self._recording = None
        self.entered = False

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self._start()
        return self

    def _start(self) -> None:
        if PROFILER[0] is not None:
            raise RuntimeError("Profiler is already enabled on this thread")
        self._recording = _Recording(self.record_shapes, self.profile_memory, self.with_stack)
        PROFILER[0] = self._recording

    def __exit__(self, exc_type, exc_val, exc_tb) -> None:
        if not self.enabled:
            return
        self._stop()

    def _stop(self) -> None:
        if PROFILER[0] is self._recording:
            PROFILER[0] = None
        events = self._recording.events if self._recording is not None else []
        self.function_events = EventList(events, profile_memory=self.profile_memory)
        self._recording = None

    def _check_finish(self) -> None:
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")

    def events(self) -> EventList:
        self._check_finish()
        return self.function_events

    def table(self, sort_by=None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80,
              header=None, top_level_events_only: bool = False) -> str:
        self._check_finish()
        return self.function_events.table(
            sort_by=sort_by, row_limit=row_limit, max_src_column_width=max_src_column_width,
            max_name_column_width=max_name_column_width,
            max_shapes_column_width=max_shapes_column_width, header=header,
            top_level_events_only=top_level_events_only)

    def export_chrome_trace(self, path: str) -> None:
        self._check_finish()
        self.function_events.export_chrome_trace(path)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        self._check_finish()
        return self.function_events.key_averages(group_by_input_shape, group_by_stack_n)

    def total_average(self):
        self._check_finish()
        return self.function_events.total_average()

    @property
    def self_cpu_time_total(self) -> float:
        self._check_finish()
        return self.function_events.self_cpu_time_total

    def __repr__(self) -> str:
        if self.function_events is None:
            return "<unfinished torch.autograd.profile>"
        return repr(self.function_events)

    def __str__(self) -> str:
        if self.function_events is None:
            return "<unfinished torch.autograd.profile>"
        return str(self.function_events)


class record_function:  # noqa: N801 - torch's name
    """A named range in the profile (a context manager or a decorator); nothing when no
    profile is recording."""

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name
        self.args = args
        self._event = None
        self._recording = None

    def __enter__(self):
        rec = PROFILER[0]
        if rec is not None:
            self._recording = rec
            self._event = rec.begin(self.name, kind="user_annotation")
        return self

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        if self._event is not None:
            self._recording.end(self._event)
            self._event = self._recording = None

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)

        return wrapped
