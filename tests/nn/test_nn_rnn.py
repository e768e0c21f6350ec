"""RNN / LSTM / GRU and cells against torch: outputs, final states, all grads, reprs, errors."""

import numpy as np
import pytest
import torch
from layer_oracle import assert_same_structure, compare_layer
from oracle import arr

import ember

SEQ = [
    ("RNN", (3, 4), {}),
    ("RNN", (3, 4), {"nonlinearity": "relu", "num_layers": 2, "bias": False}),
    ("RNN", (3, 4), {"bidirectional": True, "batch_first": True}),
    ("LSTM", (3, 4), {}),
    ("LSTM", (3, 5), {"num_layers": 2, "bidirectional": True}),
    ("LSTM", (3, 5), {"proj_size": 2, "batch_first": True, "num_layers": 2}),
    ("GRU", (3, 4), {}),
    ("GRU", (3, 4), {"num_layers": 2, "bidirectional": True, "batch_first": True}),
]


@pytest.mark.parametrize("name,args,kw", SEQ)
def test_recurrent_layers(name, args, kw):
    e, t = getattr(ember.nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
    assert_same_structure(e, t)
    shape = (2, 5, 3) if kw.get("batch_first") else (5, 2, 3)
    compare_layer(e, t, arr(*shape), atol=1e-5)
    compare_layer(e, t, arr(5, 3), train=False, copy=False)  # unbatched


@pytest.mark.parametrize("name,kw", [("RNN", {}), ("GRU", {"bidirectional": True}),
                                     ("LSTM", {"num_layers": 2})])
def test_initial_state(name, kw):
    e, t = getattr(ember.nn, name)(3, 4, **kw), getattr(torch.nn, name)(3, 4, **kw)
    n = (2 if kw.get("bidirectional") else 1) * kw.get("num_layers", 1)
    x, h0, c0 = arr(5, 2, 3), arr(n, 2, 4), arr(n, 2, 4)
    if name == "LSTM":
        compare_layer(e, t, x, h0, c0, forward=lambda m, x, h, c: m(x, (h, c)))
        compare_layer(e, t, x[:, 0], h0[:, 0], c0[:, 0], forward=lambda m, x, h, c: m(x, (h, c)),
                      copy=False)
    else:
        compare_layer(e, t, x, h0)
        compare_layer(e, t, x[:, 0], h0[:, 0], copy=False)


def test_dropout_between_layers():
    e = ember.nn.LSTM(3, 4, num_layers=2, dropout=0.5)
    x = ember.tensor(arr(5, 2, 3))
    e.train()
    a, b = e(x)[0], e(x)[0]
    assert not np.allclose(a.detach().numpy(), b.detach().numpy())  # dropout is random
    e.eval()
    assert np.allclose(e(x)[0].detach().numpy(), e(x)[0].detach().numpy())


CELLS = [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu", "bias": False}),
         ("LSTMCell", {}), ("GRUCell", {})]


@pytest.mark.parametrize("name,kw", CELLS)
def test_cells(name, kw):
    e, t = getattr(ember.nn, name)(3, 4, **kw), getattr(torch.nn, name)(3, 4, **kw)
    assert_same_structure(e, t)
    compare_layer(e, t, arr(2, 3))
    if name == "LSTMCell":
        compare_layer(e, t, arr(2, 3), arr(2, 4), arr(2, 4), copy=False,
                      forward=lambda m, x, h, c: m(x, (h, c)))
        compare_layer(e, t, arr(3), arr(4), arr(4), copy=False,
                      forward=lambda m, x, h, c: m(x, (h, c)))
    else:
        compare_layer(e, t, arr(2, 3), arr(2, 4), copy=False)
        compare_layer(e, t, arr(3), arr(4), copy=False)


def test_default_init_statistics():
    ember.manual_seed(0)
    lstm = ember.nn.LSTM(10, 64, num_layers=2)
    bound = 1 / np.sqrt(64)
    for name, p in lstm.named_parameters():
        v = p.detach().numpy()
        assert np.abs(v).max() <= bound, name
        assert abs(v.std() - bound / np.sqrt(3)) < 0.1 * bound, name


@pytest.mark.parametrize("fn,exc,match", [
    (lambda m: m.nn.LSTM(3, 4)(m.zeros(5, 2, 3, 1)), ValueError,
     "LSTM: Expected input to be 2D or 3D, got 4D instead"),
    (lambda m: m.nn.LSTM(3, 4)(m.zeros(5, 2, 2)), RuntimeError,
     "input.size(-1) must be equal to input_size. Expected 3, got 2"),
    (lambda m: m.nn.LSTM(3, 4)(m.zeros(5, 2, 3), (m.zeros(1, 3, 4), m.zeros(1, 3, 4))),
     RuntimeError, "Expected hidden[0] size (1, 2, 4), got [1, 3, 4]"),
    (lambda m: m.nn.GRU(3, 4)(m.zeros(5, 2, 3), m.zeros(1, 3, 4)), RuntimeError,
     "Expected hidden size (1, 2, 4), got [1, 3, 4]"),
    (lambda m: m.nn.GRU(3, 4)(m.zeros(5, 2, 3), m.zeros(2, 4)), RuntimeError,
     "For batched 3-D input, hx should also be 3-D but got 2-D tensor"),
    (lambda m: m.nn.RNNCell(3, 4)(m.zeros(2, 5)), RuntimeError,
     "input has inconsistent input_size: got 5 expected 3"),
    (lambda m: m.nn.RNNCell(3, 4)(m.zeros(2, 2, 3)), ValueError,
     "RNNCell: Expected input to be 1D or 2D, got 3D instead"),
    (lambda m: m.nn.LSTMCell(3, 4)(m.zeros(2, 3), (m.zeros(3, 4), m.zeros(3, 4))),
     RuntimeError, "Input batch size 2 doesn't match hidden0 batch size 3"),
    (lambda m: m.nn.LSTMCell(3, 4)(m.zeros(2, 3), (m.zeros(2, 4), m.zeros(3, 4))),
     RuntimeError, "Input batch size 2 doesn't match hidden1 batch size 3"),
    (lambda m: m.nn.GRUCell(3, 4)(m.zeros(2, 3), m.zeros(3, 4)), RuntimeError,
     "Input batch size 2 doesn't match hidden0 batch size 3"),
    (lambda m: m.nn.RNN(3, 4, nonlinearity="foo"), ValueError, "Unknown nonlinearity 'foo'"),
    (lambda m: m.nn.GRU(3, 4, proj_size=2), ValueError, "proj_size argument is only supported"),
    (lambda m: m.nn.LSTM(3, 4, proj_size=4), ValueError, "proj_size has to be smaller"),
])
def test_rnn_errors(fn, exc, match):
    for lib in (torch, ember):
        with pytest.raises(exc) as info:
            fn(lib)
        assert match in str(info.value), (lib.__name__, str(info.value))


def test_dropout_warning():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        ember.nn.RNN(3, 4, dropout=0.5)


def test_lstm_cell_fd_and_gradgrad():
    from oracle import fd_check, gradgrad_check

    ember.manual_seed(0)
    cell = ember.nn.LSTMCell(3, 2, dtype=ember.float64)

    def fn(x, h, c):
        h1, c1 = cell(x, (h, c))
        return ember.cat([h1 * 2, c1], -1)

    args = (arr(2, 3), arr(2, 2), arr(2, 2))
    fd_check(fn, *args)
    gradgrad_check(fn, *args)
    fd_check(lambda x, h, c: cell(x, (h, c))[1], *args)  # only c used: h's grad is None


def test_gru_cell_fd_and_gradgrad():
    from oracle import fd_check, gradgrad_check

    ember.manual_seed(0)
    cell = ember.nn.GRUCell(3, 2, dtype=ember.float64)
    args = (arr(2, 3), arr(2, 2))
    fd_check(lambda x, h: cell(x, h), *args)
    gradgrad_check(lambda x, h: cell(x, h), *args)
