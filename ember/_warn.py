"""Warnings that name the user's line, however many of ember's frames lie between (the out=
wrapper, autocast's wrapper, a Tensor method calling the function)."""

from __future__ import annotations

import sys
import warnings


def warn_user(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn`` at the first frame outside ember."""
    frame, level = sys._getframe(1), 2
    while frame is not None and _in_ember(frame):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


def _in_ember(frame) -> bool:
    name = frame.f_globals.get("__name__", "")
    return name == "ember" or name.startswith("ember.")
