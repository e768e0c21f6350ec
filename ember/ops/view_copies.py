"""The copying forms of view ops: ``torch.diagonal_copy``, ``t_copy``, ``split_copy``, ...
(torch's functionalization variants), ``narrow_copy``, and the ``unsafe_split`` family.

Each runs the view op and hands back a fresh contiguous copy (or, for ``unsafe_*``, the same
memory without view tracking). The view op's node stays the grad_fn, recorded under torch's
name for the copying form (``DiagonalBackward0_copy``, ``NarrowCopyBackward0``, ...): its
backward is the view's, so the gradients are too.
"""

from __future__ import annotations

from ember._tensor import Tensor
from ember.ops.pointwise import NotDifferentiable
from ember.ops.shape import Alias

_RENAMED: dict = {}


def rename_node(t: Tensor, name: str) -> None:
    """Record ``t``'s grad_fn under torch's node ``name`` (a subclass of its node class: the
    same backward, hooks and saved tensors)."""
    node = t._grad_fn
    if node is None or type(node).__name__ == name:
        return
    key = (type(node), name)
    if key not in _RENAMED:
        _RENAMED[key] = type(name, (type(node),), {"__module__": type(node).__module__})
    node.__class__ = _RENAMED[key]


def _detached_result(r: Tensor, copy: bool) -> Tensor:
    """A new tensor over ``r``'s values (copied, or the same memory) with ``r``'s history but
    no view relation."""
    out = Tensor._make(r._data.copy() if copy else r._data, r._grad_fn, r._output_nr)
    out._rg = r._rg
    return out


def _results(res, name: str | None, copy: bool = True):
    if isinstance(res, Tensor):
        out = _detached_result(res, copy)
        if name:
            rename_node(out, name)
        return out
    outs = tuple(_detached_result(r, copy) for r in res)
    if name and outs:
        rename_node(outs[0], name)  # one node for all outputs
    return outs


def _copy_form(view_name: str, torch_name: str):
    def fn(input: Tensor, *args, **kwargs):
        kwargs.pop("implicit", None)  # expand_copy's flag for traced broadcasts
        res = getattr(Tensor, view_name)(input, *args, **kwargs)
        first = res if isinstance(res, Tensor) else (res[0] if res else None)
        node = first._grad_fn if first is not None else None
        return _results(res, node and type(node).__name__ + "_copy")
    fn.__name__ = fn.__qualname__ = torch_name
    fn.__doc__ = f"``{view_name}``, copied into new memory (no view of ``input``)."
    return fn


def alias_copy(input: Tensor) -> Tensor:
    return _results(Alias.apply(input), "AliasBackward0_copy" if input._rg else None)


def slice_copy(input: Tensor, dim: int = 0, start=None, end=None, step: int = 1) -> Tensor:
    from ember._tensor import _wrap_dim

    if step <= 0:
        raise RuntimeError("slice step must be positive")
    d = _wrap_dim(dim, input.ndim)
    res = input[(slice(None),) * d + (slice(start, end, step),)]
    return _results(res, "SliceBackward0_copy")


def detach_copy(input: Tensor) -> Tensor:
    """A detached copy; like torch, a result that needs grad gets a node that refuses it."""
    if input._rg:
        return NotDifferentiable.apply(input, fn=lambda a: a.copy(), name="detach_copy")
    return Tensor._make(input._data.copy())


def narrow_copy(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    return _results(input.narrow(dim, start, length), "NarrowCopyBackward0")


def unsafe_split(input: Tensor, split_size: int, dim: int = 0) -> tuple:
    """``split`` whose pieces share memory with ``input`` but are not tracked as its views."""
    return _results(input.split(split_size, dim), "UnsafeSplitBackward0", copy=False)


def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    return _results(input.chunk(chunks, dim), "UnsafeSplitBackward0", copy=False)


def unsafe_split_with_sizes(input: Tensor, split_sizes, dim: int = 0) -> tuple:
    return _results(input.split_with_sizes(split_sizes, dim), "UnsafeSplitWithSizesBackward0",
                    copy=False)


_VIEWS = ("as_strided", "diagonal", "expand", "permute", "select", "split", "split_with_sizes",
          "squeeze", "t", "transpose", "unbind", "unfold", "unsqueeze", "view")

FUNCTIONS = {f"{v}_copy": _copy_form(v, f"{v}_copy") for v in _VIEWS}
FUNCTIONS.update({
    "alias_copy": alias_copy, "slice_copy": slice_copy, "detach_copy": detach_copy,
    "narrow_copy": narrow_copy, "unsafe_split": unsafe_split, "unsafe_chunk": unsafe_chunk,
    "unsafe_split_with_sizes": unsafe_split_with_sizes,
})
METHODS = {name: FUNCTIONS[name] for name in (
    "narrow_copy", "unsafe_split", "unsafe_chunk", "unsafe_split_with_sizes")}
