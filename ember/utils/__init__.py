"""ember.utils: hooks, checkpoint, data, tensorboard, dlpack; submodules load on first use."""


def __getattr__(name: str):
    import importlib

    if name in {"checkpoint", "data", "dlpack", "hooks", "tensorboard"}:
        return importlib.import_module(f"ember.utils.{name}")
    raise AttributeError(f"module 'ember.utils' has no attribute '{name}'")
