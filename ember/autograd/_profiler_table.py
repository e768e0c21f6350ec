"""torch's profiler table (``EventList.table``): the same columns, widths and totals."""

from __future__ import annotations

from ember.autograd.profiler_util import _format_memory, _format_time, _format_time_share

_COL = 12  # torch's DEFAULT_COLUMN_WIDTH
_SPACING = 2

_US = {"s": 1e6, "ms": 1e3, "us": 1.0}


def _time(time_us: float, default: str, unit: str | None) -> str:
    if unit in _US:
        return f"{time_us / _US[unit]:.3f}{unit}"
    return default


def _trim_path(path: str, width: int) -> str:
    if len(path) > width:
        path = path[len(path) - width:]
        if len(path) > 3:
            path = "..." + path[3:]
    return path


class _Format:
    """The row format: right-aligned columns (the source column left-aligned), 2 spaces."""

    def __init__(self) -> None:
        self.row, self.sep, self.length = "", "", -_SPACING

    def add(self, width: int, align: str = ">") -> None:
        self.row += "{: " + align + str(width) + "}" + " " * _SPACING
        self.sep += "-" * width + " " * _SPACING
        self.length += width + _SPACING


def build_table(events, sort_by=None, header=None, row_limit=100, max_src_column_width=75,
                max_name_column_width=55, max_shapes_column_width=80, profile_memory=False,
                top_level_events_only=False, time_unit=None) -> str:
    from ember.autograd.profiler_util import EventList

    if len(events) == 0:
        return ""
    if sort_by is not None:
        key = sort_by.replace("cuda", "device").replace("xpu", "device")
        events = EventList(sorted(events, key=lambda e: getattr(e, key), reverse=True),
                           profile_memory=profile_memory)
    has_shapes = any(e.input_shapes for e in events)
    name_width = min(max(len(e.key) for e in events) + 4, max_name_column_width)
    shapes_width = min(max(len(str(e.input_shapes)) for e in events) + 4,
                       max_shapes_column_width)
    stacks = [e.stack for e in events if e.stack]
    src_width = None
    if stacks:
        src_width = min(max(max(len(x) for x in s) for s in stacks) + 4, max_src_column_width)
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
    headers.append("# of Calls")
    fmt = _Format()
    fmt.add(name_width)
    for _ in headers[1:]:
        fmt.add(_COL)
    if has_shapes:
        headers.append("Input Shapes")
        fmt.add(shapes_width)
    if stacks:
        headers.append("Source Location")
        fmt.add(src_width, "<")
    out: list = []

    def append(s: str) -> None:
        out.append(s)
        out.append("\n")

    total = sum(e.self_cpu_time_total for e in events)
    if header is not None:
        append("=" * fmt.length)
        append(header)
    if top_level_events_only:
        append("=" * fmt.length)
        append("This report only display top-level ops statistics")
    append(fmt.sep)
    append(fmt.row.format(*headers))
    append(fmt.sep)
    shown = 0
    for evt in events:
        if shown == row_limit:
            break
        if top_level_events_only and evt.cpu_parent is not None:
            continue
        shown += 1
        name = evt.key
        if len(name) >= max_name_column_width - 3:
            name = name[:max_name_column_width - 3] + "..."
        row = [name, _format_time_share(evt.self_cpu_time_total, total),
               _time(evt.self_cpu_time_total, evt.self_cpu_time_total_str, time_unit),
               _format_time_share(evt.cpu_time_total, total),
               _time(evt.cpu_time_total, evt.cpu_time_total_str, time_unit),
               _time(evt.cpu_time, evt.cpu_time_str, time_unit)]
        if profile_memory:
            row += [_format_memory(evt.cpu_memory_usage),
                    _format_memory(evt.self_cpu_memory_usage)]
        row.append(evt.count)
        if has_shapes:
            row.append(str(evt.input_shapes)[:shapes_width])
        if stacks:
            row.append(_trim_path(evt.stack[0], src_width) if evt.stack else "")
        append(fmt.row.format(*row))
        if stacks:
            empty = [""] * (len(headers) - 1)
            for entry in (evt.stack or [])[1:]:
                append(fmt.row.format(*(empty + [_trim_path(entry, src_width)])))
            append(fmt.row.format(*(empty + [""])))
    append(fmt.sep)
    append(f"Self CPU time total: {_time(total, _format_time(total), time_unit)}")
    return "".join(out)
