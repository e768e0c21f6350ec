"""Two small torch.func helpers: ``debug_unwrap`` and ``replace_all_batch_norm_modules_``."""

from __future__ import annotations


def debug_unwrap(tensor, *, recurse: bool = True):
    """The tensor under a vmap BatchedTensor (the batch at dim 0; with ``recurse``, under
    every level); any other tensor is returned as itself (``grad`` uses no wrappers). For
    debugging: ops on the result inside the transform leave the transform."""
    from ember._tensor import Tensor
    from ember.func._batched import BatchedTensor

    if not isinstance(tensor, Tensor):
        raise TypeError("is_functorch_wrapped_tensor(): incompatible function arguments. The "
                        "following argument types are supported:\n    1. (arg0: torch.Tensor) "
                        f"-> bool\n\nInvoked with: {tensor!r}")
    while type(tensor) is BatchedTensor:
        tensor = tensor._value
        if not recurse:
            break
    return tensor


def replace_all_batch_norm_modules_(root):
    """Every BatchNorm module in ``root`` (``root`` too) stops tracking running statistics:
    ``running_mean``, ``running_var`` and ``num_batches_tracked`` become None, so the module
    normalises with the batch's statistics in eval mode too (what vmap over a model needs).
    Returns ``root``, changed in place."""
    from ember.nn.modules.batchnorm import _BatchNorm
    from ember.nn.modules.instancenorm import _InstanceNorm

    for m in root.modules():
        # ember's InstanceNorm derives from _BatchNorm; torch's does not, and keeps its stats
        if isinstance(m, _BatchNorm) and not isinstance(m, _InstanceNorm) \
                and m.track_running_stats:
            m.running_mean = m.running_var = m.num_batches_tracked = None
            m.track_running_stats = False
    return root
