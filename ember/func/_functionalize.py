"""``functionalize``: a function run with its mutations turned into out-of-place ops.

torch's functionalize rewrites a program so that no op mutates or (with
``remove="mutations_and_views"``) aliases; run eagerly, the functionalized function returns the
same values and applies the function's mutations of its inputs back to them at the end. ember
runs the function eagerly (its in-place ops already leave every input as torch's copy-back
does) and then gives the outputs torch's aliasing. With ``"mutations"``, views of an input the
function did not mutate stay views of it (torch regenerates them on the input), and outputs
that alias a mutated input become the same views of one fresh copy of it. With
``"mutations_and_views"`` every view output is a contiguous copy, as the ``*_copy`` ops make
it. An input returned unchanged comes back as itself, as in torch.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

_BAD_REMOVE = ("functionalize(f, remove='mutations'): received invalid argument for remove={}."
               " Valid options are:\n     remove='mutations': all inplace and out= operators "
               "will be removed from the program, and replaced with their out-of-place "
               "equivalents.\n     remove='mutations_and_views': In addition to the above, all "
               "aliasing operators {{view}} will be replaced with their non-aliasing "
               "counterparts, {{view}}_copy.\n")


def functionalize(func: Callable[..., Any], *, remove: str = "mutations") -> Callable[..., Any]:
    """``func`` with its mutations (and views) removed; see the module doc."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(_BAD_REMOVE.format(remove))
    views_too = remove == "mutations_and_views"

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        from ember._tensor import Tensor
        from ember.func._pytree import flatten, tree_map

        inputs = [x for x in flatten((args, kwargs))[0] if isinstance(x, Tensor)]
        versions = [x._vc[0] for x in inputs]
        out = func(*args, **kwargs)
        mutated = [x for x, v in zip(inputs, versions) if x._vc[0] != v]
        fresh: dict = {}  # id(mutated input's base) -> its copy, shared by the outputs' views

        def cut(o):
            if not isinstance(o, Tensor):
                return o
            if views_too:
                if o._base is not None or any(o is x for x in mutated) or \
                        any(_shares(o, x) for x in inputs):
                    return _contiguous_copy(o)
                return o
            for x in mutated:
                if o is x or _shares(o, x):
                    return _on_copy(o, x, fresh)
            return o
        return tree_map(cut, out)
    return wrapped


def _shares(a, b) -> bool:
    return a is b or np.may_share_memory(a._data, b._data)


def _contiguous_copy(o):
    from ember import contiguous_format

    return o.clone(memory_format=contiguous_format)


def _on_copy(o, x, fresh: dict):
    """``o`` (which aliases the mutated input ``x``) as the same view of one copy of ``x``'s
    storage: outputs that aliased each other still do, the input no longer."""
    from ember import as_strided

    root = x._base if x._base is not None else x
    if id(root) not in fresh:
        fresh[id(root)] = root.clone()
    copy = fresh[id(root)]
    return as_strided(copy, o.size(), o.stride(),
                      o.storage_offset() - root.storage_offset() + copy.storage_offset())
