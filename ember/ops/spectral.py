"""Short-time Fourier transforms (``stft`` / ``istft``), composed of differentiable ops as torch
composes them: padding, framing (``unfold``), the window, ``ember.fft``, and for the inverse
the overlap-add (unfold's adjoint) divided by the window's squared envelope."""

from __future__ import annotations

import warnings

from ember import _dtype
from ember._tensor import Tensor
from ember.ops._common import variant
from ember.ops.shape import SqueezeDim, Transpose
from ember.ops.shape_strided import UnfoldGrad

_NO_WINDOW = ("A window was not provided. A rectangular window will be applied,which is known "
              "to cause spectral leakage. Other windows such as torch.hann_window or "
              "torch.hamming_window are recommended to reduce spectral leakage.To suppress this "
              "warning and use a rectangular window, explicitly set `window=torch.ones(n_fft, "
              "device=<device>)`.")
_NO_WINDOW_INV = ("A window was not provided. A rectangular window will be applied.Please "
                  "provide the same window used by stft to make the inversion lossless.To "
                  "suppress this warning and use a rectangular window, explicitly set "
                  "`window=torch.ones(n_fft, device=<device>)`.")


def _window(window: Tensor | None, n_fft: int, win_length: int, fname: str):
    """The window zero-padded to n_fft (centred), or None for a rectangular one."""
    if window is None:
        return None
    if window.ndim != 1 or window.shape[0] != win_length:
        raise RuntimeError(f"{fname}: expected a 1D window tensor of size equal to win_length="
                           f"{win_length}, but got window with size {list(window.shape)}")
    if win_length == n_fft:
        return window
    from ember.ops.pool import ConstantPadNd

    left = (n_fft - win_length) // 2
    return ConstantPadNd.apply(window, pads=((left, n_fft - win_length - left),), value=0)


def _lengths(n_fft: int, hop_length, win_length, fname: str) -> tuple[int, int]:
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if hop <= 0:
        raise RuntimeError(f"{fname}: expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise RuntimeError(f"{fname}: expected 0 < win_length <= n_fft, but got "
                           f"win_length={win}")
    return hop, win


def _center_pad(x: Tensor, pad: int, mode: str) -> Tensor:
    """torch pads the signal as a (1, B, L) batch, so ``reflect`` works on 1-d signals too."""
    from ember.nn.functional import pad as fpad

    if x.is_complex():  # the padding is real-linear: pad both parts
        from ember.ops.complex import complex as make_complex

        return make_complex(_center_pad(x.real, pad, mode), _center_pad(x.imag, pad, mode))
    shape = x.shape
    return fpad(x.reshape((1,) * (3 - x.ndim) + tuple(shape)), [pad, pad], mode) \
        .reshape(shape[:-1] + (shape[-1] + 2 * pad,))


def stft(input: Tensor, n_fft: int, hop_length: int | None = None,
         win_length: int | None = None, window: Tensor | None = None, center: bool = True,
         pad_mode: str = "reflect", normalized: bool = False, onesided: bool | None = None,
         return_complex: bool | None = None, align_to_window: bool | None = None) -> Tensor:
    """Fourier transforms of windowed frames: (freq, frames) per signal, as torch.stft."""
    from ember import fft

    cplx = input.is_complex() or (window is not None and window.is_complex())
    if return_complex is None:
        if not cplx:
            raise RuntimeError("stft requires the return_complex parameter be given for real "
                               "inputs, and will further require that return_complex=True in "
                               "a future PyTorch release.")
        return_complex = True
    if not return_complex:
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch "
                      "release, stft will return complex tensors for all inputs, and "
                      "return_complex=False will raise an error.\nNote: you can still call "
                      "torch.view_as_real on the complex output to recover the old return "
                      "format.", UserWarning, stacklevel=2)
    if input.ndim not in (1, 2):
        raise RuntimeError("stft: expected a 1D or 2D tensor")
    if center:
        input = _center_pad(input, n_fft // 2, pad_mode)
    length = input.shape[-1]
    if not 0 < n_fft <= length:
        raise RuntimeError(f"stft: expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    hop, win = _lengths(n_fft, hop_length, win_length, "stft")
    if window is None:
        warnings.warn(_NO_WINDOW, UserWarning, stacklevel=2)
    w = _window(window, n_fft, win, "stft")
    if onesided is None:
        onesided = not cplx
    elif onesided and cplx:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    x = input if input.ndim == 2 else input.unsqueeze(0)
    frames = x.unfold(-1, n_fft, hop)  # (batch, frames, n_fft), a view
    if w is not None:
        frames = frames * w
    norm = "ortho" if normalized else "backward"
    out = (fft.rfft if onesided else fft.fft)(frames, dim=-1, norm=norm)
    # torch transposes and squeezes in place: its nodes are the in-place variants
    out = variant(Transpose, "TransposeBackward1").apply(out, d0=1, d1=2)
    if input.ndim == 1:
        out = variant(SqueezeDim, "SqueezeBackward4").apply(out, dims=(0,))
    if not return_complex:
        from ember.ops.complex import view_as_real

        out = view_as_real(out)
    return out


def istft(input: Tensor, n_fft: int, hop_length: int | None = None,
          win_length: int | None = None, window: Tensor | None = None, center: bool = True,
          normalized: bool = False, onesided: bool | None = None, length: int | None = None,
          return_complex: bool = False) -> Tensor:
    """The inverse of ``stft``: inverse transforms of the frames, overlap-added and divided by
    the window's squared envelope."""
    from ember import fft

    if not input.is_complex():
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex "
                           f"dtype, but got {input.ndim}")
    hop, win = _lengths(n_fft, hop_length, win_length, "istft")
    if window is None:
        warnings.warn(_NO_WINDOW_INV, UserWarning, stacklevel=2)
    n_frames, fft_size = input.shape[-1], input.shape[-2]
    if onesided is None:
        onesided = fft_size != n_fft
    if onesided and fft_size != n_fft // 2 + 1:
        raise RuntimeError("istft: expected the frequency dimension (3rd to the last) of the "
                           "input tensor to match n_fft / 2 + 1 when onesided=True, but got "
                           f"{fft_size}")
    if not onesided and fft_size != n_fft:
        raise RuntimeError("istft: expected the frequency dimension (3rd to the last) of the "
                           f"input tensor to match n_fft when onesided=False, but got {fft_size}")
    x = (input if input.ndim == 3 else input.unsqueeze(0)).transpose(1, 2)
    norm = "ortho" if normalized else "backward"
    if return_complex:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = fft.ifft(x, dim=-1, norm=norm)
    else:
        if window is not None and window.is_complex():
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not onesided:
            x = x.narrow(-1, 0, n_fft // 2 + 1)
        frames = fft.irfft(x, n=n_fft, dim=-1, norm=norm)
    w = _window(window, n_fft, win, "istft")
    if w is None:
        from ember._creation import ones

        w = ones(n_fft, dtype=_dtype.from_numpy_dtype(frames._data.dtype).to_real())
    frames = frames * w
    total = n_fft + hop * (n_frames - 1)
    y = UnfoldGrad.apply(frames, shape=(frames.shape[0], total), args=(1, n_fft, hop))
    env = UnfoldGrad.apply((w * w).expand(n_frames, n_fft), shape=(total,), args=(0, n_fft, hop))
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else -(n_fft // 2) if center else total
    y, env = y[:, start:end], env[start:end]
    if env.numel() and float(env.detach().abs().min()) < 1e-11:
        raise RuntimeError("istft: window overlap add min: 1")
    y = y / env
    if input.ndim == 2:
        y = y.squeeze(0)
    if end > total:
        warnings.warn("The length of signal is shorter than the length parameter. Result is "
                      "being padded with zeros in the tail. Please check your center and "
                      "hop_length settings.", UserWarning, stacklevel=2)
        from ember.ops.pool import ConstantPadNd

        pads = ((0, 0),) * (y.ndim - 1) + ((0, end - total),)
        y = ConstantPadNd.apply(y, pads=pads, value=0)
    return y


METHODS = {"stft": stft, "istft": istft}
FUNCTIONS = {"stft": stft, "istft": istft}
