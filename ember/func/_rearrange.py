"""``rearrange``: functorch's einops-style reordering (``"b (h w) c -> b c h w"``).

A pattern is parsed into groups of elementary axes on each side (a parenthesised group is
one dim of the tensor; ``1`` is an anonymous axis of size 1, ``...`` the dims not named). The
tensor is reshaped to its left-side elementary axes, permuted into the right side's order
and reshaped to the right side's groups: one view where strides allow, as torch's
first-class-dims implementation gives. Parsing errors are torch's (``ValueError`` with its
messages); sizes that do not fit raise ``DimensionBindError``.
"""

from __future__ import annotations

import functools
import keyword
import warnings

_ELLIPSIS = "\u2026"  # one symbol, as functorch's parser uses


class DimensionBindError(Exception):
    """Axis sizes that do not fit the tensor (functorch.dim's error)."""


class _Anon:
    """An anonymous ``1`` on the left side: it binds to its dim and is summed away, as in
    torch (a dim of another size is summed too)."""

    def __repr__(self) -> str:
        return "1-axis"


def _check_name(name: str) -> None:
    if not name.isidentifier():
        reason = "not a valid python identifier"
    elif name[0] == "_" or name[-1] == "_":
        reason = "axis name should should not start or end with underscore"
    else:
        if keyword.iskeyword(name):
            warnings.warn(f"It is discouraged to use axes names that are keywords: {name}",
                          RuntimeWarning, stacklevel=4)
        if name == "axis":
            warnings.warn("It is discouraged to use 'axis' as an axis name and will raise an "
                          "error in future", FutureWarning, stacklevel=4)
        return
    raise ValueError(f"Invalid axis identifier: {name}\n{reason}")


def _parse(expr: str) -> tuple[list, set, bool, bool, bool]:
    """(composition, identifiers, has ellipsis, ellipsis in brackets, non-unit anonymous)."""
    has_ellipsis = parenthesized = non_unit = False
    if "." in expr:
        if "..." not in expr:
            raise ValueError("Expression may contain dots only inside ellipsis (...)")
        if expr.count("...") != 1 or expr.count(".") != 3:
            raise ValueError("Expression may contain dots only inside ellipsis (...); only one "
                             "ellipsis for tensor ")
        expr, has_ellipsis = expr.replace("...", _ELLIPSIS), True
    comp: list = []
    idents: set = set()
    group: list | None = None

    def add(x: str) -> None:
        nonlocal parenthesized, non_unit
        if x in idents:
            raise ValueError(f"Indexing expression contains duplicate dimension '{x}'")
        if x == _ELLIPSIS:
            idents.add(x)
            parenthesized = group is not None
            (comp if group is None else group).append(x)
            return
        if x.isdecimal():
            if int(x) == 1:
                if group is None:
                    comp.append([])
                return
            if int(x) < 1:
                raise ValueError(f"Anonymous axis should have positive length, not {int(x)}")
            non_unit = True
            name: object = object()  # never equal to another axis, as torch's AnonymousAxis
        else:
            _check_name(x)
            name = x
        idents.add(name)
        (comp.append([name]) if group is None else group.append(name))

    cur = None
    for ch in expr:
        if ch in "() ":
            if cur is not None:
                add(cur)
            cur = None
            if ch == "(":
                if group is not None:
                    raise ValueError("Axis composition is one-level (brackets inside brackets "
                                     "not allowed)")
                group = []
            elif ch == ")":
                if group is None:
                    raise ValueError("Brackets are not balanced")
                comp.append(group)
                group = None
        elif ch.isalnum() or ch in ("_", _ELLIPSIS):
            cur = ch if cur is None else cur + ch
        else:
            raise ValueError(f"Unknown character '{ch}'")
    if group is not None:
        raise ValueError(f"Imbalanced parentheses in expression: '{expr}'")
    if cur is not None:
        add(cur)
    return comp, idents, has_ellipsis, parenthesized, non_unit


@functools.lru_cache(256)
def _recipe(ndim: int, pattern: str, lengths: tuple) -> tuple | None:
    """(left groups, right groups, anonymous left axes) in elementary axis names, with the
    ellipsis expanded; None for the identity on a 0-d tensor."""
    try:
        left_str, right_str = pattern.split("->")
    except ValueError:
        raise ValueError("Pattern must contain a single '->' separator") from None
    axes = dict(lengths)
    if _ELLIPSIS in axes:
        raise ValueError(f"'{_ELLIPSIS}' is not an allowed axis identifier")
    left, lids, lell, lpar, lnon = _parse(left_str)
    right, rids, rell, _, rnon = _parse(right_str)
    if not lell and rell:
        raise ValueError(f"Ellipsis found in right side, but not left side of a pattern "
                         f"{pattern}")
    if lell and lpar:
        raise ValueError(f"Ellipsis is parenthesis in the left side is not allowed: {pattern}")
    for n in axes.values():
        if type(n) is not int:
            raise TypeError(f"rearrange axis lengths must be integers, got: {type(n)}")
    if lnon or rnon:
        raise ValueError("rearrange only supports unnamed axes of size 1")
    diff = lids ^ rids
    if diff:
        raise ValueError("Identifiers only on one side of rearrange expression (should be on "
                         f"both): {diff}")
    if axes.keys() - lids:
        raise ValueError(f"Identifiers not found in rearrange expression: {axes.keys() - lids}")
    n_anon = sum(not g for g in left)
    if lell:
        n_ell = ndim - (len(left) - 1)
        if (n := n_anon + len(lids) - 1) > ndim:
            raise ValueError(f"Number of dimensions in pattern ({n}) must be less than or equal "
                             f"to the number of dimensions in the tensor ({ndim})")
    else:
        n_ell = 0
        if len(left) != ndim:
            raise ValueError(f"Number of dimensions in pattern ({len(left)}) must be equal to "
                             f"the number of dimensions in the tensor ({ndim})")
    if n_anon + len(lids) - lell + n_ell == 0:
        return None
    ell = [f"{_ELLIPSIS}{i}" for i in range(n_ell)]

    def expand(comp: list, anon: list) -> list:
        out = []
        for g in comp:
            if g == _ELLIPSIS:
                out.extend([e] for e in ell)
            elif not g and anon is not None:
                anon.append(_Anon())
                out.append([anon[-1]])
            else:
                out.append([e for x in g for e in (ell if x == _ELLIPSIS else [x])])
        return out

    anon: list = []
    return expand(left, anon), expand(right, None), tuple(anon)


def _bind(groups: list, shape: tuple, axes: dict) -> list:
    """Each elementary axis's size: a group's one unknown inferred from the dim it splits."""
    sizes = dict(axes)
    flat = [a for g in groups for a in g]
    name = {a: f"d{i}" for i, a in enumerate(flat)}  # torch's first-class dims, in messages
    for g, n in zip(groups, shape):
        unknown = [a for a in g if a not in sizes]
        known = _prod(sizes[a] for a in g if a in sizes)
        if len(unknown) > 1:
            raise DimensionBindError(f"cannot infer the sizes of two dimensions at once "
                                     f"{name[unknown[0]]} and {name[unknown[1]]}")
        if unknown:
            if n % known:
                packed = tuple(sizes.get(a, "?") for a in g)
                raise DimensionBindError("inferred dimension does not evenly fit into larger "
                                         f"dimension: {n} vs {packed}")
            sizes[unknown[0]] = n // known
        elif known != n:
            raise DimensionBindError(f"Dimension sizes to do not match ({n} != {known}) when "
                                     f"matching dimension pack "
                                     f"({', '.join(name[a] for a in g)}{',' * (len(g) == 1)})")
    return [sizes[a] for a in flat]


def rearrange(tensor, pattern: str, **axes_lengths: int):
    """``tensor`` (or a sequence of tensors, stacked) rearranged by an einops ``pattern``."""
    from ember._tensor import Tensor
    from ember.ops.joining import stack

    if not isinstance(tensor, Tensor):
        tensor = stack(tensor)
    recipe = _recipe(tensor.ndim, pattern, tuple(axes_lengths.items()))
    if recipe is None:
        return tensor
    left, right, anon = recipe
    flat = [a for g in left for a in g]
    sizes = dict(zip(flat, _bind(left, tuple(tensor.shape), axes_lengths)))
    order = [flat.index(a) for g in right for a in g]
    out = tensor.reshape([sizes[a] for a in flat]).permute(
        order + [flat.index(a) for a in anon])
    if anon:  # torch sums its anonymous left axes away (an int tensor becomes int64)
        out = out.sum(tuple(range(len(order), len(order) + len(anon))))
    shape = [_prod(sizes[a] for a in g) for g in right]
    return out if anon and list(out.shape) == shape else out.reshape(shape)


def _prod(xs) -> int:
    n = 1
    for x in xs:
        n *= x
    return n
