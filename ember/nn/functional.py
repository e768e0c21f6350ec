"""ember.nn.functional (``F``): the stateless function behind every layer and loss.

The functions live by family in ``ember/nn/_functional/``; this module re-exports their
``__all__`` and is their public home, as torch.nn.functional is torch's: pickles (a whole
TransformerEncoderLayer, whose ``activation`` is F.relu) name them ``ember.nn.functional.relu``.
"""

import importlib
import pkgutil

from ember.nn import _functional

__all__ = []
for _info in sorted(pkgutil.iter_modules(_functional.__path__), key=lambda m: m.name):
    _mod = importlib.import_module(f"ember.nn._functional.{_info.name}")
    for _name in getattr(_mod, "__all__", ()):
        _fn = getattr(_mod, _name)
        if getattr(_fn, "__module__", None) == _mod.__name__:
            _fn.__module__ = __name__
        globals()[_name] = _fn
        __all__.append(_name)
