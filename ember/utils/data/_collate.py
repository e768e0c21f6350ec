"""default_collate / default_convert: how samples become a batch."""

from __future__ import annotations

import collections.abc as cabc

import numpy as np

from ember._tensor import Tensor

_NP_STR_KINDS = "SaUO"


def default_convert(data):
    """Convert NumPy arrays (and containers of them) to tensors, without batching."""
    from ember._creation import as_tensor

    if isinstance(data, np.ndarray) and data.dtype.kind not in _NP_STR_KINDS:
        return as_tensor(data)
    if isinstance(data, np.number | np.bool_):
        return as_tensor(np.asarray(data))
    if isinstance(data, cabc.Mapping):
        return type(data)({k: default_convert(v) for k, v in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, cabc.Sequence) and not isinstance(data, str | bytes):
        return [default_convert(d) for d in data]
    return data


def default_collate(batch):
    """Stack a list of samples into a batch, recursing into dicts, tuples and lists."""
    import ember
    from ember._creation import tensor

    elem = batch[0]
    if isinstance(elem, Tensor):
        return ember.stack(list(batch), 0)
    if isinstance(elem, np.ndarray):
        if elem.dtype.kind in _NP_STR_KINDS:
            raise TypeError("default_collate: batch must contain tensors, numpy arrays, numbers,"
                            f" dicts or lists; found {elem.dtype}")
        return Tensor._make(np.stack(batch))
    if isinstance(elem, np.number | np.bool_):
        return Tensor._make(np.asarray(batch))
    if isinstance(elem, bool):
        return tensor(batch)
    if isinstance(elem, int):
        return tensor(batch)
    if isinstance(elem, float):
        return tensor(batch, dtype=float)  # the Python type float is float64, as in torch
    if isinstance(elem, str | bytes):
        return batch
    if isinstance(elem, cabc.Mapping):
        collated = {k: default_collate([d[k] for d in batch]) for k in elem}
        try:
            return type(elem)(collated)
        except TypeError:  # a mapping type that can't be built from a dict
            return collated
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(s) for s in zip(*batch)))
    if isinstance(elem, cabc.Sequence):
        if any(len(e) != len(elem) for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(s) for s in transposed]
        try:
            return type(elem)([default_collate(s) for s in transposed])
        except TypeError:
            return [default_collate(s) for s in transposed]
    raise TypeError("default_collate: batch must contain tensors, numpy arrays, numbers, dicts "
                    f"or lists; found {type(elem)}")
