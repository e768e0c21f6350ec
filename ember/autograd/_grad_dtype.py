"""``Tensor.grad_dtype``: the dtype a leaf's ``.grad`` must have (torch 2.13).

By default it is the tensor's dtype. Set to another dtype, the gradients the engine delivers
to the leaf (accumulated into ``.grad``, or returned by ``autograd.grad``) are cast to it; set to
None, ``.grad`` may be assigned any dtype. Readable and settable on leaves only.
"""

from __future__ import annotations

from ember import _dtype

SAME = object()  # the default: the tensor's own dtype

# torch's C++ type names in these messages: TypeMeta's for the gradient, ScalarType's for the
# allowed dtype
_META = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char", "int16": "short int",
         "int32": "int", "int64": "long int", "float16": "c10::Half",
         "bfloat16": "c10::BFloat16", "float32": "float", "float64": "double",
         "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}


def _scalar_name(dt) -> str:
    from ember.ops.pointwise_more import _CNAME

    return _CNAME.get(dt.name, dt.name)


def allowed(t):
    """The dtype ``t.grad`` must have, or None for any."""
    aux = t._aux
    if aux is None or aux.grad_dtype is SAME:
        return t.dtype
    return aux.grad_dtype


def check_assigned(t, value) -> None:
    """torch's error for assigning ``t.grad`` a gradient of another dtype than allowed."""
    want = allowed(t)
    if want is not None and value.dtype is not want:
        raise RuntimeError(
            f"attempting to assign a gradient with dtype '{_META.get(value.dtype.name)}' to a "
            f"tensor with grad_dtype '{_scalar_name(want)}'. The gradient must match the "
            "tensor's grad_dtype (defaults to the tensor's dtype). You can set the tensor's "
            "grad_dtype attribute with a specific dtype, or None to allow any dtype. Set "
            "grad_dtype with caution. Diverging the dtypes of a tensor and its gradient may "
            "break downstream systems that assume they match.")


def cast_incoming(t, g):
    """A gradient arriving at leaf ``t``, in the dtype ``t.grad_dtype`` asks for: by default
    ``t``'s own (torch's engine casts each gradient to its input's dtype, so a float16 branch
    reaching a float32 weight delivers float32), any with ``grad_dtype=None``."""
    aux = t._aux
    want = t.dtype if aux is None or aux.grad_dtype is SAME else aux.grad_dtype
    if want is None or g.dtype is want:
        return g
    return g.to(want)


def _get(self):
    if self._grad_fn is not None:
        raise RuntimeError("grad_dtype can only be accessed on leaf tensors.")
    return allowed(self)


def _set(self, value) -> None:
    if self._grad_fn is not None:
        raise RuntimeError("grad_dtype can only be set on leaf tensors.")
    if value is not None and not isinstance(value, _dtype.dtype):
        raise RuntimeError(f"grad_dtype must be a torch.dtype or None, but got "
                           f"{type(value).__name__}")
    g = self._grad
    if g is not None and value is not None and g.dtype is not value:
        raise RuntimeError(
            f"Cannot set grad_dtype to '{_scalar_name(value)}' because there is already a "
            f"gradient with dtype '{_META.get(g.dtype.name)}'. Please clear the gradient "
            "(.grad = None) before changing grad_dtype, or ensure the new grad_dtype matches "
            "the existing gradient's dtype.")
    self._get_aux().grad_dtype = value


grad_dtype = property(_get, _set, doc="The allowed dtype of ``grad`` for this (leaf) tensor.")
