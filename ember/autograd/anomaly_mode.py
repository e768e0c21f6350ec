"""Anomaly detection: remember where each node was created, and check backward for NaNs.

While enabled, every node records the stack of the forward call that created it (ember's own
frames dropped, so the user's line is last, as in torch). When a node's backward fails, or
returns NaN with ``check_nan``, a UserWarning shows that forward traceback before the error.
"""

from __future__ import annotations

import os
import traceback
import warnings

from ember.autograd import graph
from ember.autograd.grad_mode import _DecoratorContextManager

_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def is_anomaly_enabled() -> bool:
    return graph.ANOMALY[0]


def is_anomaly_check_nan_enabled() -> bool:
    return graph.ANOMALY[1]


def forward_stack() -> list:
    """The current stack as formatted lines, without ember's frames at the top."""
    frames = traceback.extract_stack()[:-1]
    while frames and frames[-1].filename.startswith(_EMBER_DIR):
        frames.pop()
    return traceback.format_list(frames)


def warn_forward_trace(node) -> None:
    """Called by the engine when ``node`` failed: show where it was created."""
    if node._anomaly:
        warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused "
                      "the error:\n" + "".join(node._anomaly), UserWarning, stacklevel=4)


class detect_anomaly(_DecoratorContextManager):
    """Context manager / decorator enabling anomaly detection for autograd.

    >>> with ember.autograd.detect_anomaly():
    ...     loss.backward()   # a NaN gradient now names its node and forward line
    """

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", UserWarning, stacklevel=2)

    def __enter__(self) -> None:
        self.prev = tuple(graph.ANOMALY)
        graph.ANOMALY[:] = [True, self.check_nan]

    def __exit__(self, *exc) -> None:
        graph.ANOMALY[:] = list(self.prev)

    def clone(self):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return self.__class__(self.check_nan)


class set_detect_anomaly(_DecoratorContextManager):
    """Turn anomaly detection on or off now; as a context manager, restore it on exit."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = tuple(graph.ANOMALY)
        self.mode, self.check_nan = bool(mode), check_nan
        graph.ANOMALY[:] = [self.mode, check_nan]

    def __enter__(self) -> None:
        graph.ANOMALY[:] = [self.mode, self.check_nan]

    def __exit__(self, *exc) -> None:
        graph.ANOMALY[:] = list(self.prev)

    def clone(self):
        return self.__class__(self.mode, self.check_nan)


__all__ = ["detect_anomaly", "is_anomaly_check_nan_enabled", "is_anomaly_enabled",
           "set_detect_anomaly"]
