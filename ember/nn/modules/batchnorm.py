"""BatchNorm1d / 2d / 3d: per-channel normalization with running statistics."""

from __future__ import annotations

from ember import _creation, _dtype
from ember._tensor import Tensor
from ember.nn import init
from ember.nn._functional.normalization import batch_norm
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter


class _BatchNorm(Module):
    _ndims: tuple = ()  # the input ranks a subclass accepts

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device=None, dtype=None,
                 *, bias: bool = True) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(_creation.empty(num_features, dtype=dtype))
            if bias:
                self.bias = Parameter(_creation.empty(num_features, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", _creation.zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", _creation.ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked",
                                 _creation.tensor(0, dtype=_dtype.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean._data[...] = 0
            self.running_var._data[...] = 1
            self.num_batches_tracked._data[...] = 0

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim not in self._ndims:
            raise ValueError(f"expected {' or '.join(f'{n}D' for n in self._ndims)} input "
                             f"(got {input.ndim}D input)")

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked._data += 1
            self.num_batches_tracked._vc[0] += 1
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked._data)
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        use_running = not self.training or self.track_running_stats
        return batch_norm(input, self.running_mean if use_running else None,
                          self.running_var if use_running else None, self.weight, self.bias,
                          bn_training, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch norm over (N, C) or (N, C, L) input."""

    _ndims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch norm over (N, C, H, W) input."""

    _ndims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch norm over (N, C, D, H, W) input."""

    _ndims = (5,)





class SyncBatchNorm(_BatchNorm):
    """Batch norm whose training statistics span every rank of ``process_group`` (torch's
    ``nn.SyncBatchNorm``; over MPI, so CPU tensors work too). Outside a multi-rank process
    group it is plain batch norm."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, process_group=None,
                 device=None, dtype=None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")

    def forward(self, input: Tensor) -> Tensor:
        from ember import distributed as dist
        from ember.nn.modules._functions import SyncBatchNorm as _SyncFn

        self._check_input_dim(input)
        if input.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        group = self.process_group
        size = dist.get_world_size(group) if dist.is_initialized() else 1
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        if not (bn_training and self.training and size > 1):
            return super().forward(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked._data += 1
            self.num_batches_tracked._vc[0] += 1
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked._data)
        running = self.track_running_stats
        return _SyncFn.apply(input, self.weight, self.bias,
                             self.running_mean if running else None,
                             self.running_var if running else None, self.eps, factor, group,
                             size)

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group=None) -> Module:
        """``module`` with every BatchNorm*D replaced by a SyncBatchNorm sharing its parameters
        and buffers (torch's ``convert_sync_batchnorm``)."""
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine,
                      module.track_running_stats, process_group)
            if module.affine:
                out.weight, out.bias = module.weight, module.bias
            out.running_mean, out.running_var = module.running_mean, module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
            if hasattr(module, "qconfig"):
                out.qconfig = module.qconfig
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out
__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"]
