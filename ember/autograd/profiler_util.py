"""The profiler's results: events, their averages and torch's table (torch's
``torch.autograd.profiler_util``, CPU columns only)."""

from __future__ import annotations

import json
import os
import threading
from collections import defaultdict

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "Interval"]


class Interval:
    def __init__(self, start: float, end: float) -> None:
        self.start = start
        self.end = end

    def elapsed_us(self) -> float:
        return self.end - self.start


def _format_time(time_us: float) -> str:
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us: float, total_time_us: float) -> str:
    if total_time_us == 0:
        return "NaN" if time_us == 0 else "inf"
    return f"{time_us * 100.0 / total_time_us:.2f}%"


def _format_memory(nbytes: int) -> str:
    kb, mb, gb = 1024, 1024 * 1024, 1024 * 1024 * 1024
    if abs(nbytes) >= gb:
        return f"{nbytes * 1.0 / gb:.2f} GB"
    if abs(nbytes) >= mb:
        return f"{nbytes * 1.0 / mb:.2f} MB"
    if abs(nbytes) >= kb:
        return f"{nbytes * 1.0 / kb:.2f} KB"
    return str(nbytes) + " B"


class _FormattedTimes:
    """``<attr>_str`` for the time attributes, as torch's FormattedTimesMixin."""

    @property
    def cpu_time(self) -> float:
        return 0.0 if self.count == 0 else 1.0 * self.cpu_time_total / self.count

    @property
    def device_time(self) -> float:
        return 0.0

    cuda_time = device_time

    @property
    def device_time_total(self) -> float:
        return 0.0

    cuda_time_total = self_device_time_total = self_cuda_time_total = device_time_total

    @property
    def cpu_time_str(self) -> str:
        return _format_time(self.cpu_time)

    @property
    def cpu_time_total_str(self) -> str:
        return _format_time(self.cpu_time_total)

    @property
    def self_cpu_time_total_str(self) -> str:
        return _format_time(self.self_cpu_time_total)


class FunctionEvent(_FormattedTimes):
    """One recorded range: an op, a backward node, or a ``record_function`` block."""

    def __init__(self, id: int, name: str, thread: int, start_us: float, end_us: float,
                 input_shapes=None, stack=None, cpu_memory_usage: int = 0,
                 kind: str = "cpu_op", sequence_nr: int = -1) -> None:
        self.id = id
        # torch's event lists name every step range ProfilerStep* (traces keep the number)
        self.trace_name = name
        self.name = "ProfilerStep*" if name.startswith("ProfilerStep#") else name
        self.thread = thread
        self.time_range = Interval(start_us, end_us)
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.stack = stack if stack is not None else []
        self.cpu_memory_usage = cpu_memory_usage
        self.kind = kind
        self.sequence_nr = sequence_nr
        self.cpu_children: list = []
        self.cpu_parent = None
        self.count = 1
        self.node_id = -1
        self.is_async = False
        self.is_remote = False
        self.is_legacy = False
        self.device_type = "CPU"
        self.overload_name = ""
        self.flops = 0

    def append_cpu_child(self, child: FunctionEvent) -> None:
        self.cpu_children.append(child)

    def set_cpu_parent(self, parent: FunctionEvent) -> None:
        self.cpu_parent = parent

    @property
    def key(self) -> str:
        return self.name

    @property
    def cpu_time_total(self) -> float:
        return self.time_range.elapsed_us()

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def self_cpu_memory_usage(self) -> int:
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} device_type=DeviceType.CPU "
                f"node_id={self.node_id} cpu_time={self.cpu_time_str} "
                f"start_us={self.time_range.start:.3f} end_us={self.time_range.end:.3f} "
                f"cpu_children={[c.id for c in self.cpu_children]} thread={self.thread} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage} "
                f"is_async=False is_remote=False seq_nr={self.sequence_nr} is_legacy=False>")


class FunctionEventAvg(_FormattedTimes):
    """The events of one key (name, and input shapes or stack when grouped by them)."""

    def __init__(self) -> None:
        self.key = None
        self.count = 0
        self.node_id = 0
        self.is_async = False
        self.is_remote = False
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.input_shapes = None
        self.stack = None
        self.scope = None
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.cpu_children = None
        self.cpu_parent = None
        self.device_type = "CPU"
        self.is_legacy = False
        self.flops = 0
        self.overload_name = ""

    def add(self, other) -> FunctionEventAvg:
        if self.key is None:
            self.key = other.key
            self.node_id = other.node_id
            self.input_shapes = other.input_shapes
            self.stack = other.stack
            self.cpu_children = other.cpu_children
            self.cpu_parent = other.cpu_parent
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.count += other.count
        return self

    def __iadd__(self, other) -> FunctionEventAvg:
        return self.add(other)

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage}>")


class EventList(list):
    """A list of events with torch's summaries: ``key_averages``, ``table``,
    ``export_chrome_trace``, ``total_average``."""

    def __init__(self, *args, use_device=None, profile_memory: bool = False,
                 with_flops: bool = False, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._with_flops = with_flops

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def table(self, sort_by: str | None = None, row_limit: int = 100,
              max_src_column_width: int = 75, max_name_column_width: int = 55,
              max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False, time_unit: str | None = None) -> str:
        """torch's text table, one row per event (sorted by ``sort_by``, descending)."""
        from ember.autograd._profiler_table import build_table

        return build_table(self, sort_by=sort_by, header=header, row_limit=row_limit,
                           max_src_column_width=max_src_column_width,
                           max_name_column_width=max_name_column_width,
                           max_shapes_column_width=max_shapes_column_width,
                           profile_memory=self._profile_memory,
                           top_level_events_only=top_level_events_only, time_unit=time_unit)

    def __str__(self) -> str:
        return self.table()

    def key_averages(self, group_by_input_shapes: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """One FunctionEventAvg per name (and input shapes / top ``group_by_stack_n`` stack
        frames when asked), in order of first appearance."""
        stats: dict = defaultdict(FunctionEventAvg)
        for evt in self:
            key = [evt.key]
            if group_by_input_shapes:
                key.append(str(evt.input_shapes))
            if group_by_stack_n > 0:
                key += evt.stack[:group_by_stack_n]
            stats[tuple(key)].add(evt)
        avg_list = EventList(stats.values(), use_device=self._use_device,
                             profile_memory=self._profile_memory, with_flops=self._with_flops)
        for evt in avg_list:
            evt.stack = evt.stack[:group_by_stack_n]
            if not group_by_input_shapes:
                evt.input_shapes = ""
        return avg_list

    def total_average(self) -> FunctionEventAvg:
        total = FunctionEventAvg()
        for evt in self:
            total += evt
            total.key = None
        total.key = "Total"
        return total

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as a Chrome trace (``chrome://tracing``, Perfetto)."""
        pid = os.getpid()
        events = [{"ph": "M", "name": "process_name", "ts": 0, "pid": pid, "tid": 0,
                   "args": {"name": "python"}},
                  {"ph": "M", "name": "thread_name", "ts": 0, "pid": pid,
                   "tid": threading.get_ident(), "args": {"name": "python main thread"}}]
        for i, evt in enumerate(sorted(self, key=lambda e: e.time_range.start)):
            args = {"External id": evt.id, "Ev Idx": i}
            if evt.input_shapes:
                args["Input Dims"] = evt.input_shapes
            if evt.sequence_nr >= 0:
                args["Sequence number"] = evt.sequence_nr
            events.append({"ph": "X", "cat": evt.kind, "name": evt.trace_name, "pid": pid,
                           "tid": evt.thread, "ts": evt.time_range.start,
                           "dur": evt.time_range.elapsed_us(), "args": args})
        trace = {"schemaVersion": 1, "deviceProperties": [], "displayTimeUnit": "ms",
                 "traceEvents": events, "traceName": path}
        with open(path, "w") as f:
            json.dump(trace, f)
