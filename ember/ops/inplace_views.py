"""In-place view ops: ``t_``, ``transpose_``, ``swapaxes_``, ``swapdims_``, ``squeeze_``,
``unsqueeze_``. They change the tensor's own shape and strides over the same memory.

Under autograd the tensor's history moves onto the view op's node, recorded under torch's
name for the in-place form (``TBackward1``, ``SqueezeBackward3``, ...), and its version counter
is bumped, as torch does. A leaf that requires grad refuses, as for any in-place op.
"""

from __future__ import annotations

from ember._tensor import Tensor
from ember.ops.inplace import check_inplace
from ember.ops.view_copies import rename_node

# The out-of-place node name of each view and the number torch adds for its in-place form.
_SHIFT = {"TBackward": 1, "TransposeBackward": 1, "UnsqueezeBackward": 1, "SqueezeBackward": 3}


def _inplace_view(view_name: str):
    def method(self: Tensor, *args, **kwargs) -> Tensor:
        check_inplace(self)
        src = Tensor._make(self._data, self._grad_fn, self._output_nr)
        src._rg = self._rg
        r = getattr(Tensor, view_name)(src, *args, **kwargs)
        self._data = r._data
        if r._grad_fn is not None:
            base, _, n = type(r._grad_fn).__name__.rpartition("Backward")
            rename_node(r, f"{base}Backward{int(n) + _SHIFT[base + 'Backward']}")
            self._grad_fn, self._output_nr, self._rg = r._grad_fn, r._output_nr, True
        self._vc[0] += 1
        if self._base is not None and self._vv is not None:
            self._vv = self._vc[0]  # the view op's node is its history now: nothing to regenerate
        return self
    method.__name__ = method.__qualname__ = view_name + "_"
    method.__doc__ = f"In-place ``{view_name}``: this tensor's shape and strides change."
    return method


METHODS = {name + "_": _inplace_view(name) for name in (
    "t", "transpose", "swapaxes", "swapdims", "squeeze", "unsqueeze")}
