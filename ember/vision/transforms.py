"""Image transforms: ToTensor, Normalize, Compose, Lambda, random flips and crops."""

from __future__ import annotations

import numbers

import numpy as np

from ember import _dtype
from ember._random import integer_sample, uniform_sample
from ember._tensor import Tensor


def _arr(img):
    return img._data if isinstance(img, Tensor) else np.asarray(img)


class Compose:
    """Apply transforms in order."""

    def __init__(self, transforms) -> None:
        self.transforms = list(transforms)

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self) -> str:
        body = "".join(f"\n    {t}" for t in self.transforms)
        return f"{type(self).__name__}({body}\n)"


class ToTensor:
    """uint8 HxW or HxWxC array (or PIL image) -> float32 CxHxW tensor in [0, 1]."""

    def __call__(self, pic) -> Tensor:
        a = np.asarray(pic)
        if a.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {a.ndim} dimensions.")
        if a.ndim == 2:
            a = a[:, :, None]
        a = np.ascontiguousarray(a.transpose(2, 0, 1))
        if a.dtype == np.uint8:
            return Tensor._make(a.astype(np.float32) / np.float32(255))
        return Tensor._make(a if a.dtype.kind == "f" else a.astype(np.float32))

    def __repr__(self) -> str:
        return "ToTensor()"


class Normalize:
    """``(x - mean) / std`` per channel of a CxHxW tensor."""

    def __init__(self, mean, std, inplace: bool = False) -> None:
        self.mean, self.std, self.inplace = mean, std, inplace

    def __call__(self, t: Tensor) -> Tensor:
        if not isinstance(t, Tensor):
            raise TypeError(f"img should be Tensor Image. Got {type(t)}")
        if not t.is_floating_point():
            raise TypeError(f"Input tensor should be a float tensor. Got {t.dtype}.")
        dt = t._data.dtype
        mean = np.asarray(self.mean, dtype=dt).reshape(-1, 1, 1)
        std = np.asarray(self.std, dtype=dt).reshape(-1, 1, 1)
        if np.any(std == 0):
            raise ValueError(f"std evaluated to zero after conversion to {t.dtype}, leading to "
                             "division by zero.")
        if self.inplace:
            np.subtract(t._data, mean, out=t._data)
            np.divide(t._data, std, out=t._data)
            return t
        return Tensor._make((t._data - mean) / std)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(mean={self.mean}, std={self.std})"


class Lambda:
    """Wrap a function as a transform."""

    def __init__(self, lambd) -> None:
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {type(lambd).__name__!r}")
        self.lambd = lambd

    def __call__(self, img):
        return self.lambd(img)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class RandomHorizontalFlip:
    """Flip the last (width) axis with probability ``p``."""

    def __init__(self, p: float = 0.5) -> None:
        self.p = p

    def __call__(self, img):
        if uniform_sample((1,), _dtype.float32)[0] < self.p:  # torch.rand(1) < p
            a = np.ascontiguousarray(_arr(img)[..., ::-1])
            return Tensor._make(a) if isinstance(img, Tensor) else a
        return img

    def __repr__(self) -> str:
        return f"{type(self).__name__}(p={self.p})"


class RandomCrop:
    """Crop a random ``size`` window, after optional zero (or constant) padding."""

    def __init__(self, size, padding=None, pad_if_needed: bool = False, fill=0,
                 padding_mode: str = "constant") -> None:
        self.size = (size, size) if isinstance(size, numbers.Number) else tuple(size)
        self.padding = padding
        self.pad_if_needed = pad_if_needed
        self.fill = fill
        self.padding_mode = padding_mode

    def __call__(self, img):
        a = _arr(img)
        chw = isinstance(img, Tensor)  # tensors are ...xHxW, arrays HxW(xC)
        h_ax, w_ax = (a.ndim - 2, a.ndim - 1) if chw else (0, 1)
        if self.padding is not None:
            p = (self.padding,) * 4 if isinstance(self.padding, int) else tuple(self.padding)
            left, top, right, bottom = p if len(p) == 4 else (p[0], p[1], p[0], p[1])
            a = self._pad(a, h_ax, w_ax, top, bottom, left, right)
        th, tw = self.size
        if self.pad_if_needed:
            dh, dw = max(th - a.shape[h_ax], 0), max(tw - a.shape[w_ax], 0)
            a = self._pad(a, h_ax, w_ax, dh, dh, dw, dw)
        h, w = a.shape[h_ax], a.shape[w_ax]
        if h < th or w < tw:
            raise ValueError(f"Required crop size {(th, tw)} is larger than input image size "
                             f"{(h, w)}")
        i = j = 0  # torchvision's draws: none for a full-size crop, else torch.randint twice
        if (h, w) != (th, tw):
            i = int(integer_sample((1,), 0, h - th + 1)[0])
            j = int(integer_sample((1,), 0, w - tw + 1)[0])
        sl = [slice(None)] * a.ndim
        sl[h_ax], sl[w_ax] = slice(i, i + th), slice(j, j + tw)
        out = np.ascontiguousarray(a[tuple(sl)])
        return Tensor._make(out) if chw else out

    def _pad(self, a, h_ax, w_ax, top, bottom, left, right):
        width = [(0, 0)] * a.ndim
        width[h_ax], width[w_ax] = (top, bottom), (left, right)
        mode = {"constant": "constant", "edge": "edge", "reflect": "reflect",
                "symmetric": "symmetric"}[self.padding_mode]
        kw = {"constant_values": self.fill} if mode == "constant" else {}
        return np.pad(a, width, mode=mode, **kw)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(size={self.size}, padding={self.padding})"


class ConvertImageDtype:
    """Convert a tensor image's dtype, rescaling values (uint8 255 <-> float 1.0)."""

    def __init__(self, dtype) -> None:
        self.dtype = _dtype.to_dtype(dtype)

    def __call__(self, t: Tensor) -> Tensor:
        src, dst = t.dtype, self.dtype
        a = t._data
        if src is dst:
            return t
        if src.is_floating_point and dst.is_floating_point:
            return Tensor._make(a.astype(dst.np))
        if not src.is_floating_point and dst.is_floating_point:
            return Tensor._make((a / np.iinfo(a.dtype).max).astype(dst.np))
        if src.is_floating_point:
            if (src, dst) in ((_dtype.float32, _dtype.int32), (_dtype.float32, _dtype.int64),
                              (_dtype.float64, _dtype.int64)):
                raise RuntimeError(f"The cast from {src} to {dst} cannot be performed safely.")
            hi = np.iinfo(dst.np).max
            return Tensor._make((a * (hi + 1.0 - 0.001)).astype(dst.np))
        # value bits (255 -> 8, int32 max -> 31), as torch shifts between integer types
        si = int(np.iinfo(a.dtype).max).bit_length()
        di = int(np.iinfo(dst.np).max).bit_length()
        if si > di:
            return Tensor._make((a >> (si - di)).astype(dst.np))
        return Tensor._make(a.astype(dst.np) << (di - si) if di > si else a.astype(dst.np))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


__all__ = ["Compose", "ConvertImageDtype", "Lambda", "Normalize", "RandomCrop",
           "RandomHorizontalFlip", "ToTensor"]
