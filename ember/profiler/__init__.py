"""ember.profiler: time every op, backward node and ``record_function`` range, as
``torch.profiler`` (CPU activity; tables, averages and Chrome traces).

>>> from ember.profiler import profile, record_function, ProfilerActivity
>>> with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
...     with record_function("model_inference"):
...         model(inputs)
>>> print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))
"""

from ember.autograd.profiler import record_function
from ember.profiler.profiler import (
    ProfilerAction,
    ProfilerActivity,
    profile,
    schedule,
    supported_activities,
    tensorboard_trace_handler,
)

__all__ = ["profile", "record_function", "schedule", "supported_activities",
           "tensorboard_trace_handler", "ProfilerAction", "ProfilerActivity"]
