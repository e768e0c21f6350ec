"""Differentiable primitives, one family per module.

Every public module here exports ``METHODS`` (attached to Tensor) and ``FUNCTIONS`` (exported
as ``ember.<name>``). Modules are discovered, so a new family needs no registration. The
functions that take ``out=`` in torch get it here, all at once (``_out.py``).
"""

from __future__ import annotations

import importlib
import pkgutil

from ember.ops._out import add_out


def install(tensor_cls, namespace: dict) -> None:
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        for name, fn in getattr(mod, "METHODS", {}).items():
            setattr(tensor_cls, name, fn)
        namespace.update(getattr(mod, "FUNCTIONS", {}))
    add_out(namespace)
