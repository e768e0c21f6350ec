"""Variable-length sequences: padding, packing and their inverses, as ``torch.nn.utils.rnn``.

A :class:`PackedSequence` stores a batch of sequences time-major without padding: ``data``
holds step 0 of every sequence, then step 1 of those still running, and so on, with
``batch_sizes[t]`` rows for step ``t``. Sequences are sorted longest first; ``sorted_indices``
records that permutation so results can be put back in the caller's order.

Everything is composed from differentiable ember ops (indexing, cat, setitem), so gradients
reach the padded inputs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

import numpy as np

from ember import _creation, _dtype
from ember._tensor import Tensor
from ember.autograd.function import Op

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence",
           "pad_packed_sequence", "pad_sequence", "unpad_sequence", "pack_sequence",
           "unpack_sequence"]


class PackedSequence_(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


def _bind(t: Tensor | None, fn):
    return None if t is None else fn(t)


class PackedSequence(PackedSequence_):
    """The data and per-step ``batch_sizes`` of a packed batch (see the module docstring).

    Build one with :func:`pack_padded_sequence` or :func:`pack_sequence`, not by hand.
    ``PackedSequence((data, batch_sizes))`` is accepted as torch accepts it.
    """

    def __new__(cls, data: Tensor, batch_sizes: Tensor | None = None,
                sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> PackedSequence:
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is not None:
            if batch_sizes.device.type != "cpu":
                raise ValueError(
                    "batch_sizes should always be on CPU. Instances of PackedSequence should "
                    "never be created manually. They should be instantiated by functions like "
                    "pack_sequence and pack_padded_sequences in nn.utils.rnn. "
                    "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
            return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)
        if not (isinstance(data, list | tuple) and len(data) == 2):
            raise AssertionError("Expected data to be a list or tuple of length 2")
        return super().__new__(cls, data[0], data[1], sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """Convert ``data`` like ``Tensor.to``; returns ``self`` when nothing changes."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        # The indices follow data's device, never its dtype; batch_sizes stays on the CPU.
        move = lambda t: t.to(data.device)  # noqa: E731
        return type(self)(data, self.batch_sizes, _bind(self.sorted_indices, move),
                          _bind(self.unsorted_indices, move))

    def cuda(self, device: Any = None, non_blocking: bool = False) -> PackedSequence:
        """``data`` (and the indices) on a CUDA device."""
        if device is None or isinstance(device, int):
            device = "cuda" if device is None else f"cuda:{device}"
        return self.to(device, non_blocking=non_blocking)

    def cpu(self) -> PackedSequence:
        """``data`` (and the indices) on the CPU."""
        return self.to("cpu")

    def pin_memory(self) -> PackedSequence:
        pin = lambda t: t.pin_memory()  # noqa: E731
        return type(self)(self.data.pin_memory(), self.batch_sizes,
                          _bind(self.sorted_indices, pin), _bind(self.unsorted_indices, pin))

    def double(self) -> PackedSequence:
        return self.to(dtype=_dtype.float64)

    def float(self) -> PackedSequence:
        return self.to(dtype=_dtype.float32)

    def half(self) -> PackedSequence:
        return self.to(dtype=_dtype.float16)

    def long(self) -> PackedSequence:
        return self.to(dtype=_dtype.int64)

    def int(self) -> PackedSequence:
        return self.to(dtype=_dtype.int32)

    def short(self) -> PackedSequence:
        return self.to(dtype=_dtype.int16)

    def char(self) -> PackedSequence:
        return self.to(dtype=_dtype.int8)

    def byte(self) -> PackedSequence:
        return self.to(dtype=_dtype.uint8)

    @property
    def is_cuda(self) -> bool:
        """Whether ``data`` lives on a GPU."""
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        return self.data.is_pinned()


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of a 1-D permutation (``None`` stays ``None``)."""
    if permutation is None:
        return None
    perm = permutation.numpy()
    inv = np.empty_like(perm)
    inv[perm] = np.arange(perm.size, dtype=perm.dtype)
    return _creation.tensor(inv, dtype=permutation.dtype, device=permutation.device)


def _lengths_tensor(lengths) -> Tensor:
    if not isinstance(lengths, Tensor):
        # torch goes through int64 too, so 1.5 truncates to 1.
        return _creation.as_tensor(lengths, dtype=_dtype.int64)
    return lengths.to(dtype=_dtype.int64)


def _check_lengths(lengths: Tensor, input: Tensor, batch_first: bool) -> np.ndarray:
    """torch's checks of ``_pack_padded_sequence``, in its order; returns lengths as NumPy."""
    if lengths.ndim != 1 or lengths.device.type != "cpu":
        raise RuntimeError("'lengths' argument should be a 1D CPU int64 tensor, but got "
                           f"{lengths.ndim}D {lengths.device} Long tensor")
    if input.ndim < 2:
        n = max(input.ndim, 1)
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         "but got 1)")
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    lens = lengths.numpy()
    batch = input.shape[0 if batch_first else 1]
    if lens.shape[0] != batch:
        raise RuntimeError("Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{lens.shape[0]} (batch_size={batch})")
    if lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if np.any(np.diff(lens) > 0):
        raise RuntimeError(
            "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
            "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
            "to sidestep this requirement if you do not need ONNX exportability.")
    steps = input.shape[1 if batch_first else 0]
    if lens[0] > steps:
        # torch reads past the end of the input here; refusing is the only safe answer.
        raise RuntimeError(f"pack_padded_sequence: a length ({lens[0]}) exceeds the padded "
                           f"sequence length ({steps})")
    return lens


class _PackPadded(Op):
    """Gather the valid rows of a padded batch; returns them and the batch sizes, which it
    saves, as torch's ``_pack_padded_sequence``."""

    node_name = "PackPaddedSequenceBackward0"
    saves_output = (1,)

    @staticmethod
    def forward(ctx, x, flat=None, batch_sizes=None):
        ctx.shape, ctx.flat = x.shape, flat
        return x.reshape(-1, *x.shape[2:])[flat], batch_sizes

    @staticmethod
    def backward(ctx, g, _g_sizes=None):
        shape = ctx.shape
        rows = _creation.zeros(shape[0] * shape[1], *shape[2:], dtype=g.dtype)
        return rows.index_add(0, _creation.tensor(ctx.flat), g).reshape(shape)


def pack_padded_sequence(input: Tensor, lengths: Tensor | list[int], batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded ``T x B x *`` (or ``B x T x *``) batch whose sequences have ``lengths``.

    >>> x = ember.tensor([[1, 2, 0], [3, 0, 0], [4, 5, 6]])
    >>> pack_padded_sequence(x, [2, 1, 3], batch_first=True, enforce_sorted=False).data
    tensor([4, 1, 3, 5, 2, 6])
    """
    lengths = _lengths_tensor(lengths)
    sorted_indices = None
    if not enforce_sorted:
        lengths, sorted_indices = lengths.sort(descending=True, stable=True)
        if input.ndim >= 2:
            input = input.index_select(0 if batch_first else 1, sorted_indices)
    lens = _check_lengths(lengths, input, batch_first)
    steps, batch = (input.shape[1], input.shape[0]) if batch_first else input.shape[:2]
    t = np.arange(int(lens[0]))
    batch_sizes = (lens[None, :] > t[:, None]).sum(1)
    # Row indices of the valid (t, b) pairs, time-major: one gather makes all of data.
    tt, bb = np.nonzero(lens[None, :] > t[:, None])
    flat = bb * steps + tt if batch_first else tt * batch + bb
    data, batch_sizes = _PackPadded.apply(input, flat=flat,
                                          batch_sizes=batch_sizes.astype(np.int64))
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """Undo :func:`pack_padded_sequence`: the padded batch (caller's order) and the lengths."""
    batch_sizes = sequence.batch_sizes.numpy()
    max_len = batch_sizes.shape[0]
    if total_length is not None:
        if not isinstance(total_length, int) or isinstance(total_length, bool):
            raise TypeError("_pad_packed_sequence(): argument 'total_length' (position 5) must "
                            f"be int, not {type(total_length).__name__}")
        if total_length < max_len:
            raise ValueError("Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {max_len}")
        max_len = total_length
    data = sequence.data
    batch = int(batch_sizes[0])
    lens = (batch_sizes[:, None] > np.arange(batch)[None, :]).sum(0)
    # ATen's loop: each run of steps with one batch size is one block copied in (CopySlices).
    out = _creation.full((max_len, batch, *data.shape[1:]), padding_value, dtype=data.dtype)
    start, offset = 0, 0
    for t in range(1, len(batch_sizes) + 1):
        if t == len(batch_sizes) or batch_sizes[t] != batch_sizes[start]:
            bs, n = int(batch_sizes[start]), int(batch_sizes[start]) * (t - start)
            out[start:t, :bs] = data[offset:offset + n].view(t - start, bs, *data.shape[1:])
            start, offset = t, offset + n
    if batch_first:
        out = out.transpose(0, 1)
    lengths = _creation.tensor(lens, dtype=_dtype.int64)
    if sequence.unsorted_indices is not None:
        unsorted = sequence.unsorted_indices
        return out.index_select(0 if batch_first else 1, unsorted), lengths[unsorted]
    return out, lengths


def pad_sequence(sequences: Tensor | list[Tensor], batch_first: bool = False,
                 padding_value: float = 0.0, padding_side: str = "right") -> Tensor:
    """Stack ``L_i x *`` tensors into ``T x B x *`` (or ``B x T x *``), padding the short ones.

    >>> pad_sequence([ember.tensor([1, 2]), ember.tensor([3])], batch_first=True)
    tensor([[1, 2],
            [3, 0]])
    """
    if not isinstance(sequences, Iterable):
        raise RuntimeError("pad_sequence: Expected iterable for input sequences, but got arg of "
                           f"type: {type(sequences)}")
    sequences = tuple(sequences)  # a Tensor iterates over its rows, as in torch
    if padding_side not in ("left", "right"):
        raise RuntimeError("Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if any(s.ndim == 0 for s in sequences):
        raise RuntimeError("pad_sequence: Expected every sequence to have at least one "
                           "dimension, but got a 0-D tensor")
    first = sequences[0]
    max_len = max(s.shape[0] for s in sequences)
    shape = (len(sequences), max_len) if batch_first else (max_len, len(sequences))
    out = _creation.full((*shape, *first.shape[1:]), padding_value, dtype=first.dtype)
    for i, seq in enumerate(sequences):
        n = seq.shape[0]
        steps = slice(max_len - n, max_len) if padding_side == "left" else slice(0, n)
        # Setitem casts and broadcasts like torch's copy_, and gives CopySlices as grad_fn.
        if batch_first:
            out[i, steps] = seq
        else:
            out[steps, i] = seq
    return out


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor,
                   batch_first: bool = False) -> list[Tensor]:
    """Split a padded batch back into its ``lengths[i] x *`` sequences."""
    if not batch_first:
        # torch transposes the caller's tensor in place here; a view is kinder.
        padded_sequences = padded_sequences.transpose(0, 1)
    idx = _creation.arange(padded_sequences.shape[1], device=lengths.device)
    return [seq[idx < length] for seq, length in zip(padded_sequences, lengths, strict=True)]


def pack_sequence(sequences: list[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack ``L_i x *`` tensors (longest first unless ``enforce_sorted=False``)."""
    lengths = _creation.as_tensor([v.size(0) for v in sequences])
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """Undo :func:`pack_sequence`: the list of sequences in the caller's order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
