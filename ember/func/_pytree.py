"""Flatten nested tuples, lists and dicts of tensors (torch.func's pytrees, the common ones)."""

from __future__ import annotations


def flatten(obj) -> tuple:
    """The leaves of ``obj`` in order, and a spec to rebuild it with ``unflatten``."""
    leaves: list = []
    return leaves, _spec(obj, leaves)


def _spec(obj, leaves: list):
    if type(obj) in (tuple, list):
        return (type(obj), [_spec(o, leaves) for o in obj])
    if type(obj) is dict:
        return (dict, {k: _spec(v, leaves) for k, v in obj.items()})
    leaves.append(obj)
    return None


def unflatten(leaves, spec):
    it = iter(leaves)

    def build(s):
        if s is None:
            return next(it)
        kind, inner = s
        if kind is dict:
            return {k: build(v) for k, v in inner.items()}
        return kind(build(v) for v in inner)
    return build(spec)


def tree_map(fn, obj):
    leaves, spec = flatten(obj)
    return unflatten([fn(x) for x in leaves], spec)
