"""Differentiable primitives, one family per module.

Every public module here exports ``METHODS`` (attached to Tensor) and ``FUNCTIONS`` (exported
as ``ember.<name>``). Modules are discovered, so a new family needs no registration.
"""

from __future__ import annotations

import importlib
import pkgutil


def install(tensor_cls, namespace: dict) -> None:
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        for name, fn in getattr(mod, "METHODS", {}).items():
            setattr(tensor_cls, name, fn)
        namespace.update(getattr(mod, "FUNCTIONS", {}))
