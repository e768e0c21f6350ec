"""Python sequences as indices (range, lists and tuples of ints inside a tuple key), read and
written, against torch: the nn tutorial's ``input[range(n), target]``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from oracle import arr, check, outcome

import ember

TARGET = np.array([0, 2, 1, 1])
KEYS = [
    lambda t: (range(4), t), lambda t: range(4), lambda t: range(1, 4, 2), lambda t: range(0),
    lambda t: range(-2, 0), lambda t: (range(2), range(2)), lambda t: (range(2), [0, 1]),
    lambda t: (range(4), [0, 1, 2, 0]), lambda t: (slice(None), range(2)),
    lambda t: (Ellipsis, range(3)), lambda t: ((0, 1), (1, 2)), lambda t: (range(4), t.tolist()),
    lambda t: (None, range(3), 1), lambda t: [range(2), [0, 1]], lambda t: [range(3)],
    lambda t: (range(4), (2, 1, 0, 0)), lambda t: (range(3, 0, -1), 0),
]


@pytest.mark.parametrize("k", range(len(KEYS)))
def test_sequence_keys_read_like_torch(k):
    """Values and the gradient for a random upstream gradient."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a list of sequences: torch's deprecation warning
        check(lambda m, x, t: x[KEYS[k](t)], arr(4, 3), TARGET)


@pytest.mark.parametrize("k", range(len(KEYS)))
def test_sequence_keys_write_like_torch(k):
    """A number and a tensor of the indexed shape, written in place."""
    x = arr(4, 3)
    shape = tuple(torch.tensor(x)[KEYS[k](torch.tensor(TARGET))].shape)
    for value in (7.5, arr(*shape)):
        results = []
        for m in (ember, torch):
            y = m.tensor(x)
            v = m.tensor(value) if isinstance(value, np.ndarray) else value
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                y[KEYS[k](m.tensor(TARGET))] = v
            results.append(y.numpy())
        np.testing.assert_array_equal(*results)


def test_tutorial_nll_with_range():
    """The nn tutorial: ``-input[range(target.shape[0]), target].mean()``, with its gradient."""
    def nll(m, logits, target):
        lsm = logits - logits.exp().sum(-1).log().unsqueeze(-1)
        return -lsm[range(target.shape[0]), target].mean()
    check(nll, arr(6, 10), np.array([1, 0, 9, 3, 3, 7]))


def test_range_write_is_recorded_for_autograd():
    def f(m, x, w):
        y = x.clone()
        y[range(2), [2, 0]] = w[:2] * 3
        return y
    check(f, arr(3, 4), arr(3))


@pytest.mark.parametrize("key", ["x[range(5)]", "x[range(4), 5]", "x[range(4), range(3)]",
                                 "x[range(2), range(2), range(2)]", "x[range(-5, 0)]"])
def test_sequence_key_errors_like_torch(key):
    def f(m):
        x = m.arange(12.0).reshape(4, 3)
        return eval(key, {"x": x})  # noqa: S307
    e, t = outcome(f, ember), outcome(f, torch)
    assert t[0] == "error" and e[:2] == t[:2], (e, t)
    assert e[2] == t[2]


def test_list_of_sequences_warns_as_torch():
    for m in (ember, torch):
        x = m.arange(12.0).reshape(4, 3)
        with pytest.warns(UserWarning, match="non-tuple sequence for multidimensional indexing"):
            x[[range(2), [0, 1]]]
