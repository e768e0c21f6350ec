"""Complex tensors: ``real``/``imag`` and ``view_as_real``/``view_as_complex`` (views sharing
memory, as torch), ``conj``, ``angle``, and building complex tensors (``complex``, ``polar``).

Gradients follow torch's convention (see ember/ops/_complex_grad.py): these ops are not
holomorphic, so each writes its complex backward itself. ``conj`` copies (torch sets a lazy
conjugate bit instead), so ``is_conj()`` is always False; values and gradients are the same.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ember import _dtype
from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.ops._promote import check_broadcast


def discard_imag(x: np.ndarray) -> np.ndarray:
    """The real parts, with torch's warning (a cast of complex values to a real dtype)."""
    warnings.warn("Casting complex values to real discards the imaginary part (Triggered "
                  "internally at /__w/pytorch/pytorch/aten/src/ATen/native/Copy.cpp:307.)",
                  UserWarning, stacklevel=6)
    return x.real


class Conj(Op):
    node_name = "ConjBackward0"
    complex_grad = "own"

    @staticmethod
    def forward(ctx, x):
        return np.conj(x)

    @staticmethod
    def backward(ctx, g):
        return conj(g)


class ConjPhysical(Conj):
    node_name = "ConjPhysicalBackward0"


def conj(x: Tensor) -> Tensor:
    """The complex conjugate (a real tensor is returned as it is, as in torch)."""
    if x._data.dtype.kind != "c":
        return x
    return Conj.apply(x)


def conj_physical(x: Tensor) -> Tensor:
    """The complex conjugate, computed now (for a real tensor: the same tensor)."""
    if x._data.dtype.kind != "c":
        return x
    return ConjPhysical.apply(x)


def resolve_conj(x: Tensor) -> Tensor:
    """ember never defers a conjugation, so there is nothing to resolve."""
    return x


def is_conj(x: Tensor) -> bool:
    return False


class Real(Op):
    node_name = "RealBackward0"
    view = True

    @staticmethod
    def forward(ctx, x):
        ctx.dt = _dtype.from_numpy_dtype(x.dtype)
        return x.real

    @staticmethod
    def backward(ctx, g):
        return g.to(ctx.dt)


class Imag(Op):
    node_name = "ImagBackward0"
    view = True

    @staticmethod
    def forward(ctx, x):
        ctx.dt = _dtype.from_numpy_dtype(x.dtype)
        return x.imag

    @staticmethod
    def backward(ctx, g):
        return g.to(ctx.dt) * 1j


def real(x: Tensor) -> Tensor:
    """The real parts, as a view (a real tensor is returned as it is)."""
    if x._data.dtype.kind != "c":
        return x
    return Real.apply(x)


def imag(x: Tensor) -> Tensor:
    """The imaginary parts, as a view; torch's error for real tensors."""
    if x._data.dtype.kind != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return Imag.apply(x)


def _set_part(part):
    def setter(self: Tensor, value) -> None:
        part(self).copy_(value if isinstance(value, Tensor) else Tensor._make(np.asarray(value)))
    return setter


class ViewAsReal(Op):
    node_name = "ViewAsRealBackward0"
    view = True

    @staticmethod
    def forward(ctx, x):
        re = x.real  # a view with x's strides; the imaginary part is one real item further on
        return np.lib.stride_tricks.as_strided(re, x.shape + (2,), re.strides + (re.itemsize,))

    @staticmethod
    def backward(ctx, g):
        return view_as_complex(g.contiguous())


class ViewAsComplex(Op):
    node_name = "ViewAsComplexBackward0"
    view = True
    complex_grad = "own"

    @staticmethod
    def forward(ctx, x):
        return x.view(np.complex64 if x.dtype == np.float32 else np.complex128)[..., 0]

    @staticmethod
    def backward(ctx, g):
        return view_as_real(g)


def view_as_real(x: Tensor) -> Tensor:
    """A real view of a complex tensor, with a last dimension of size 2 (real, imaginary)."""
    if x._data.dtype.kind != "c":
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return ViewAsReal.apply(x)


def view_as_complex(x: Tensor) -> Tensor:
    """A complex view of a float tensor whose last dimension (size 2, stride 1) holds the
    real and imaginary parts."""
    if x.dtype not in (_dtype.float32, _dtype.float64):
        raise RuntimeError("view_as_complex is only supported for half, float and double "
                           f"tensors, but got a tensor of scalar type: "
                           f"{_dtype.TYPE_NAMES[x.dtype].split('.')[1].removesuffix('Tensor')}")
    if not x.ndim or x.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    strides = x.stride()
    if strides[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if x.storage_offset() % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return ViewAsComplex.apply(x)


class Angle(Op):
    node_name = "AngleBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x):
        if x.dtype.kind == "c":
            return np.angle(x)
        # torch: pi for negative numbers, 0 otherwise, NaN kept
        return np.where(x < 0, x.dtype.type(math.pi), x * 0)

    @staticmethod
    def backward(ctx, g):
        (z,) = ctx.saved_tensors
        if not z.is_complex():
            return g * 0
        # d angle = (-y dx + x dy) / |z|^2, i.e. grad * i z / |z|^2; 0 where z == 0, as torch
        sq = z.real.square() + z.imag.square()
        return g * (z * 1j) / (sq + (sq == 0))


def angle(x: Tensor) -> Tensor:
    """The argument of each element (for reals: pi for negative numbers, else 0)."""
    if x._data.dtype.kind not in "fc" and not x.dtype.is_floating_point:
        x = x.to(_dtype.get_default_dtype())
    return Angle.apply(x)


class Sgn(Op):
    """``z / |z|`` (0 at 0) of a complex tensor; real tensors take ``sign``'s kernel."""

    node_name = "SgnBackward0"
    saves = (0,)
    saves_output = True
    complex_grad = "own"

    @staticmethod
    def forward(ctx, z):
        r = np.abs(z)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(r == 0, 0, z / r).astype(z.dtype)

    @staticmethod
    def backward(ctx, g):
        z, s = ctx.saved_tensors
        r = z.abs()
        # (g - s Re(g conj(s))) / |z|: the part of g along s is lost, as sgn's length is 1
        return (g - s * (g * s.conj()).real) / (r + (r == 0)) * (r != 0)


class Complex(Op):
    node_name = "ComplexBackward0"
    broadcasts = True
    complex_grad = "own"

    @staticmethod
    def forward(ctx, re, im):
        out = np.empty(np.broadcast_shapes(re.shape, im.shape),
                       np.complex64 if re.dtype == np.float32 else np.complex128)
        out.real = re
        out.imag = im
        return out

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        return (real(g).contiguous() if need[0] else None,
                imag(g).contiguous() if need[1] else None)


def _check_parts(re: Tensor, im: Tensor) -> None:
    if re.dtype not in (_dtype.float32, _dtype.float64) or \
            im.dtype not in (_dtype.float32, _dtype.float64):
        names = [_dtype.TYPE_NAMES[t.dtype].split(".")[1].removesuffix("Tensor")
                 for t in (re, im)]
        raise RuntimeError("Expected both inputs to be Half, Float or Double tensors but got "
                           f"{names[0]} and {names[1]}")
    if re.dtype is not im.dtype:
        names = [_dtype.TYPE_NAMES[t.dtype].split(".")[1].removesuffix("Tensor")
                 for t in (re, im)]
        raise RuntimeError(f"Expected object of scalar type {names[0]} but got scalar type "
                           f"{names[1]} for second argument")
    check_broadcast(re.shape, im.shape)


def complex(real: Tensor, imag: Tensor) -> Tensor:
    """``real + i * imag`` from two float tensors of the same dtype (broadcast)."""
    _check_parts(real, imag)
    return Complex.apply(real, imag)


def polar(abs: Tensor, angle: Tensor) -> Tensor:
    """``abs * (cos(angle) + i sin(angle))``."""
    _check_parts(abs, angle)
    return complex(abs * angle.cos(), abs * angle.sin())


def _complex_method(self: Tensor) -> Tensor:
    return self.to(_dtype.complex64)


def _cdouble_method(self: Tensor) -> Tensor:
    return self.to(_dtype.complex128)


_NAMES = {"conj": conj, "conj_physical": conj_physical, "resolve_conj": resolve_conj,
          "resolve_neg": resolve_conj, "is_conj": is_conj, "is_neg": is_conj,
          "view_as_real": view_as_real, "view_as_complex": view_as_complex, "angle": angle}
METHODS = dict(_NAMES, real=property(real, _set_part(real)),
               imag=property(imag, _set_part(imag)),
               cfloat=_complex_method, cdouble=_cdouble_method)
FUNCTIONS = dict(_NAMES, real=real, imag=imag, complex=complex, polar=polar)
