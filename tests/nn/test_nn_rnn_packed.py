"""nn.utils.rnn (pad / pack / unpack) and RNN / LSTM / GRU on PackedSequence, against torch."""

import re

import numpy as np
import pytest
import torch
from layer_oracle import compare_layer
from oracle import arr, assert_same, check, same

import ember


def R(lib):
    return lib.nn.utils.rnn


# --- pad_sequence ------------------------------------------------------------------------


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence(batch_first, side):
    check(lambda lib, a, b, c: R(lib).pad_sequence([a, b, c], batch_first, -1.5, side),
          arr(3, 2, 4), arr(5, 2, 4), arr(1, 2, 4))


def test_pad_sequence_1d_dtypes_and_tensor_input():
    same(lambda lib: R(lib).pad_sequence([lib.tensor([1, 2]), lib.tensor([3])], True, 1.7))
    same(lambda lib: R(lib).pad_sequence([lib.tensor([True]), lib.tensor([True, False])]))
    # The first sequence's dtype wins; later ones are cast.
    same(lambda lib: R(lib).pad_sequence([lib.tensor([1, 2]), lib.tensor([3.5])]))
    same(lambda lib: R(lib).pad_sequence([lib.tensor([1.5, 2]), lib.tensor([3])]))
    # A tensor is iterated over its first dim: its rows become the sequences.
    check(lambda lib, x: R(lib).pad_sequence(x, batch_first=True), arr(3, 2))
    same(lambda lib: R(lib).pad_sequence((lib.ones(2, 3, requires_grad=True) * 2,)))


# --- pack_padded_sequence / pad_packed_sequence -------------------------------------------


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("lengths,sorted_", [([5, 3, 3, 1], True), ([2, 5, 1, 3], False),
                                             ([3, 3, 3, 3], True), ([2, 3, 2, 3], False)])
def test_pack_padded_roundtrip(batch_first, lengths, sorted_):
    shape = (4, 5, 3) if batch_first else (5, 4, 3)

    def fn(lib, x):
        p = R(lib).pack_padded_sequence(x, lengths, batch_first, enforce_sorted=sorted_)
        out, lens = R(lib).pad_packed_sequence(p, batch_first, padding_value=2.5, total_length=7)
        return tuple(p), out, lens

    check(fn, arr(*shape))


def test_pack_padded_lengths_as_tensors_and_trailing_dims():
    for lens in ([4, 2, 1.9], "int32", "float32", "int64"):
        def fn(lib, x, lens=lens):
            ln = lens if isinstance(lens, list) else lib.tensor([4, 1, 2], dtype=getattr(lib, lens))
            return tuple(R(lib).pack_padded_sequence(x, ln, enforce_sorted=False))
        check(fn, arr(4, 3, 2, 2))
    check(lambda lib, x: tuple(R(lib).pack_padded_sequence(x, [2, 1])), arr(2, 2))  # no `*`


def test_pad_packed_without_sorted_indices():
    def fn(lib, x):
        p = R(lib).pack_padded_sequence(x, [3, 2, 2])
        return R(lib).pad_packed_sequence(p, batch_first=True)

    check(fn, arr(3, 3, 2))


def test_pack_sequence_unpack_and_unpad():
    def fn(lib, a, b, c):
        p = R(lib).pack_sequence([a, b, c], enforce_sorted=False)
        unpacked = R(lib).unpack_sequence(p)
        padded = R(lib).pad_sequence([a * 2, b, c], batch_first=True)
        unpadded = R(lib).unpad_sequence(padded, lib.tensor([2, 4, 1]), batch_first=True)
        return tuple(p), unpacked, unpadded

    check(fn, arr(2, 3), arr(4, 3), arr(1, 3))
    check(lambda lib, a, b: tuple(R(lib).pack_sequence([a, b])), arr(3), arr(3))


def test_unpad_sequence_time_major():
    # torch transposes a time-major input in place; compare only what is returned.
    check(lambda lib, x: R(lib).unpad_sequence(x * 1, lib.tensor([3, 1])), arr(3, 2, 2))


# --- PackedSequence ----------------------------------------------------------------------


def _packed(lib, sort=False):
    seqs = [lib.tensor([[1.0, 2]]), lib.tensor([[3.0, 4], [5, 6], [7, 8]]),
            lib.tensor([[9.0, 1], [2, 3]], requires_grad=True)]
    return R(lib).pack_sequence(seqs, enforce_sorted=sort)


@pytest.mark.parametrize("fn", [
    lambda lib: _packed(lib),
    lambda lib: _packed(lib).to(lib.float64),
    lambda lib: _packed(lib).double().int(),
    lambda lib: R(lib).pack_sequence([lib.tensor([1, 2, 3]), lib.tensor([4, 5])]),
    lambda lib: R(lib).pack_padded_sequence(lib.arange(6).reshape(3, 2), [3, 1]),
    lambda lib: R(lib).pad_packed_sequence(_packed(lib), True, -1),
    lambda lib: R(lib).unpack_sequence(_packed(lib)),
    lambda lib: R(lib).PackedSequence(lib.ones(3), lib.tensor([2, 1])),
    lambda lib: R(lib).PackedSequence((lib.ones(3), lib.tensor([2, 1]))),
    lambda lib: R(lib).PackedSequence(lib.ones(3), lib.tensor([2, 1]), lib.tensor([1, 0])),
    lambda lib: _packed(lib)._replace(data=_packed(lib).data * 2),
    lambda lib: (_packed(lib)._fields, len(_packed(lib)), _packed(lib).is_cuda),
    lambda lib: R(lib).invert_permutation(lib.tensor([2, 0, 3, 1])),
    lambda lib: R(lib).invert_permutation(None),
])
def test_reprs(fn):
    same(fn)


def test_packed_sequence_tuple_behaviour():
    p = _packed(ember)
    assert p.to(ember.float32) is p and p.float() is p and p.cpu() is p
    assert isinstance(p, tuple) and p[0] is p.data and p == p
    data, bs, si, ui = p
    assert bs is p.batch_sizes and si is p.sorted_indices and ui is p.unsorted_indices
    q = p.double()
    assert q.sorted_indices.dtype == ember.int64 and q.batch_sizes is p.batch_sizes
    assert type(q) is type(p)


# --- errors ------------------------------------------------------------------------------

X = (lambda lib: lib.zeros(4, 3, 2))


@pytest.mark.parametrize("fn,match", [
    (lambda lib: R(lib).pad_sequence([]), "received an empty list of sequences"),
    (lambda lib: R(lib).pad_sequence(5), "Expected iterable for input sequences"),
    (lambda lib: R(lib).pad_sequence([lib.ones(2)], padding_side="middle"),
     "Expected padding_side to be one of left or right, but got middle."),
    (lambda lib: R(lib).pad_sequence([lib.ones(2, 2), lib.ones(2, 3)]), None),
    (lambda lib: R(lib).pad_sequence([lib.ones(2, 2), lib.ones(2, 2, 2)]), None),
    (lambda lib: R(lib).pad_sequence([lib.tensor(1.0)]), None),
    (lambda lib: R(lib).pack_padded_sequence(X(lib), [4, 0, 1]),
     "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True"),
    (lambda lib: R(lib).pack_sequence([lib.ones(1), lib.ones(3)]),
     "You can pass `enforce_sorted=False` to pack_padded_sequence"),
    (lambda lib: R(lib).pack_padded_sequence(X(lib), [4, 2, 0], enforce_sorted=False),
     "Length of all samples has to be greater than 0"),
    (lambda lib: R(lib).pack_padded_sequence(X(lib), [4, 2, -1]),
     "Length of all samples has to be greater than 0"),
    (lambda lib: R(lib).pack_padded_sequence(X(lib), [4, 2]),
     "Expected `len(lengths)` to be equal to batch_size, but got 2 (batch_size=3)"),
    (lambda lib: R(lib).pack_padded_sequence(X(lib), [3, 2, 1, 1], batch_first=True), None),
    (lambda lib: R(lib).pack_padded_sequence(X(lib), lib.tensor([[4, 2, 1]])),
     "'lengths' argument should be a 1D CPU int64 tensor, but got 2D cpu Long tensor"),
    (lambda lib: R(lib).pack_padded_sequence(lib.zeros(0, 3, 2), [1, 1, 1]),
     "Cannot pack empty tensors."),
    (lambda lib: R(lib).pack_padded_sequence(lib.zeros(4), [1]), "Dimension out of range"),
    (lambda lib: R(lib).pad_packed_sequence(R(lib).pack_padded_sequence(X(lib), [4, 2, 1]),
                                            total_length=3),
     "Expected total_length to be at least the length of the longest sequence in input, but "
     "got total_length=3 and max sequence length being 4"),
    (lambda lib: R(lib).pad_packed_sequence(R(lib).pack_padded_sequence(X(lib), [4, 2, 1]),
                                            total_length=6.0), "must be int, not float"),
    (lambda lib: R(lib).pad_packed_sequence(X(lib)), "object has no attribute 'batch_sizes'"),
    (lambda lib: R(lib).unpad_sequence(X(lib), [1, 1, 1]), None),
    (lambda lib: R(lib).PackedSequence(lib.ones(3)),
     "Expected data to be a list or tuple of length 2"),
])
def test_errors(fn, match):
    same(fn, match)


def test_lengths_longer_than_input_refused():
    # torch reads past the padded input here and returns garbage; ember refuses.
    with pytest.raises(RuntimeError, match="exceeds the padded sequence length"):
        R(ember).pack_padded_sequence(ember.zeros(4, 3, 2), [5, 2, 1])


# --- RNN / LSTM / GRU on packed input ----------------------------------------------------

LAYERS = [
    ("RNN", {}),
    ("RNN", {"nonlinearity": "relu", "num_layers": 2, "bidirectional": True}),
    ("GRU", {"bias": False}),
    ("GRU", {"num_layers": 2, "bidirectional": True, "batch_first": True}),
    ("LSTM", {}),
    ("LSTM", {"num_layers": 2, "bidirectional": True}),
    ("LSTM", {"proj_size": 2, "bidirectional": True, "batch_first": True}),
]


def _run_packed(m, x, lengths, sort, hx):
    lib = torch if isinstance(m, torch.nn.Module) else ember
    p = R(lib).pack_padded_sequence(x, lengths, m.batch_first, enforce_sorted=sort)
    out, h = m(p, hx)
    padded, lens = R(lib).pad_packed_sequence(out, m.batch_first, total_length=6)
    return tuple(out), h, padded, lens


@pytest.mark.parametrize("name,kw", LAYERS)
@pytest.mark.parametrize("lengths,sort", [([5, 2, 4, 1], False), ([5, 4, 4, 2], True)])
def test_recurrent_packed(name, kw, lengths, sort):
    e, t = getattr(ember.nn, name)(3, 4, **kw), getattr(torch.nn, name)(3, 4, **kw)
    x = arr(4, 5, 3) if kw.get("batch_first") else arr(5, 4, 3)
    compare_layer(e, t, x, forward=lambda m, x: _run_packed(m, x, lengths, sort, None))


@pytest.mark.parametrize("name,kw", LAYERS)
def test_recurrent_packed_initial_state(name, kw):
    e, t = getattr(ember.nn, name)(3, 4, **kw), getattr(torch.nn, name)(3, 4, **kw)
    n = (2 if kw.get("bidirectional") else 1) * kw.get("num_layers", 1)
    x = arr(4, 5, 3) if kw.get("batch_first") else arr(5, 4, 3)
    h0, c0 = arr(n, 4, kw.get("proj_size", 4)), arr(n, 4, 4)
    lengths = [3, 5, 1, 4]
    if name == "LSTM":
        fwd = lambda m, x, h, c: _run_packed(m, x, lengths, False, (h, c))  # noqa: E731
        compare_layer(e, t, x, h0, c0, forward=fwd)
    else:
        compare_layer(e, t, x, h0, forward=lambda m, x, h: _run_packed(m, x, lengths, False, h))


def test_packed_matches_unpacked_for_full_lengths():
    lstm = ember.nn.LSTM(3, 4, bidirectional=True)
    x = ember.tensor(arr(5, 2, 3))
    out, (h, c) = lstm(x)
    pout, (ph, pc) = lstm(R(ember).pack_padded_sequence(x, [5, 5]))
    assert_same(pout.data, torch.tensor(out.detach().numpy().reshape(10, 8)))
    for a, b in ((ph, h), (pc, c)):
        assert_same(a, torch.tensor(b.detach().numpy()))


def test_packed_output_structure():
    for lib in (torch, ember):
        m = lib.nn.GRU(3, 4)
        p = R(lib).pack_sequence([lib.ones(2, 3), lib.ones(4, 3)], enforce_sorted=False)
        out, h = m(p)
        assert type(out).__name__ == "PackedSequence"
        assert out.batch_sizes is p.batch_sizes and out.sorted_indices is p.sorted_indices
        assert tuple(out.data.shape) == (6, 4) and tuple(h.shape) == (1, 2, 4)


def _p(lib, *trail, sort=True):
    return R(lib).pack_sequence([lib.ones(3, *trail), lib.ones(1, *trail)], enforce_sorted=sort)


@pytest.mark.parametrize("fn,match", [
    (lambda lib: lib.nn.GRU(2, 4)(_p(lib, 2), lib.zeros(1, 3, 4)),
     "Expected hidden size (1, 2, 4), got [1, 3, 4]"),
    (lambda lib: lib.nn.RNN(2, 4)(_p(lib, 2), lib.zeros(1, 4)),
     "Expected hidden size (1, 2, 4), got [1, 4]"),
    (lambda lib: lib.nn.GRU(2, 4)(_p(lib, 2), lib.zeros(1, 2, 5)),
     "Expected hidden size (1, 2, 4), got [1, 2, 5]"),
    (lambda lib: lib.nn.RNN(2, 4)(_p(lib, 2, 2)), "input must have 2 dimensions, got 3"),
    (lambda lib: lib.nn.RNN(3, 4)(_p(lib, 2)),
     "input.size(-1) must be equal to input_size. Expected 3, got 2"),
    (lambda lib: lib.nn.GRU(3, 4)(_p(lib, 2)), "input.size(-1) must be equal to input_size"),
    (lambda lib: lib.nn.GRU(2, 4)(_p(lib, 2).double()),
     "does not match weight dtype"),
    # torch's LSTM skips its Python checks for packed input; its kernel fails instead.
    (lambda lib: lib.nn.LSTM(2, 4)(_p(lib, 2, 2)), None),
    (lambda lib: lib.nn.LSTM(3, 4)(_p(lib, 2)), None),
    (lambda lib: lib.nn.LSTM(2, 4)(_p(lib, 2), (lib.zeros(1, 3, 4), lib.zeros(1, 3, 4))), None),
    (lambda lib: lib.nn.LSTM(2, 4)(_p(lib, 2), (lib.zeros(1, 2, 4), lib.zeros(1, 2, 3))), None),
])
def test_recurrent_packed_errors(fn, match):
    same(fn, match)


@pytest.mark.parametrize("hx,match", [
    (((1, 2, 4), (1, 2, 3)), "Expected hidden[1] size (1, 2, 4), got [1, 2, 3]"),
    # torch 2.13 segfaults on this one, so it is checked against ember alone.
    (((2, 2, 4), (1, 2, 4)), "Expected hidden[0] size (1, 2, 4), got [2, 2, 4]"),
])
def test_lstm_packed_hidden_checks(hx, match):
    h, c = (ember.zeros(*s) for s in hx)
    with pytest.raises(RuntimeError, match=re.escape(match)):
        ember.nn.LSTM(2, 4)(_p(ember, 2), (h, c))


def test_packed_gradients_are_finite_differences():
    from oracle import fd_check

    ember.manual_seed(0)
    gru = ember.nn.GRU(2, 3, bidirectional=True, dtype=ember.float64)

    def fn(x):
        p = R(ember).pack_padded_sequence(x, [1, 3, 2], enforce_sorted=False)
        out, h = gru(p)
        return ember.cat([R(ember).pad_packed_sequence(out)[0].reshape(-1), h.reshape(-1)])

    fd_check(fn, arr(3, 3, 2))


def test_pad_sequence_no_python_scalar_promotion():
    out = R(ember).pad_sequence([ember.ones(2, dtype=ember.float32), ember.ones(1)], True, 0.5)
    assert out.dtype == ember.float32 and np.allclose(out.numpy(), [[1, 1], [1, 0.5]])


def test_pack_pad_gradgrad():
    from oracle import gradgrad_check

    def fn(x):
        p = R(ember).pack_padded_sequence(x * x, [1, 3, 2], batch_first=True,
                                          enforce_sorted=False)
        return R(ember).pad_packed_sequence(p, padding_value=1.0)[0]

    gradgrad_check(fn, arr(3, 3, 2))
