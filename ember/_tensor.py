"""Tensor: a NumPy array plus autograd metadata.

Math methods and operators are attached by the ``ember.ops`` modules (each op family in its own
file); this file holds storage, metadata, conversions and the autograd-facing API.
"""

from __future__ import annotations

import warnings
import weakref
from collections import OrderedDict

import numpy as np

from ember import _dtype
from ember._backend import CPU, CUDA0, check_device, is_array, to_device
from ember._dtype import dtype as _DType
from ember._size import Size
from ember._tensor_casts import TensorCasts
from ember.autograd import _grad_dtype
from ember.autograd.grad_mode import STATE
from ember.compiler.traced import refuse
from ember.utils.hooks import RemovableHandle

__all__ = ["Size", "Tensor"]


class _Aux:
    """Rarely-used per-tensor state, allocated on first use to keep plain tensors light."""

    __slots__ = ("hooks", "post_acc_hooks", "retains_grad", "grad_acc", "name", "tangent",
                 "views", "views_live", "multi_view", "grad_dtype")

    def __init__(self) -> None:
        self.hooks = None
        self.post_acc_hooks = None
        self.retains_grad = False
        self.grad_acc = None
        self.name = None
        self.tangent = None  # forward-mode AD's tangent at the current dual level
        self.views = None  # weakrefs to views made while this tensor did not require grad
        self.views_live = 0
        self.multi_view = False  # a view from split/unbind/chunk, or a view of one
        self.grad_dtype = _grad_dtype.SAME  # Tensor.grad_dtype (ember/autograd/_grad_dtype.py)

    def add_view(self, view) -> None:
        """Remember ``view`` (see ember/ops/view_history.rebase); dead ones are dropped now and
        then, in amortised O(1)."""
        if self.views is None:
            self.views = []
        elif len(self.views) >= 2 * self.views_live + 16:
            self.views[:] = [r for r in self.views if r() is not None]
            self.views_live = len(self.views)
        self.views.append(weakref.ref(view))


# The _aux of a 0-d tensor an op made from a Python number (torch's "wrapped number"): saved
# for backward like any input, but never handed to saved-tensor hooks, as in torch.
WRAPPED_NUMBER = _Aux()

_HOST_COPY = ("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the "
              "tensor to host memory first.")


class Tensor(TensorCasts):
    """A multi-dimensional array that records the operations applied to it for autograd."""

    # _vv: for a view, the version its history was last made at (view_history.sync_view)
    __slots__ = ("_data", "_rg", "_grad_fn", "_grad", "_vc", "_base", "_output_nr", "_aux", "_vv",
                 "__dict__", "__weakref__")

    def __init__(self, *args, dtype=None, device=None, requires_grad: bool = False) -> None:
        # Legacy constructor: Tensor(2, 3) is uninitialised, Tensor([1, 2]) copies data.
        from ember._creation import array_from_data

        dt = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
        if len(args) == 1 and not isinstance(args[0], int | Size):
            arr = array_from_data(args[0], dt)
        else:
            shape = args[0] if len(args) == 1 and isinstance(args[0], Size) else args or (0,)
            arr = np.empty(tuple(shape), dtype=dt.np)
        if device is not None:
            arr = to_device(arr, check_device(device))
        self._init(arr)
        if requires_grad:
            self.requires_grad_(True)

    def _init(self, data, grad_fn=None, output_nr: int = 0) -> None:
        self._data = data
        self._rg = grad_fn is not None
        self._grad_fn = grad_fn
        self._grad = None
        self._vc = [0]
        self._base = None
        self._output_nr = output_nr
        self._aux = None

    @classmethod
    def _make(cls, data, grad_fn=None, output_nr: int = 0) -> Tensor:
        t = object.__new__(Tensor)
        if type(data) is not np.ndarray and not is_array(data):
            if type(data).__name__ == "_Meta":  # a ufunc's result on vmap's BatchedTensors
                from ember.func._batched import wrap

                return wrap(Tensor._make(data._physical), data._level)
            data = np.asarray(data)
        t._data = data
        t._rg = grad_fn is not None
        t._grad_fn = grad_fn
        t._grad = None
        t._vc = [0]
        t._base = None
        t._output_nr = output_nr
        t._aux = None
        return t

    def _set_view_of(self, src: Tensor) -> None:
        """Make this tensor a view of ``src``: same base and version counter, as in torch."""
        base = self._base = src._base if src._base is not None else src
        self._vc = src._vc
        self._vv = src._vc[0]
        if src._aux is not None and src._aux.multi_view:  # torch propagates creation_meta
            self._get_aux().multi_view = True
        if not base._rg and STATE.enabled:  # it must learn if base starts to require grad
            base._get_aux().add_view(self)

    def _sync(self) -> None:
        """Bring a view's history up to date after writes to its memory (torch regenerates a
        view's grad_fn when its version moved; see ember/ops/view_history.py)."""
        if self._base is not None and self._vv != self._vc[0]:
            from ember.ops.view_history import sync_view

            sync_view(self)

    def _alias(self) -> Tensor:
        """A new tensor object over the same storage, with no history."""
        t = Tensor._make(self._data)
        t._set_view_of(self)
        return t

    def _get_aux(self) -> _Aux:
        if self._aux is None or self._aux is WRAPPED_NUMBER:
            self._aux = _Aux()
        return self._aux

    def _hooks_dict(self) -> dict:
        aux = self._get_aux()
        if aux.hooks is None:
            aux.hooks = {0: OrderedDict()}
        return aux.hooks

    # --- metadata ------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return tuple.__new__(Size, self._data.shape)

    def size(self, dim: int | None = None):
        if dim is None:
            return tuple.__new__(Size, self._data.shape)
        return self._data.shape[_wrap_dim(dim, self._data.ndim)]

    @property
    def dtype(self) -> _DType:
        return _dtype._BY_NP[self._data.dtype]

    @property
    def device(self):
        return CPU if isinstance(self._data, np.ndarray) else CUDA0

    @property
    def is_cuda(self) -> bool:
        return not isinstance(self._data, np.ndarray)

    @property
    def is_cpu(self) -> bool:
        return isinstance(self._data, np.ndarray)

    @property
    def layout(self):
        from ember._layout import strided

        return strided

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    ndimension = dim

    def numel(self) -> int:
        return self._data.size

    nelement = numel

    def element_size(self) -> int:
        return self._data.itemsize

    @property
    def itemsize(self) -> int:
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        return self._data.nbytes

    def stride(self, dim: int | None = None):
        if self._data.size:
            st = tuple(s // self._data.itemsize for s in self._data.strides)
        else:  # NumPy's strides of an empty array are arbitrary: torch's contiguous ones
            st, step = [], 1
            for n in reversed(self._data.shape):
                st.insert(0, step)
                step *= max(n, 1)
            st = tuple(st)
        return st if dim is None else st[_wrap_dim(dim, self._data.ndim)]

    def storage_offset(self) -> int:
        base = self._base._data if self._base is not None else None
        if base is None:
            return 0
        off = self._data.__array_interface__["data"][0] - base.__array_interface__["data"][0]
        return off // self._data.itemsize

    def data_ptr(self) -> int:
        return self._data.__array_interface__["data"][0]

    def is_contiguous(self, memory_format=None) -> bool:
        if memory_format is None:
            return self._data.flags.c_contiguous
        from ember._layout import check_format, is_contiguous_as

        check_format(memory_format, "is_contiguous")
        return is_contiguous_as(self._data.shape, self.stride(), memory_format)

    def is_floating_point(self) -> bool:
        return self._data.dtype.kind == "f" or self.dtype.is_floating_point

    def is_complex(self) -> bool:
        return self._data.dtype.kind == "c"

    def is_signed(self) -> bool:
        return self.dtype.is_signed

    def is_inference(self) -> bool:
        return False

    def get_device(self) -> int:
        return -1 if isinstance(self._data, np.ndarray) else 0

    # --- autograd metadata ---------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._rg

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if self._grad_fn is not None:
            raise RuntimeError(_NON_LEAF_RG if value else _NON_LEAF_RG + _NON_LEAF_HINT)
        if value and self.dtype._kind < 2:
            raise RuntimeError("only Tensors of floating point and complex dtype can require "
                               "gradients")
        self._rg = bool(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set ``requires_grad`` in place (leaves only) and return self."""
        if self._grad_fn is not None:
            if not requires_grad:
                raise RuntimeError(_NON_LEAF_RG + _NON_LEAF_HINT)
            return self
        if requires_grad and self.dtype._kind < 2:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self._rg = bool(requires_grad)
        return self

    @property
    def grad_fn(self):
        self._sync()
        return self._grad_fn

    @property
    def is_leaf(self) -> bool:
        self._sync()
        return self._grad_fn is None

    @property
    def output_nr(self) -> int:
        self._sync()
        return self._output_nr

    @property
    def _version(self) -> int:
        return self._vc[0]

    @property
    def grad(self):
        if self._grad_fn is not None and not self.retains_grad and self._grad is None:
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. "
                "Its .grad attribute won't be populated during autograd.backward(). If you "
                "indeed want the .grad field to be populated for a non-leaf Tensor, use "
                ".retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by "
                "mistake, make sure you access the leaf Tensor instead. See "
                "github.com/pytorch/pytorch/pull/30531 for more information. (Triggered "
                "internally at /__w/pytorch/pytorch/build/aten/src/ATen/core/TensorBody.h:493.)",
                UserWarning, stacklevel=2,
            )
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of "
                                f"type {type(value).__name__}")
            _grad_dtype.check_assigned(self, value)
            if value.shape != self.shape:
                raise RuntimeError("assigned grad has data of a different size")
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    grad_dtype = _grad_dtype.grad_dtype

    @property
    def retains_grad(self) -> bool:
        return self._grad_fn is not None and self._aux is not None and self._aux.retains_grad

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor after backward."""
        if not self._rg:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        self._sync()
        if self._grad_fn is None or self.retains_grad:
            return
        self._get_aux().retains_grad = True
        node = self._grad_fn
        if node._retain_hooks is None:
            node._retain_hooks = {}
        node._retain_hooks[self._output_nr] = weakref.ref(self)

    def register_hook(self, hook) -> RemovableHandle:
        """Call ``hook(grad)`` when this tensor's gradient is computed; it may return a new one."""
        if not self._rg:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        self._sync()
        if self._grad_fn is not None:
            return self._grad_fn._add_tensor_hook(self._output_nr, hook)
        return RemovableHandle.add(self._hooks_dict()[0], hook)

    def register_post_accumulate_grad_hook(self, hook) -> RemovableHandle:
        """Call ``hook(tensor)`` after ``.grad`` of this leaf has been updated."""
        if not self._rg:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf "
                               "tensors")
        aux = self._get_aux()
        if aux.post_acc_hooks is None:
            aux.post_acc_hooks = OrderedDict()
        return RemovableHandle.add(aux.post_acc_hooks, hook)

    def backward(self, gradient=None, retain_graph=None, create_graph: bool = False,
                 inputs=None) -> None:
        """Compute gradients of this tensor w.r.t. graph leaves (``ember.autograd.backward``)."""
        from ember.autograd import backward

        backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def detach(self) -> Tensor:
        """A tensor sharing storage (and version counter) with this one, cut from the graph.

        Not a view for autograd, as in torch: writing to it is allowed even when the source
        is a leaf that requires grad.
        """
        t = Tensor._make(self._data)
        t._vc = self._vc
        return t

    def detach_(self) -> Tensor:
        if self._base is not None:  # any view, as in torch, with or without history
            raise RuntimeError(_DETACH_VIEW)
        self._grad_fn = None
        self._rg = False
        return self

    @property
    def data(self) -> Tensor:
        t = Tensor._make(self._data)
        t._base = self._base if self._base is not None else None
        t._vv = None  # not a view for autograd
        return t

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")
        self._data = value._data

    @property
    def name(self):
        return self._aux.name if self._aux is not None else None

    # --- conversions ---------------------------------------------------------------------
    def numpy(self, *, force: bool = False) -> np.ndarray:
        refuse("Tensor.numpy()")
        if self._rg and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        if not isinstance(self._data, np.ndarray):
            if not force:
                raise TypeError(_HOST_COPY)
            return self._data.get()
        if self._data.dtype.kind == "V":  # NumPy has no bfloat16
            raise TypeError("Got unsupported ScalarType BFloat16")
        return self._data

    def __array__(self, dtype=None, copy=None):
        refuse("converting a tensor to a NumPy array")
        if self._rg:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        if not isinstance(self._data, np.ndarray):
            raise TypeError(_HOST_COPY)
        if self._data.dtype.kind == "V":
            raise TypeError("Got unsupported ScalarType BFloat16")
        return self._data if dtype is None else self._data.astype(dtype)

    def item(self):
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted "
                               "to Scalar")
        return self._data.reshape(()).item()

    def tolist(self):
        return self._data.tolist()

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self) -> bool:
        if self._data.size != 1:
            amount = "no values" if self._data.size == 0 else "more than one value"
            raise RuntimeError(f"Boolean value of Tensor with {amount} is ambiguous")
        return bool(self._data.reshape(()))

    def _scalar(self):
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self._data.reshape(()).item()

    def __float__(self) -> float:
        if self._data.dtype.kind == "c":
            raise RuntimeError("value cannot be converted to type double without overflow")
        return float(self._scalar())

    def __int__(self) -> int:
        return int(self._scalar())

    def __index__(self) -> int:
        if self._data.size != 1 or self._data.dtype.kind not in "iub":
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(self.item())

    def __complex__(self) -> complex:
        return complex(self._scalar())

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self, *, tensor_contents=None) -> str:
        from ember._tensor_str import tensor_repr

        refuse("printing a tensor")
        return tensor_repr(self, tensor_contents)

    def __format__(self, spec: str) -> str:
        if self._data.ndim == 0 and type(self) is Tensor:
            return self._data.item().__format__(spec)
        return object.__format__(self, spec)

    def __deepcopy__(self, memo):
        if self._grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                               "support the deepcopy protocol at the moment.  If you were "
                               "attempting to deepcopy a module, this may be because of a "
                               "torch.nn.utils.weight_norm usage, see "
                               "https://github.com/pytorch/pytorch/pull/103001")
        if id(self) in memo:
            return memo[id(self)]
        new = object.__new__(type(self))
        new._init(self._data.copy())
        new._rg = self._rg
        if self._grad is not None:
            new._grad = self._grad.__deepcopy__(memo)
        if hasattr(self, "__dict__"):
            import copy

            new.__dict__.update(copy.deepcopy(self.__dict__, memo))
        memo[id(self)] = new
        return new

    def __reduce_ex__(self, protocol):
        from ember.utils.hooks import warn_if_has_hooks

        warn_if_has_hooks(self)
        return (_rebuild, (self._data, self._rg, type(self), self.__dict__ or None))


# torch's flags for the devices and layouts an ember tensor is never on or in.
for _flag in ("is_ipu", "is_maia", "is_meta", "is_mkldnn", "is_mps", "is_mtia", "is_nested",
              "is_quantized", "is_sparse", "is_sparse_csr", "is_vulkan", "is_xla", "is_xpu"):
    setattr(Tensor, _flag, property(lambda self: False, doc=f"False: ember has no {_flag[3:]}."))
del _flag

_NON_LEAF_RG = "you can only change requires_grad flags of leaf variables."
_NON_LEAF_HINT = (" If you want to use a computed variable in a subgraph that doesn't require "
                  "differentiation use var_no_grad = var.detach().")
_DETACH_VIEW = (
    "Can't detach views in-place. Use detach() instead. If you are using "
    "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as True, "
    "gradients are views of DDP buckets, and hence detach_() cannot be called on these "
    "gradients. To fix this error, please refer to the Optimizer.zero_grad() function in "
    "torch/optim/optimizer.py as the solution."
)


def _rebuild(data, requires_grad, cls, state):
    t = object.__new__(cls)
    t._init(data)
    t._rg = requires_grad
    if state:
        t.__dict__.update(state)
    return t


def _wrap_dim(dim: int, ndim: int) -> int:
    """Normalise a possibly negative dim, with torch's IndexError for out-of-range dims."""
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim % n if ndim else 0
