"""Flatten parameters into one vector and back."""

from __future__ import annotations

from collections.abc import Iterable

from ember._tensor import Tensor


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """Concatenate the flattened parameters into one 1-D tensor (differentiable)."""
    from ember import cat

    return cat([p.view(-1) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of ``vec`` into the parameters' storage."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    pointer = 0
    for param in parameters:
        n = param.numel()
        param.data = vec[pointer:pointer + n].view_as(param).data
        pointer += n
