"""ember.nn.functional (``F``): the stateless function behind every layer and loss.

The functions live by family in ``ember/nn/_functional/``; this module re-exports their
``__all__``.
"""

import importlib
import pkgutil

from ember.nn import _functional

__all__ = []
for _info in sorted(pkgutil.iter_modules(_functional.__path__), key=lambda m: m.name):
    _mod = importlib.import_module(f"ember.nn._functional.{_info.name}")
    for _name in getattr(_mod, "__all__", ()):
        globals()[_name] = getattr(_mod, _name)
        __all__.append(_name)
