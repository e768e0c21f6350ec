"""ember.compile: torch.compile's interface over ember's compiler (``ember.compiler``).

``compile`` validates its arguments as torch does and returns objects shaped like torch's (an
``OptimizedModule`` wrapper for modules, a ``functools.wraps`` wrapper for functions) whose
calls go through a ``CompiledFunction``: captured once per signature, then replayed as a flat
NumPy program. Outputs, gradients, state_dict keys (prefixed ``_orig_mod.``) and reprs are what
a torch user sees after ``torch.compile``. The backends ``"eager"`` and ``disable=True`` run
the original code unchanged.
"""

from __future__ import annotations

import functools
import warnings
import weakref
from collections.abc import Callable
from typing import Any

from ember.nn.modules import _hooks
from ember.nn.modules.module import Module

_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
# torch._dynamo.list_backends(exclude_tags=()) on a CPU build of torch 2.13.
_BACKENDS = frozenset({
    "aot_eager", "aot_eager_decomp_partition", "aot_eager_decomp_partition_crossref",
    "aot_eager_decomp_partition_with_mode", "aot_eager_default_partitioner", "aot_ts",
    "cudagraphs", "dynamo_accuracy_minifier_backend", "dynamo_minifier_backend", "eager",
    "eager_debug", "eager_noexcept", "inductor", "invoke_subgraph", "openxla", "openxla_eval",
    "pre_dispatch_eager", "ts", "tvm",
})


class InvalidBackend(RuntimeError):
    """An unknown backend name (torch._dynamo.exc.InvalidBackend)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"Invalid backend: {name!r}, see `torch._dynamo.list_backends()` for "
                         "available backends.")


class _EagerContext:
    """What torch keeps as the module's ``dynamo_ctx``: here only the settings, for display."""

    def __init__(self, **settings: Any) -> None:
        self.settings = settings

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.settings.items())
        return f"_EagerContext({inner})"


def list_backends(exclude_tags: tuple = ("debug", "experimental")) -> list[str]:
    """Backend names ``compile`` accepts: ``"ember"`` (the default; torch's ``"inductor"``
    and the other compiling backends mean the same here), and ``"eager"``."""
    if exclude_tags:
        return ["cudagraphs", "ember", "inductor", "openxla", "tvm"]
    return sorted(_BACKENDS | {"ember"})


class OptimizedModule(Module):
    """The wrapper ``compile(module)`` returns: it owns the original as ``_orig_mod`` and
    forwards attribute reads and writes to it, as torch's does."""

    _opt_mod_attributes = {
        "_orig_mod", "dynamo_ctx", "_torchdynamo_orig_callable", "_torchdynamo_wrapper_id",
        "get_compiler_config", "forward", "_forward", "__dict__", "named_children_walk",
        "_super_module_initialized",
    }

    def __init__(self, mod: Module, dynamo_ctx: Any = None) -> None:
        # _orig_mod goes first: attribute access on self is routed through it.
        object.__setattr__(self, "_orig_mod", mod)
        object.__setattr__(self, "_super_module_initialized", False)
        super().__init__()
        object.__setattr__(self, "_super_module_initialized", True)
        self._orig_mod = mod  # registers it as the only child, so keys get "_orig_mod."
        self.dynamo_ctx = dynamo_ctx
        self._initialize()

    def _initialize(self) -> None:
        # torch runs the original's __call__ (with its hooks) inside the compiled frame.
        ctx = self.dynamo_ctx
        if isinstance(ctx, _EagerContext) and ctx.settings.get("backend") == "eager":
            self.forward = self._orig_mod.__call__
        else:
            self.forward = _compiled(self._orig_mod._call_impl, ctx, owner=self._orig_mod)

    def __call__(self, *args, **kwargs):
        if _hooks.any_global_call_hooks():
            warnings.warn(
                "Using `torch.compile(module)` when there are global hooks on modules (e.g., "
                "from `register_module_forward_hook`); this will cause the hooks to fire an "
                "extra time for the `OptimizedModule` created by `torch.compile(module)`. If "
                "this causes undesired behavior, please try using `module.compile()`, or use "
                "the per-module hooks instead", stacklevel=2)
        return super().__call__(*args, **kwargs)

    _call_impl = __call__

    def __len__(self) -> int:
        if hasattr(type(self._orig_mod), "__len__"):
            return len(self._orig_mod)
        raise TypeError(f"{type(self._orig_mod).__name__} does not support len()")

    @property
    def training(self) -> bool:  # type: ignore[override]
        return self._orig_mod.training

    @training.setter
    def training(self, value: bool) -> None:
        # Module.__init__ sets the default; the wrapper mirrors the original instead.
        if self.__dict__.get("_super_module_initialized"):
            self._orig_mod.training = value

    def __getattr__(self, name: str):
        if name == "_orig_mod":
            return self.__dict__["_modules"]["_orig_mod"]
        return getattr(self._orig_mod, name)

    def __setattr__(self, name: str, value) -> None:
        if hasattr(type(self), name) or name in OptimizedModule._opt_mod_attributes:
            return super().__setattr__(name, value)
        return setattr(self._orig_mod, name, value)

    def __delattr__(self, name: str) -> None:
        if hasattr(type(self), name) or name in OptimizedModule._opt_mod_attributes:
            return super().__delattr__(name)
        return delattr(self._orig_mod, name)

    def __reduce__(self):
        return (self.__class__, (self._orig_mod, self.dynamo_ctx))

    def __dir__(self) -> list:
        orig = self._orig_mod.__dir__()
        return orig + [a for a in super().__dir__() if a not in orig]


def _compiled(fn: Callable, ctx: _EagerContext, owner=None) -> Callable:
    from ember.compiler import _COMPILED, CompiledFunction

    cf = CompiledFunction(fn, fullgraph=bool(ctx.settings.get("fullgraph")), owner=owner,
                          cudagraphs=ctx.settings.get("mode") in ("reduce-overhead",
                                                                  "max-autotune"))
    _COMPILED.append(weakref.ref(cf))
    return cf


def _wrap_function(fn: Callable, ctx: _EagerContext) -> Callable:
    run = fn if ctx.settings.get("backend") == "eager" else _compiled(fn, ctx)

    @functools.wraps(fn)
    def compiled(*args, **kwargs):
        return run(*args, **kwargs)

    compiled._torchdynamo_orig_callable = fn  # type: ignore[attr-defined]
    compiled._ember_compiled = run  # type: ignore[attr-defined]
    return compiled


def _check_settings(*, fullgraph: bool = False, dynamic: bool | None = None,
                    backend: str | Callable | None = None, mode: str | None = None,
                    options: dict | None = None, name: str | None = None,
                    disable: bool = False, recompile_limit: int | None = None,
                    isolate_recompiles: bool = False, shapes_spec: Any = None) -> dict:
    """``compile``'s keyword arguments, checked as torch checks them."""
    if backend is None:
        backend = "ember"
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if mode is None and options is None:
        mode = "default"
    if backend in ("inductor", "ember"):
        if options is None and mode not in _MODES:
            raise RuntimeError(f"Unrecognized mode={mode}, should be one of: "
                               f"{', '.join(_MODES)}")
        # Inductor's option names are not checked: ember has no inductor to configure.
        if options is not None and not hasattr(options, "items"):
            raise AttributeError(f"'{type(options).__name__}' object has no attribute 'items'")
    elif isinstance(backend, str) and backend not in _BACKENDS:
        raise InvalidBackend(backend)
    if dynamic is not None and not isinstance(dynamic, bool):
        raise AssertionError(f"Expected enable to be a bool, got {type(dynamic)}")
    return dict(fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                options=options, name=name, disable=disable, recompile_limit=recompile_limit,
                isolate_recompiles=isolate_recompiles, shapes_spec=shapes_spec)


def compile(model: Callable | None = None, **kwargs: Any) -> Callable:  # noqa: A001
    """``torch.compile``: capture ``model`` once per input signature and replay the captured
    NumPy program on later calls (see ``ember.compiler``).

    Keywords as torch's: ``fullgraph`` (raise where capture fails instead of running eagerly),
    ``dynamic``, ``backend`` (``"ember"``; ``"eager"`` runs the original), ``mode``
    (``"default"``, ``"reduce-overhead"``, ``"max-autotune"``, ...: the same program on the
    CPU), ``options``, ``disable``. A module comes back wrapped in an ``OptimizedModule``; a
    function in a wrapper with the same name and ``__wrapped__``; with no model, a decorator.
    """
    if model is None:  # used as @ember.compile(...)
        _check_settings(**kwargs)

        def decorator(model: Callable) -> Callable:
            if model is None:
                raise RuntimeError("Model can't be None")
            return compile(model, **kwargs)

        return decorator
    settings = _check_settings(**kwargs)
    if not callable(model):
        raise AssertionError(f"A callable function is expected, but {type(model)} is "
                             "provided.")
    if settings["disable"]:
        return model
    if isinstance(model, Module) and not isinstance(model, OptimizedModule):
        return OptimizedModule(model, _EagerContext(**settings))
    return _wrap_function(model, _EagerContext(**settings))


__all__ = ["InvalidBackend", "OptimizedModule", "compile", "list_backends"]
