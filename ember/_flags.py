"""Global switches that training scripts set: matmul precision, determinism, thread counts.

ember computes with NumPy in the input dtype and its ops are deterministic, so these flags
change nothing numerically; they are stored and validated exactly as torch's CPU build does,
so scripts that set them run unchanged and read back what they wrote.
"""

from __future__ import annotations

import os
import warnings

_PRECISIONS = ("highest", "high", "medium")
_state = {
    "matmul_precision": "highest",
    "deterministic": False,
    "warn_only": False,
    "num_threads": os.cpu_count() or 1,
    "num_interop_threads": os.cpu_count() or 1,
}


def set_float32_matmul_precision(precision: str) -> None:
    """Record the float32 matmul precision ('highest', 'high' or 'medium')."""
    if not isinstance(precision, str):
        raise RuntimeError("set_float32_matmul_precision expects a str, but got "
                           f"{type(precision).__name__}")
    if precision not in _PRECISIONS:
        # torch warns and keeps the old value rather than raising (ATen Context.cpp).
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _state["matmul_precision"] = precision


def get_float32_matmul_precision() -> str:
    """The value last given to ``set_float32_matmul_precision`` ('highest' by default)."""
    return _state["matmul_precision"]


def _check_bool(value, fn: str, arg: str) -> None:
    # Both flags go through a C++ binding that accepts only a real bool (not 0/1).
    if type(value) is not bool:
        where = f"argument '{arg}' (position 1)" if arg == "mode" else f"argument '{arg}'"
        raise TypeError(f"{fn}(): {where} must be bool, not {type(value).__name__}")


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Record whether deterministic algorithms are required (ember's always are)."""
    _check_bool(mode, "_set_deterministic_algorithms", "mode")
    _check_bool(warn_only, "_set_deterministic_algorithms", "warn_only")
    _state["deterministic"] = mode
    _state["warn_only"] = warn_only


def are_deterministic_algorithms_enabled() -> bool:
    return _state["deterministic"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _state["warn_only"]


def set_deterministic_debug_mode(debug_mode: str | int) -> None:
    """0/'default': off, 1/'warn': deterministic with warnings, 2/'error': deterministic."""
    if isinstance(debug_mode, str):
        names = ("default", "warn", "error")
        if debug_mode not in names:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, "
                               f"`error`, but got {debug_mode}")
        debug_mode = names.index(debug_mode)
    elif not isinstance(debug_mode, int):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    if not _state["deterministic"]:
        return 0
    return 1 if _state["warn_only"] else 2


def _check_threads(n, fn: str) -> int:
    if type(n) is not int:  # bool is rejected too, as in torch
        raise RuntimeError(f"{fn} expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError(f"{fn} expects a positive integer")
    return n


def set_num_threads(int: int) -> None:  # noqa: A002 - torch's parameter name
    """Record the intra-op thread count (NumPy's BLAS keeps its own pool)."""
    _state["num_threads"] = _check_threads(int, "set_num_threads")


def get_num_threads() -> int:
    return _state["num_threads"]


def set_num_interop_threads(int: int) -> None:  # noqa: A002 - torch's parameter name
    """Record the inter-op thread count; as in torch, only once per process."""
    n = _check_threads(int, "set_num_interop_threads")
    if _state.get("interop_set"):
        raise RuntimeError("Error: cannot set number of interop threads after parallel work has "
                           "started or set_num_interop_threads called")
    _state["num_interop_threads"], _state["interop_set"] = n, True


def get_num_interop_threads() -> int:
    return _state["num_interop_threads"]


__all__ = [
    "are_deterministic_algorithms_enabled", "get_deterministic_debug_mode",
    "get_float32_matmul_precision", "get_num_interop_threads", "get_num_threads",
    "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
    "set_float32_matmul_precision", "set_num_interop_threads", "set_num_threads",
    "use_deterministic_algorithms",
]
