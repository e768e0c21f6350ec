"""functional_call and stack_module_state: a module run with parameters passed in."""

from __future__ import annotations

import contextlib


def _owner(module, name: str):
    *path, leaf = name.split(".")
    for p in path:
        module = getattr(module, p)
    return module, leaf


@contextlib.contextmanager
def _swapped(module, tensors: dict, strict: bool):
    """Parameters and buffers replaced by ``tensors`` (by dotted name) for the block."""
    known = dict(module.named_parameters(remove_duplicate=False))
    known.update(module.named_buffers(remove_duplicate=False))
    if strict:
        missing = sorted(set(known) - set(tensors))
        unexpected = sorted(set(tensors) - set(known))
        if missing or unexpected:
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:\n\t"
                               + "\n\t".join(
                                   ([f"Missing key(s): {', '.join(map(repr, missing))}."]
                                    if missing else []) +
                                   ([f"Unexpected key(s): {', '.join(map(repr, unexpected))}."]
                                    if unexpected else [])))
    saved = []
    try:
        for name, t in tensors.items():
            owner, leaf = _owner(module, name)
            table = owner._parameters if leaf in owner._parameters else (
                owner._buffers if leaf in owner._buffers else None)
            if table is None:
                saved.append((owner, leaf, None, owner.__dict__.get(leaf, _MISSING)))
                object.__setattr__(owner, leaf, t)
            else:
                saved.append((owner, leaf, table, table[leaf]))
                table[leaf] = t
        yield
    finally:
        for owner, leaf, table, old in reversed(saved):
            if table is not None:
                table[leaf] = old
            elif old is _MISSING:
                object.__delattr__(owner, leaf)
            else:
                object.__setattr__(owner, leaf, old)


_MISSING = object()


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """``module(*args, **kwargs)`` with its parameters and buffers replaced by the given
    tensors (a dict, or a tuple of dicts) for this call only."""
    dicts = parameter_and_buffer_dicts
    if isinstance(dicts, tuple | list):
        merged: dict = {}
        for d in dicts:
            dup = set(merged) & set(d)
            if dup:
                raise ValueError(f"['{sorted(dup)[0]}'] appeared in multiple dictionaries; "
                                 "behavior of functional call is ambiguous")
            merged.update(d)
        dicts = merged
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    with _swapped(module, dict(dicts), strict):
        return module(*args, **(kwargs or {}))


def stack_module_state(models) -> tuple:
    """(params, buffers): each model's parameters (and buffers) stacked along a new first
    dimension, ready for ``vmap(functional_call)`` over an ensemble."""
    from ember import stack

    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if any(m.training != models[0].training for m in models):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/"
                           "eval mode.")
    names = [n for n, _ in models[0].named_parameters()]
    params = {n: stack([dict(m.named_parameters())[n] for m in models]).detach()
              .requires_grad_() for n in names}
    bufs = {n: stack([dict(m.named_buffers())[n] for m in models])
            for n, _ in models[0].named_buffers()}
    return params, bufs
