"""``skip_init``: a module built without spending random draws on its initialisation."""

from __future__ import annotations

import inspect

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` whose parameters are left to the caller to set: the
    random generator is where it was before (torch builds on the meta device; ember builds and
    rewinds the generator)."""
    from ember._random import get_rng_state, set_rng_state

    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    state = get_rng_state()
    try:
        return module_cls(*args, **kwargs)
    finally:
        set_rng_state(state)
