"""ember.signal.windows (torch.signal.windows): window functions of length ``M``, symmetric by
default (``sym=False`` gives the periodic window used for spectral analysis). Each samples
``linspace`` points and maps them as torch does, so the values agree to rounding.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from ember import _dtype
from ember._tensor import Tensor

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _checks(name: str, M: int, dtype, layout) -> _dtype.dtype:
    from ember._layout import strided

    dt = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not None and layout is not strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dt not in (_dtype.float32, _dtype.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: "
                         f"{str(dt).replace('ember.', 'torch.')}")
    return dt


def _trivial(M: int, dt, device, requires_grad: bool) -> Tensor | None:
    """The windows of length 0 and 1 (empty, and [1])."""
    from ember._creation import empty, ones

    if M == 0:
        return empty(0, dtype=dt, device=device, requires_grad=requires_grad)
    if M == 1:
        return ones(1, dtype=dt, device=device, requires_grad=requires_grad)
    return None


def _points(start, step, M: int, dt, device, requires_grad: bool) -> Tensor:
    from ember._creation import linspace

    return linspace(start, start + (M - 1) * step, M, dtype=dt, device=device,
                    requires_grad=requires_grad)


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True,
                dtype=None, layout=None, device=None, requires_grad: bool = False) -> Tensor:
    """``exp(-|n - center| / tau)``."""
    dt = _checks("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _trivial(M, dt, device, requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    k = _points(-center / tau, 1 / tau, M, dt, device, requires_grad)
    return (-k.abs()).exp()


def cosine(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
           requires_grad: bool = False) -> Tensor:
    """``sin(pi (n + 0.5) / M)``."""
    dt = _checks("cosine", M, dtype, layout)
    if M == 0:
        return _trivial(M, dt, device, requires_grad)
    step = math.pi / (M + 1 if not sym and M > 1 else M)
    return _points(0.5 * step, step, M, dt, device, requires_grad).sin()


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype=None, layout=None,
             device=None, requires_grad: bool = False) -> Tensor:
    """``exp(-((n - (M - 1) / 2) / std)^2 / 2)``."""
    dt = _checks("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _trivial(M, dt, device, requires_grad)
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    step = 1 / (std * math.sqrt(2))
    k = _points(start * step, step, M, dt, device, requires_grad)
    return (-(k ** 2)).exp()


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype=None, layout=None,
           device=None, requires_grad: bool = False) -> Tensor:
    """``I0(sqrt(beta^2 - k^2)) / I0(beta)`` for k from -beta to beta."""
    from ember._creation import linspace, tensor
    from ember.ops.bessel import i0

    dt = _checks("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    if M <= 1:
        return _trivial(M, dt, device, requires_grad)
    b = tensor(beta, dtype=dt, device=device)
    step = 2.0 * b / (M if not sym else M - 1)
    end = b.minimum(-b + (M - 1) * step)
    k = linspace(-b.item(), end.item(), M, dtype=dt, device=device, requires_grad=requires_grad)
    return i0((b * b - k.pow(2)).sqrt()) / i0(b)


def general_cosine(M: int, *, a: Iterable, sym: bool = True, dtype=None, layout=None,
                   device=None, requires_grad: bool = False) -> Tensor:
    """``sum_i (-1)^i a_i cos(2 pi i n / (M - 1))``."""
    from ember._creation import arange, tensor

    dt = _checks("general_cosine", M, dtype, layout)
    if M <= 1:
        return _trivial(M, dt, device, requires_grad)
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    step = 2 * math.pi / (M if not sym else M - 1)
    k = _points(0, step, M, dt, device, requires_grad)
    coef = tensor([(-1) ** i * w for i, w in enumerate(a)], dtype=dt, device=device,
                  requires_grad=requires_grad)
    i = arange(coef.shape[0], dtype=dt, device=device)
    return (coef.unsqueeze(-1) * (i.unsqueeze(-1) * k).cos()).sum(0)


def general_hamming(M: int, *, alpha: float = 0.54, sym: bool = True, dtype=None, layout=None,
                    device=None, requires_grad: bool = False) -> Tensor:
    """``alpha - (1 - alpha) cos(2 pi n / (M - 1))``."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def hamming(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
            requires_grad: bool = False) -> Tensor:
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
         requires_grad: bool = False) -> Tensor:
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
             requires_grad: bool = False) -> Tensor:
    _checks("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def nuttall(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
            requires_grad: bool = False) -> Tensor:
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


def bartlett(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """The triangle ``1 - |k|`` for k from -1 to 1."""
    dt = _checks("bartlett", M, dtype, layout)
    if M <= 1:
        return _trivial(M, dt, device, requires_grad)
    k = _points(-1, 2 / (M if not sym else M - 1), M, dt, device, requires_grad)
    return 1 - k.abs()
