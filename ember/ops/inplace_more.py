"""The in-place forms torch has and ember's other families lacked (``addmm_``, ``cumsum_``,
``tril_``, ``logit_``, ``i0_``, ...), ``fill_diagonal_``, and ``index_reduce``/``index_reduce_``.

Each in-place form is its out-of-place op written back into the tensor (``apply_inplace``), so
it records the out-of-place node, bumps the version counter and refuses leaves that require
grad, as torch does.
"""

from __future__ import annotations

from ember import _dtype
from ember._tensor import Tensor, _wrap_dim
from ember.ops.inplace import apply_inplace


def _inplace(name: str):
    def method(self: Tensor, *args, **kwargs) -> Tensor:
        return apply_inplace(self, getattr(Tensor, name), *args, **kwargs)
    method.__name__ = method.__qualname__ = name + "_"
    method.__doc__ = f"In-place ``{name}``."
    return method


_OF = ("addmm", "addbmm", "baddbmm", "addmv", "addr", "cumsum", "cumprod", "digamma", "lgamma",
       "polygamma", "mvlgamma", "logit", "sinc", "heaviside", "renorm", "tril", "triu", "i0",
       "gcd", "lcm", "ldexp", "nextafter", "index_reduce")
# The in-place forms that torch also offers as ``torch.<name>_``.
_FUNCTIONS = ("addmv", "i0", "gcd", "lcm", "ldexp", "logit", "sinc")


def fill_diagonal_(self: Tensor, fill_value, wrap: bool = False) -> Tensor:
    """Write ``fill_value`` on the main diagonal (all dims equal, or 2-D); ``wrap`` restarts
    the diagonal below a tall matrix's square part every ``width + 1`` rows, as torch."""
    nd = self.ndim
    if nd < 2:
        raise RuntimeError("dimensions must larger than 1")
    h, w = self.shape[0], self.shape[1]
    if nd > 2 and any(s != h for s in self.shape):
        raise RuntimeError("all dimensions of input must be of equal length")
    if nd == 2 and wrap and h > w + 1 and self._data.flags.c_contiguous:
        # torch's wrapped diagonal is every (w + 1)-th element of the flat storage.
        self.view(-1)[::w + 1].fill_(fill_value)
        return self
    if nd == 2:
        self.diagonal().fill_(fill_value)
        return self
    if self._data.flags.c_contiguous:
        self.view(-1)[::sum(self.stride())].fill_(fill_value)
        return self
    from ember._creation import arange

    idx = arange(h)
    self[(idx,) * nd] = fill_value
    return self


_REDUCES = ("prod", "mean", "amax", "amin")
_WARNED = []


def index_reduce(self: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                 include_self: bool = True) -> Tensor:
    """Reduce the slices of ``source`` into the slices of ``self`` that ``index`` names along
    ``dim`` (prod, mean, amax or amin): ``scatter_reduce`` with ``index`` spread along ``dim``,
    recorded as torch's IndexReduceBackward0."""
    from ember.ops.introspection import warn_once
    from ember.ops.view_copies import rename_node

    warn_once(_WARNED, "index_reduce() is in beta and the API may change at any time.")
    if reduce not in _REDUCES:
        raise RuntimeError("index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    from ember.ops.pointwise_more import _CNAME

    if index.dtype not in (_dtype.int32, _dtype.int64):
        raise RuntimeError("index_reduce_(): Expected dtype int32/int64 for index but got: "
                           f"{_CNAME[index.dtype.name]}")
    if self.dtype is not source.dtype:
        raise RuntimeError(f"index_reduce_(): self ({_CNAME[self.dtype.name]}) and source "
                           f"({_CNAME[source.dtype.name]}) must have the same scalar type")
    d = _wrap_dim(dim, max(self.ndim, 1))
    src_len = source.shape[d] if source.ndim else 1
    if index.numel() != src_len:
        raise RuntimeError(f"index_reduce_(): Number of indices ({index.numel()}) should be equal "
                           f"to source.size(dim): ({src_len}), for dim: {d}")
    if index.numel() and (int(index.min()) < -self.shape[d] or
                          int(index.max()) >= self.shape[d]):
        raise IndexError("index out of range in self")
    shape = [1] * source.ndim
    shape[d] = -1
    spread = index.long().remainder(self.shape[d]).reshape(shape).expand(source.shape)
    out = self.scatter_reduce(d, spread, source, reduce, include_self=include_self)
    rename_node(out, "IndexReduceBackward0")
    return out


def polygamma_(self: Tensor, n: int) -> Tensor:
    """In-place ``polygamma`` (torch records it as its own node, PolygammaBackward1)."""
    from ember.ops.view_copies import rename_node

    out = apply_inplace(self, Tensor.polygamma, n)
    if type(out.grad_fn).__name__ == "PolygammaBackward0":  # not a view's CopySlices
        rename_node(out, "PolygammaBackward1")
    return out


METHODS = {name + "_": _inplace(name) for name in _OF}
METHODS["polygamma_"] = polygamma_
METHODS.update({"fill_diagonal_": fill_diagonal_, "index_reduce": index_reduce})
FUNCTIONS = {name + "_": METHODS[name + "_"] for name in _FUNCTIONS}
FUNCTIONS["index_reduce"] = index_reduce
