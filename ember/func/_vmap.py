"""vmap: map a function over a batch dimension of its inputs.

``vmap(f)(xs)`` runs ``f`` once, on BatchedTensors (``_batched``) whose ops go through batching
rules (``_batching_rules``), and moves the batch dim of the results to ``out_dims``. Where
that cannot work (``f`` reads a batched tensor's data: ``item()``, data-dependent Python, an
in-place write into a batched tensor, an op implemented in NumPy outside ``Op.apply``, a
random draw other than dropout's under randomness "same" or "different"), it runs ``f`` on
each slice of the batch and stacks the results, as torch's semantics ask: data-dependent
Python runs per sample instead of raising. ``randomness`` is honoured: "error" refuses random
ops, "same" gives every sample the same draws, "different" independent ones (not torch's
numbers: torch draws for the whole batch at once).
"""

from __future__ import annotations

from ember._random import VMAP_RANDOMNESS as RANDOMNESS  # the innermost vmap's, or None
from ember.func._pytree import flatten, unflatten

_RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please either "
                 "use the 'same' or 'different' randomness flags on vmap or perform the "
                 "randomness operation out of vmap")


def check_random() -> None:
    """Called by ember's generators before a draw."""
    if RANDOMNESS[0] == "error":
        raise RuntimeError(_RANDOM_ERROR)


def _name(func) -> str:
    return getattr(func, "__name__", repr(func))


def _in_dims(func, args: tuple, in_dims) -> list:
    """(leaf, dim or None) for every leaf of the arguments."""
    from ember._tensor import Tensor

    if not isinstance(in_dims, int | tuple | list | dict) and in_dims is not None:
        raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): expected "
                         "in_dims to be int or a (potentially nested) tuple matching the "
                         f"structure of inputs, got: {type(in_dims)}.")
    if isinstance(in_dims, tuple | list) and len(in_dims) != len(args):
        raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): in_dims is "
                         f"not compatible with the structure of `inputs`. in_dims has structure "
                         f"of length {len(in_dims)} but inputs has {len(args)} arguments.")
    pairs = []
    for k, a in enumerate(args):
        d = in_dims[k] if isinstance(in_dims, tuple | list) else in_dims
        leaves, _ = flatten(a)
        dims = flatten(d)[0] if isinstance(d, tuple | list | dict) else [d] * len(leaves)
        for x, dim in zip(leaves, dims):
            if dim is not None and not isinstance(x, Tensor):
                raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): Got "
                                 f"in_dim={dim} for an input but the input is of type "
                                 f"{type(x)}. We cannot vmap over non-Tensor arguments, please "
                                 "use None as the respective in_dim")
            if dim is not None and not -x.ndim <= dim < max(x.ndim, 1):
                raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): Got "
                                 f"in_dim={dim} for some input, but that input is a Tensor of "
                                 f"dimensionality {x.ndim} so expected in_dim to satisfy "
                                 f"-{x.ndim} <= in_dim < {x.ndim}.")
            pairs.append((x, None if dim is None else dim % x.ndim))
    return pairs


def vmap(func, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size=None):
    """``func`` mapped over dimension ``in_dims`` of its inputs (see the module doc)."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")

    def wrapped(*args, **kwargs):
        from ember import _random

        pairs = _in_dims(func, args, in_dims)
        sizes = sorted({x.shape[d] for x, d in pairs if d is not None})
        if not sizes:
            raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): at least "
                             "one input must be a Tensor with a mapped dimension")
        if len(sizes) > 1:
            raise ValueError("vmap: Expected all tensors to have the same size in the mapped "
                             f"dimension, got sizes {sizes} for the mapped dimension")
        leaves, spec = flatten(args)
        gen = _random.default_generator
        start = gen._snapshot()
        try:
            return _batched_call(func, pairs, spec, sizes[0], out_dims, kwargs, randomness)
        except Exception:  # noqa: BLE001 - the loop gives the semantics (and the errors)
            gen._restore(start)
        outs = []
        prev, RANDOMNESS[0] = RANDOMNESS[0], randomness
        try:
            for i in range(sizes[0]):
                if randomness == "same":
                    gen._restore(start)
                sliced = [x.select(d, i) if d is not None else x for x, d in pairs]
                outs.append(func(*unflatten(sliced, spec), **kwargs))
        finally:
            RANDOMNESS[0] = prev
        return _stack(func, outs, out_dims)
    return wrapped


def _batched_call(func, pairs, spec, size: int, out_dims, kwargs, randomness: str = "error"):
    """``func`` run once on BatchedTensors; Unbatchable (or any error) sends vmap to its loop.
    Random draws raise here, except those with a batched form (``_random_rules``) under
    randomness "same" or "different"."""
    from ember._tensor import Tensor
    from ember.func._batched import Unbatchable, batched_level, level_of, unwrap_output, wrap
    from ember.func._random_rules import BATCHED_RANDOMNESS

    prev, RANDOMNESS[0] = RANDOMNESS[0], "error"
    prev_b, BATCHED_RANDOMNESS[0] = BATCHED_RANDOMNESS[0], \
        None if randomness == "error" else randomness
    try:
        with batched_level(size) as level:
            args = [x if d is None else wrap(x.movedim(d, 0) if d else x, level)
                    for x, d in pairs]
            out = func(*unflatten(args, spec), **kwargs)
            outs, ospec = flatten(out)
            dims = flatten(out_dims)[0] if isinstance(out_dims, tuple | list) else \
                [out_dims] * len(outs)
            if len(dims) != len(outs) or not all(isinstance(o, Tensor) for o in outs):
                raise Unbatchable("outputs the loop reports on")
            res = []
            for o, d in zip(outs, dims):
                if d is None:
                    if level_of(o) == level:
                        raise Unbatchable("a batched output with out_dims None")
                    res.append(o)
                else:
                    res.append(unwrap_output(o, level, size, d % (o.ndim + 1)))
    finally:
        RANDOMNESS[0], BATCHED_RANDOMNESS[0] = prev, prev_b
    return unflatten(res, ospec)


def _stack(func, outs: list, out_dims):
    from ember import stack
    from ember._tensor import Tensor

    first, spec = flatten(outs[0])
    dims = flatten(out_dims)[0] if isinstance(out_dims, tuple | list) else [out_dims] * len(
        first)
    if len(dims) != len(first):
        raise ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims})(<inputs>): out_dims is "
                         "not compatible with the structure of `outputs`.")
    columns = list(zip(*(flatten(o)[0] for o in outs)))
    res = []
    for col, d in zip(columns, dims):
        if d is None:
            res.append(col[0])
            continue
        if not isinstance(col[0], Tensor):
            raise ValueError(f"vmap({_name(func)}, ...): `{_name(func)}` must only return "
                             f"Tensors, got type {type(col[0])}. Did you mean to set out_dims= "
                             "to None for output?")
        res.append(stack(list(col), d))
    return unflatten(res, spec)
