"""torch.fft: discrete Fourier transforms with torch's signatures, dtypes and gradients.

Every transform is one of three differentiable primitives (ember/fft/_ops.py) after the
input is cut or zero-padded to the requested signal size, as torch does. ``norm`` is
"backward" (no scaling forward, 1/n inverse; the default), "ortho" (1/sqrt(n) both ways) or
"forward" (1/n forward, none inverse). float32 gives complex64 and float64 complex128
(NumPy's own transforms keep that precision); integer inputs are promoted to the default
float dtype first.
"""

from __future__ import annotations

import math

from ember import _dtype
from ember._tensor import Tensor
from ember.fft._helpers import fftfreq, fftshift, ifftshift, rfftfreq
from ember.fft._ops import FftC2C, FftC2R, FftR2C

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
           "fftn", "ifftn", "rfftn", "irfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def _scale(norm: str | None, forward: bool, n: int) -> float:
    """torch's norm_from_string: the factor applied by a transform of signal size ``n``."""
    if norm is None or norm == "backward":
        mode = "none" if forward else "n"
    elif norm == "forward":
        mode = "n" if forward else "none"
    elif norm == "ortho":
        mode = "sqrt"
    else:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    if mode == "none" or n == 0:
        return 1.0
    return 1.0 / math.sqrt(n) if mode == "sqrt" else 1.0 / n


def _promote(x: Tensor, fname: str, require_complex: bool = False) -> Tensor:
    """torch's promote_tensor_fft: integers to the default float, half precision refused."""
    if not isinstance(x, Tensor):
        raise TypeError(f"fft_{fname}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    dt = x.dtype
    if dt._kind < 2:
        x = x.to(_dtype.get_default_dtype())
    elif dt not in (_dtype.float32, _dtype.float64, _dtype.complex64, _dtype.complex128):
        raise RuntimeError(f"Unsupported dtype {_dtype.TYPE_NAMES[dt][6:-6]}")
    if require_complex and not x.is_complex():
        x = x.to(x.dtype.to_complex())
    return x


def _dims_and_sizes(x: Tensor, s, dim, one_sided: str = "") -> tuple[list, list]:
    """torch's canonicalize_fft_shape_and_dim_args: the dims and the signal size for each
    (``one_sided``: the name of a transform that needs at least one dim)."""
    nd = x.ndim
    if dim is not None:
        dims = [dim] if isinstance(dim, int) else list(dim)
        if not nd and dims:
            raise IndexError(f"Dimension specified as {dims[0]} but tensor has no dimensions")
        for d in dims:
            if not -max(nd, 1) <= d < max(nd, 1):
                raise IndexError(f"Dimension out of range (expected to be in range of "
                                 f"[{-max(nd, 1)}, {max(nd, 1) - 1}], but got {d})")
        dims = [d % nd if nd else 0 for d in dims]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        s = list(s)
        if dim is not None and len(s) != len(dims):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if len(s) > nd:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has "
                               f"{nd} dimensions.")
        if dim is None:
            dims = list(range(nd - len(s), nd))
        sizes = [x.shape[d] if n == -1 else n for n, d in zip(s, dims)]
    else:
        if dim is None:
            dims = list(range(nd))
        sizes = [x.shape[d] for d in dims]
    if one_sided and not dims:
        raise RuntimeError(f"{one_sided} must transform at least one axis")
    for n in sizes:
        if n <= 0:
            raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return dims, sizes


def _resize(x: Tensor, dims: list, sizes: list) -> Tensor:
    """Cut or zero-pad ``x`` to ``sizes`` along ``dims`` (torch's resize_fft_input)."""
    if all(x.shape[d] == n for d, n in zip(dims, sizes)):
        return x
    from ember.ops.pool import ConstantPadNd

    pads = [(0, 0)] * x.ndim
    for d, n in zip(dims, sizes):
        pads[d] = (0, n - x.shape[d])
    return ConstantPadNd.apply(x, pads=tuple(pads), value=0)


def _one_dim(n, dim: int) -> tuple:
    return (None if n is None else [n]), [dim]


def _c2c(x: Tensor, s, dim, norm, forward: bool, fname: str, one_dim=False):
    """A complex transform; torch's 1-d ones take a real input as a two-sided real transform
    (its n-d ones convert it to complex first)."""
    x = _promote(x, fname, require_complex=not one_dim)
    dims, sizes = _dims_and_sizes(x, s, dim)
    x = _resize(x, dims, sizes)
    scale = _scale(norm, forward, math.prod(sizes))
    if x.is_complex():
        return FftC2C.apply(x, dims=tuple(dims), scale=scale, forward=forward)
    out = FftR2C.apply(x, dims=tuple(dims), scale=scale, onesided=False)
    return out if forward else out.conj()


def _r2c(x: Tensor, s, dim, norm, forward: bool, fname: str):
    x = _promote(x, fname)
    if x.is_complex():
        raise RuntimeError(f"{fname} expects a real input tensor, but got "
                           f"{_dtype.TYPE_NAMES[x.dtype][6:-6]}")
    dims, sizes = _dims_and_sizes(x, s, dim, fname)
    x = _resize(x, dims, sizes)
    out = FftR2C.apply(x, dims=tuple(dims), scale=_scale(norm, forward, math.prod(sizes)),
                       onesided=True)
    return out if forward else out.conj()


def _c2r(x: Tensor, s, dim, norm, forward: bool, fname: str):
    x = _promote(x, fname, require_complex=True)
    dims, sizes = _dims_and_sizes(x, s, dim, fname)
    if s is None or s[-1] == -1:
        sizes[-1] = 2 * (x.shape[dims[-1]] - 1)
        if sizes[-1] <= 0:
            raise RuntimeError(f"Invalid number of data points ({sizes[-1]}) specified")
    n = sizes[-1]
    x = _resize(x, dims, sizes[:-1] + [n // 2 + 1])
    if forward:  # hfft: the inverse real transform of the conjugate
        x = x.conj()
    return FftC2R.apply(x, dims=tuple(dims), scale=_scale(norm, forward, math.prod(sizes)), n=n)


def fft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The one-dimensional discrete Fourier transform."""
    return _c2c(input, *_one_dim(n, dim), norm, True, "fft", True)


def ifft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The one-dimensional inverse discrete Fourier transform."""
    return _c2c(input, *_one_dim(n, dim), norm, False, "ifft", True)


def rfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The FFT of a real signal: the n // 2 + 1 non-negative frequencies."""
    return _r2c(input, *_one_dim(n, dim), norm, True, "rfft")


def irfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of ``rfft``: ``n`` real points (default 2 * (m - 1)) from m bins."""
    return _c2r(input, *_one_dim(n, dim), norm, False, "irfft")


def hfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The FFT of a Hermitian-symmetric signal given by its first half: a real result."""
    return _c2r(input, *_one_dim(n, dim), norm, True, "hfft")


def ihfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of ``hfft``: the half spectrum of a real signal's inverse FFT."""
    return _r2c(input, *_one_dim(n, dim), norm, False, "ihfft")


def fftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:
    """The N-dimensional FFT (over all dims, or ``dim`` / the last ``len(s)`` dims)."""
    return _c2c(input, s, dim, norm, True, "fftn")


def ifftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:
    """The N-dimensional inverse FFT."""
    return _c2c(input, s, dim, norm, False, "ifftn")


def rfftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:
    """The N-dimensional FFT of a real input, one-sided in the last dim."""
    return _r2c(input, s, dim, norm, True, "rfftn")


def irfftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:
    """The inverse of ``rfftn``."""
    return _c2r(input, s, dim, norm, False, "irfftn")


def fft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None) -> Tensor:
    """The 2-dimensional FFT (the last two dims by default)."""
    return fftn(input, s, dim, norm)


def ifft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None) -> Tensor:
    """The 2-dimensional inverse FFT."""
    return ifftn(input, s, dim, norm)


def rfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None) -> Tensor:
    """The 2-dimensional FFT of a real input."""
    return rfftn(input, s, dim, norm)


def irfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None) -> Tensor:
    """The inverse of ``rfft2``."""
    return irfftn(input, s, dim, norm)
