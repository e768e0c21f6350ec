"""How tensors cross process boundaries (torch's ``torch.multiprocessing.reductions``): a
shared tensor (``share_memory_()``) pickled by multiprocessing's ForkingPickler (queues,
pipes, spawned processes' arguments) is sent as its segment's name, so both processes see the
same values; ``Parameter``s come back as Parameters, with their ``requires_grad``.

Unlike torch, a tensor that is not shared travels by value (a copy): torch moves it to shared
memory on the way, which needs its reference-counted shared-memory manager to know when the
memory may go. The process that shares a tensor must keep it alive while others attach."""

from __future__ import annotations

from multiprocessing.reduction import ForkingPickler

from ember._tensor import Tensor
from ember.multiprocessing import _shared


def rebuild_tensor(name: str, shape: tuple, dtype: str, requires_grad: bool,
                   parameter: bool) -> Tensor:
    t = Tensor._make(_shared.attach(name, shape, dtype))
    if parameter:
        from ember.nn.parameter import Parameter

        return Parameter(t, requires_grad)
    return t.requires_grad_(requires_grad) if requires_grad else t


def reduce_tensor(t: Tensor):
    if t.grad_fn is not None and t.requires_grad:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since "
            "autograd does not support crossing process boundaries.  If you just want to "
            "transfer the data, call detach() on the tensor before serializing (e.g., "
            "putting it on the queue).")
    if not _shared.is_shared(t):
        return t.__reduce_ex__(4)
    from ember.nn.parameter import Parameter

    return rebuild_tensor, (_shared.segment_of(t._data).name, t._data.shape, t._data.dtype.str,
                            t.requires_grad, isinstance(t, Parameter))


def init_reductions() -> None:
    from ember.nn.parameter import Parameter

    ForkingPickler.register(Tensor, reduce_tensor)
    ForkingPickler.register(Parameter, reduce_tensor)
