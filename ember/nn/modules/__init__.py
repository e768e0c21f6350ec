"""Every layer family lives in its own file here; their ``__all__`` names are re-exported."""

import importlib
import pkgutil

# Public in their own module but, as in torch, not re-exported from torch.nn.
_NOT_REEXPORTED = {"LazyModuleMixin"}

__all__ = []
for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    _mod = importlib.import_module(f"{__name__}.{_info.name}")
    for _name in getattr(_mod, "__all__", ()):
        if _name not in _NOT_REEXPORTED:
            globals()[_name] = getattr(_mod, _name)
            __all__.append(_name)
