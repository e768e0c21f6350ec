"""Bad input raises what torch raises (type and key phrase), never a NumPy or Python internal;
and what torch refuses is not silently accepted. Each case runs in ember and torch."""

from __future__ import annotations

import pytest
from oracle import same

NAN = "float('nan')"
F = "m.nn.functional"

# (code, key phrase of the message) -- both libraries must raise the same type with the phrase.
REFUSED = [
    # where with shapes that do not broadcast (NumPy's ValueError before)
    ("m.where(m.ones(2) > 0, m.ones(3), 0.)", "must match the size of tensor b"),
    ("m.where(m.ones(2) > 0, m.ones(3), m.zeros(3))", "The size of tensor a (2)"),
    ("m.where(m.ones(3) > 0, m.ones(2, 1), m.ones(3, 2))", "at non-singleton dimension"),
    ("m.where(m.tensor(True), m.ones(2), m.ones(3))", "The size of tensor a (2)"),
    # Python ints beyond 64 bits (NumPy's "Python int too large to convert to C long" before)
    ("m.tensor([2]) ** 2**64", "int too big to convert"),
    ("m.tensor([2.]) * 10**30", "int too big to convert"),
    ("m.tensor([2]) + (-2**63 - 1)", "can't convert negative int to unsigned"),
    ("m.tensor([2.]).fill_(2**64)", "int too big to convert"),
    ("m.full((1,), -2**63 - 1)", "can't convert negative int to unsigned"),
    ("m.arange(2**64)", "int too big to convert"),
    # ... and in [2**63, 2**64) where an int64 value is needed (silently wrapped before)
    ("m.tensor([2]) ** 2**63", "value cannot be converted to type int64_t without overflow"),
    ("m.tensor([2]).fill_(2**63)", "int64_t without overflow"),
    ("m.tensor([2]).clamp_(max=2**63)", "int64_t without overflow"),
    ("m.tensor([2]).masked_fill(m.tensor([True]), 2**63)", "int64_t without overflow"),
    ("m.tensor([2]).index_fill(0, m.tensor([0]), 2**63)", "int64_t without overflow"),
    ("m.tensor([2]).add(1, alpha=2**63)", "int64_t without overflow"),
    ("m.where(m.tensor([True]), m.tensor([1]), 2**63)", "int64_t without overflow"),
    ("m.full((1,), 2**63)", "int64_t without overflow"),
    ("m.arange(0, 2**63, 2**62)", "int64_t without overflow"),
    ("m.zeros(2**62, 2**62)", "Storage size calculation overflowed"),
    # messages
    ("m.tensor([]).argmax()", "Expected reduction dim to be specified for input.numel() == 0."),
    ("m.tensor([]).max()", "Specify the reduction dim with the 'dim' argument."),
    ("m.tensor([1, 2]).mean()", "Got: Long"),
    ("m.tensor([1., 2.]).mean(dtype=m.int64)", "Optional dtype must be either a floating point"),
    # silently accepted before
    (f"{F}.binary_cross_entropy(m.tensor([{NAN}, 0.5]), m.tensor([1., 0.]))",
     "all elements of input should be between 0 and 1"),
    (f"m.nn.BCELoss()(m.tensor([{NAN}, 0.5]), m.tensor([1., 0.]))", "input should be between"),
    (f"{F}.binary_cross_entropy(m.tensor([1.5, 0.5]), m.tensor([1., 0.]))",
     "input should be between 0 and 1"),
    (f"{F}.binary_cross_entropy(m.tensor([0.5, 0.5]), m.tensor([1.5, 0.]))",
     "all elements of target should be between 0 and 1"),
    (f"{F}.binary_cross_entropy(m.tensor([0.5, 0.5]), m.tensor([{NAN}, 0.]))",
     "target should be between 0 and 1"),
    (f"{F}.cross_entropy(m.ones(3, 4), m.tensor([0, 1, 2], dtype=m.int32))",
     "expected target dtype to be Long or Byte, but got Int"),
    (f"{F}.cross_entropy(m.ones(3, 4), m.tensor([0, 1, 2], dtype=m.int16))",
     "expected target dtype to be Long or Byte, but got Short"),
    (f"{F}.nll_loss(m.ones(3, 4), m.tensor([0, 1, 2], dtype=m.int32))", "Long or Byte"),
    (f"{F}.mse_loss(m.tensor([1, 2]), m.tensor([1, 3]))", "\"mse_cpu\" not implemented for 'Long'"),
    (f"{F}.mse_loss(m.tensor([1, 2], dtype=m.int32), m.tensor([1, 3], dtype=m.int32))",
     "not implemented for 'Int'"),
    (f"{F}.mse_loss(m.tensor([True]), m.tensor([False]))", "not implemented for 'Bool'"),
    ("m.nn.MSELoss()(m.tensor([1, 2]), m.tensor([1, 3]))", "\"mse_cpu\" not implemented"),
    (f"{F}.smooth_l1_loss(m.tensor([1, 2]), m.tensor([1, 3]))", "\"smooth_l1_cpu\" not"),
    (f"{F}.huber_loss(m.tensor([1, 2]), m.tensor([1, 3]))", "\"huber_cpu\" not implemented"),
    (f"{F}.embedding(m.tensor([0, 1]), m.ones(5))", "'weight' must be 2-D"),
    (f"{F}.embedding(m.tensor([0, 1]), m.ones(2, 3, 4))", "'weight' must be 2-D"),
    (f"{F}.embedding(m.tensor(1), m.ones(5))", "'weight' must be 2-D"),
    ("m.ones(3, requires_grad=True)[:2].detach_()", "Can't detach views in-place"),
    ("m.ones(3)[:2].detach_()", "Can't detach views in-place"),
    ("m.ones(3).view(3).detach_()", "Can't detach views in-place"),
    (f"{F}.interpolate(m.ones(1, 1, 4), size=0)",
     "but got input (W: 4) and output (W: 0)"),
    (f"{F}.interpolate(m.ones(1, 1, 4, 4), size=(0, 2))",
     "Input and output sizes should be greater than 0, but got input (H: 4, W: 4) output (H: 0"),
    (f"{F}.interpolate(m.ones(1, 1, 4, 4), size=-1)", "output (H: -1, W: -1)"),
    (f"{F}.interpolate(m.ones(1, 1, 4), scale_factor=0.1)", "output (W: 0)"),
    (f"{F}.interpolate(m.ones(1, 1, 4), size=0, mode='linear')", "output (W: 0)"),
    (f"{F}.interpolate(m.ones(1, 1, 4, 4), size=(3, 0), mode='bilinear')", "output (H: 3, W: 0)"),
    (f"{F}.interpolate(m.ones(1, 1, 0), size=2)", "input (W: 0)"),
    (f"{F}.interpolate(m.ones(1, 0, 4), size=2)",
     "Non-empty 3D data tensor expected but got a tensor with sizes [1, 0, 4]"),
    (f"{F}.interpolate(m.ones(1, 0, 4, 4), size=2, mode='bilinear')", "Non-empty 4D data"),
    ("m.zeros(2, dtype='float32')", "zeros(): argument 'dtype' must be torch.dtype, not str"),
    ("m.tensor([1.], dtype='float64')", "argument 'dtype' must be torch.dtype, not str"),
    ("m.ones(2, dtype='float32')", "argument 'dtype' must be torch.dtype, not str"),
    ("m.arange(3, dtype='int32')", "dtype"),
    ("m.full((2,), 1., dtype='float64')", "argument 'dtype' must be torch.dtype, not str"),
    ("m.zeros_like(m.ones(2), dtype='float64')", "argument 'dtype' must be torch.dtype"),
    ("m.zeros(2, dtype=3)", "argument 'dtype' must be torch.dtype, not int"),
    ("m.zeros(2, dtype=__import__('numpy').float32)", "argument 'dtype' must be torch.dtype"),
    ("m.ones(2).to(dtype='float32')", "dtype"),
    ("m.ones(2).sum(dtype='float64')", "dtype"),
    ("m.ones(2).softmax(0, dtype='float64')", "dtype"),
    ("m.tensor([True]) << m.tensor([True])", "\"lshift_cpu\" not implemented for 'Bool'"),
    ("m.tensor([True]) >> m.tensor([True])", "\"rshift_cpu\" not implemented for 'Bool'"),
    ("m.bitwise_left_shift(m.tensor([True]), True)", "\"lshift_cpu\" not implemented"),
    ("m.bitwise_right_shift(m.tensor([True]), m.tensor([False]))", "\"rshift_cpu\" not"),
    ("m.tensor([True]).bitwise_left_shift_(m.tensor([True]))", "\"lshift_cpu\" not"),
    ("True << m.tensor([True])", "\"lshift_cpu\" not implemented for 'Bool'"),
]

# Edge cases that must give torch's value (printed identically).
ACCEPTED = [
    # integer powers: the minimum int64 as exponent (NumPy's ValueError before), units, zero
    "m.tensor([2, 3]) ** m.tensor([-9223372036854775808])",
    "m.tensor([0, 1, -1, 2]) ** m.tensor([-9223372036854775808])",
    "m.tensor([2]).pow(m.tensor(-9223372036854775808))",
    "m.tensor([-1, -1, 1, 5]) ** m.tensor([-9223372036854775807, -2, -3, 0])",
    "m.tensor([2, 3], dtype=m.int32) ** m.tensor([-2147483648], dtype=m.int32)",
    "m.tensor([-1, 2], dtype=m.int8) ** m.tensor([-128, -128], dtype=m.int8)",
    "m.tensor([2]) ** 63", "m.tensor([2]) ** 64", "m.tensor([-2]) ** 63",
    "m.tensor([3]) ** 100", "m.tensor([2], dtype=m.int8) ** 9", "2 ** m.tensor([64])",
    "m.tensor([-9223372036854775808]) ** 2", "m.tensor([0]) ** 0",
    "m.float_power(m.tensor([2]), -9223372036854775808)",
    # ints that torch still takes
    "m.tensor([2]) + (2**64 - 1)", "m.tensor([2.]) + 2**63", "m.tensor([2.]).fill_(2**63)",
    "m.tensor([2]) * 2**63", "m.tensor([2]).eq(2**63)",
    "m.full((1,), 2**63, dtype=m.float32)",
    "m.where(m.ones(2, 1) > 0, m.ones(3), 0.)",
    "m.where(m.ones(2, 1) > 0, m.ones(1, 3), m.ones(4, 1, 1))",
    # what torch allows around the new refusals
    "m.ones(3, requires_grad=True).detach().detach_()",
    "(m.ones(3, requires_grad=True) * 2).detach_()",
    f"{F}.binary_cross_entropy(m.tensor([0., 1.]), m.tensor([1., 0.]))",
    f"{F}.cross_entropy(m.ones(3, 4), m.tensor([0, 1, 2], dtype=m.uint8))",
    f"{F}.mse_loss(m.tensor([1., 2.]), m.tensor([1, 3]))",
    f"{F}.interpolate(m.ones(0, 1, 4), size=2)",
    f"{F}.interpolate(m.ones(1, 1, 4), size=0, mode='area')",
    "m.zeros(2, dtype=float)", "m.zeros(2, dtype=int)", "m.zeros(2, dtype=bool)",
    "m.tensor([True]) << 1", "m.tensor([1]) << m.tensor([True])",
    "m.tensor([True]) & m.tensor([True])",
]


@pytest.mark.parametrize("code,phrase", REFUSED, ids=[c for c, _ in REFUSED])
def test_refused_as_torch(code, phrase):
    same(lambda m: eval(code, {"m": m}), match=phrase)  # noqa: S307


@pytest.mark.parametrize("code", ACCEPTED)
def test_accepted_as_torch(code):
    same(lambda m: eval(code, {"m": m}))  # noqa: S307


def test_softmax_needs_a_dim_outside_functional():
    """torch.softmax / Tensor.softmax take no implicit dim (only F.softmax warns and picks)."""
    from oracle import check_error

    for name in ("softmax", "log_softmax"):
        check_error(lambda m, n=name: getattr(m, n)(m.eye(3)))
        check_error(lambda m, n=name: getattr(m.eye(3), n)())
