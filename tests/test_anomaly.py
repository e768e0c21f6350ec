"""detect_anomaly / set_detect_anomaly: NaN checks and the forward traceback, as in torch."""

import warnings

import numpy as np
import pytest
import torch

import ember
from ember.autograd.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled


def _nan_backward(lib):
    """Run a backward whose LogBackward0 produces 0/0; return (error, warning messages)."""
    x = lib.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with lib.autograd.detect_anomaly(), np.errstate(all="ignore"):
            y = x.log()  # FORWARD-LINE
            z = y * 0
            with pytest.raises(RuntimeError) as info:
                z.sum().backward()
    return str(info.value), [str(m.message) for m in w]


def test_nan_error_and_forward_traceback_match_torch():
    (e_err, e_warn), (t_err, t_warn) = _nan_backward(ember), _nan_backward(torch)
    assert e_err == t_err == "Function 'LogBackward0' returned nan values in its 0th output."
    assert e_warn[0] == t_warn[0]  # "Anomaly Detection has been enabled..."
    e_tb, t_tb = e_warn[1], t_warn[1]
    head = "Error detected in LogBackward0. Traceback of forward call that caused the error:\n"
    assert e_tb.startswith(head) and t_tb.startswith(head)
    # The innermost frame is the user's forward line in both (ember's own frames are hidden).
    assert e_tb.rstrip().endswith("y = x.log()  # FORWARD-LINE")
    assert "y = x.log()  # FORWARD-LINE\n" in t_tb
    e_frames = e_tb.split("\n")[1:3]
    assert e_frames == t_tb.split("\n")[1:3]


def test_other_backward_errors_also_show_the_forward_trace():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with ember.autograd.set_detect_anomaly(True):
            a = x * 1
            b = a.log()  # CREATED-HERE
            a.mul_(2)
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                b.sum().backward()
    assert any("Error detected in LogBackward0" in str(m.message) and "CREATED-HERE" in
               str(m.message) for m in w)


def test_without_anomaly_nan_passes_silently():
    for lib in (ember, torch):
        x = lib.tensor([0.0, 1.0], requires_grad=True)
        with np.errstate(all="ignore"):
            (x.log() * 0).sum().backward()
        assert np.isnan(x.grad.numpy()[0])


def test_check_nan_false():
    for lib in (ember, torch):
        x = lib.tensor([0.0], requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with lib.autograd.detect_anomaly(check_nan=False), np.errstate(all="ignore"):
                (x.log() * 0).sum().backward()
        assert np.isnan(x.grad.numpy()[0])


def test_switches_match_torch():
    def states(lib, enabled, check_nan):
        out = [enabled()]
        lib.autograd.set_detect_anomaly(True)
        out.append(enabled())
        lib.autograd.set_detect_anomaly(False)
        with lib.autograd.set_detect_anomaly(True, check_nan=False):
            out += [enabled(), check_nan()]
        out += [enabled(), check_nan()]
        return out
    e = states(ember, is_anomaly_enabled, is_anomaly_check_nan_enabled)
    t = states(torch, torch.is_anomaly_enabled, torch.is_anomaly_check_nan_enabled)
    assert e == t == [False, True, True, False, False, True]


def test_detect_anomaly_as_decorator():
    # An ember extra: torch 2.13's detect_anomaly is a context manager only.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")

        @ember.autograd.detect_anomaly(check_nan=False)
        def f():
            return is_anomaly_enabled(), is_anomaly_check_nan_enabled()
    assert f() == (True, False)
    assert not is_anomaly_enabled()


def test_anomaly_records_stacks_only_while_enabled():
    x = ember.ones(2, requires_grad=True)
    assert (x * 2).grad_fn._anomaly is None
    with ember.autograd.set_detect_anomaly(True):
        assert (x * 2).grad_fn._anomaly
