"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode (thread-local), and the
engine switches set_multithreading_enabled and enforce_grad_layout_policy."""

from __future__ import annotations

import functools
import inspect
import threading


class _State(threading.local):
    def __init__(self) -> None:
        self.enabled = True
        self.inference = False
        self.grad_layout_enforced = True  # enforce_grad_layout_policy (thread-local in torch)


STATE = _State()
# set_multithreading_enabled: process-wide in torch. ember's engine runs every backward on the
# calling thread, so the switch is state only.
_MULTITHREADING = [True]


def is_grad_enabled() -> bool:
    return STATE.enabled


def is_inference_mode_enabled() -> bool:
    return STATE.inference


class _DecoratorContextManager:
    """A context manager that also works as a function decorator, as torch's grad modes do."""

    def __call__(self, func):
        if inspect.isclass(func):
            raise RuntimeError("ember grad modes cannot decorate classes")
        if inspect.isgeneratorfunction(func):
            @functools.wraps(func)
            def gen(*args, **kwargs):
                with self.clone():
                    yield from func(*args, **kwargs)
            return gen

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)
        return wrapper

    def clone(self):
        return self.__class__()


class no_grad(_DecoratorContextManager):
    """Disable gradient tracking inside the block."""

    def __enter__(self) -> None:
        self.prev = STATE.enabled
        STATE.enabled = False

    def __exit__(self, *exc) -> None:
        STATE.enabled = self.prev


class enable_grad(_DecoratorContextManager):
    """Enable gradient tracking inside the block (e.g. inside a no_grad region)."""

    def __enter__(self) -> None:
        self.prev = STATE.enabled
        STATE.enabled = True

    def __exit__(self, *exc) -> None:
        STATE.enabled = self.prev


class set_grad_enabled(_DecoratorContextManager):
    """Set grad mode on or off; acts immediately, and restores the old mode as a context."""

    def __init__(self, mode: bool) -> None:
        self.prev = STATE.enabled
        self.mode = bool(mode)
        STATE.enabled = self.mode

    def __enter__(self) -> None:
        STATE.enabled = self.mode

    def __exit__(self, *exc) -> None:
        STATE.enabled = self.prev

    def clone(self):
        return self.__class__(self.mode)


class inference_mode(_DecoratorContextManager):
    """Like no_grad; tensors made inside are inference tensors (``is_inference()``)."""

    def __init__(self, mode: bool = True) -> None:
        self.mode = mode

    def __enter__(self) -> None:
        self.prev = (STATE.enabled, STATE.inference)
        if self.mode:
            STATE.enabled = False
            STATE.inference = True

    def __exit__(self, *exc) -> None:
        STATE.enabled, STATE.inference = self.prev

    def clone(self):
        return self.__class__(self.mode)


class set_multithreading_enabled(_DecoratorContextManager):
    """Let backward run on per-device worker threads or not. Acts immediately; as a context it
    restores the previous setting. ember's engine runs on the calling thread either way."""

    def __init__(self, mode: bool) -> None:
        self.prev = _MULTITHREADING[0]
        _MULTITHREADING[0] = mode
        self.mode = mode

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        _MULTITHREADING[0] = self.prev

    def clone(self):
        return self.__class__(self.mode)


class enforce_grad_layout_policy(_DecoratorContextManager):
    """Whether accumulated gradients must take their parameter's strides (torch may steal a
    gradient of another layout when off). Acts immediately, thread-local; restores the previous
    setting as a context. ember's ``.grad`` is the same either way."""

    def __init__(self, enable: bool = True) -> None:
        self.prev = STATE.grad_layout_enforced
        STATE.grad_layout_enforced = enable
        self.mode = enable

    def __call__(self, func):
        STATE.grad_layout_enforced = self.prev  # as a decorator it applies only in calls
        return super().__call__(func)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        STATE.grad_layout_enforced = self.prev

    def clone(self):
        return self.__class__(self.mode)
