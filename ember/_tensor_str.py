"""Printing tensors exactly as torch prints them."""

from __future__ import annotations


def tensor_repr(t) -> str:
    return f"tensor({t._data!r})"
