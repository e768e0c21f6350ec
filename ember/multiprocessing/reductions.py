"""How tensors cross process boundaries (torch's ``torch.multiprocessing.reductions``): a
shared tensor (``share_memory_()``) pickled by multiprocessing's ForkingPickler (queues,
pipes, spawned processes' arguments) is sent as its segment's name, so both processes see the
same values; ``Parameter``s come back as Parameters, with their ``requires_grad``.

Unlike torch, a tensor that is not shared travels by value (a copy): torch moves it to shared
memory on the way, which needs its reference-counted shared-memory manager to know when the
memory may go. The process that shares a tensor must keep it alive while others attach.

In a DataLoader worker every tensor sent (each batch goes to the main process once) travels in
shared memory, as torch's: a batch collated there already lives in a handoff segment, any other
tensor is copied into one; the receiver unlinks the segment's name once it has mapped it. (So
such a batch, sent on from the main process, travels by value: its memory has no name.)"""

from __future__ import annotations

from multiprocessing.reduction import ForkingPickler

import numpy as np

from ember._tensor import Tensor
from ember.multiprocessing import _shared


def rebuild_tensor(name: str, shape: tuple, dtype: str, requires_grad: bool,
                   parameter: bool, handoff: bool = False) -> Tensor:
    arr = _shared.attach(name, shape, dtype)
    if handoff:  # ours alone now: the mapping keeps the memory, nothing keeps the name
        _shared.take_over(arr)
    t = Tensor._make(arr)
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
    arr = t._data
    shared = _shared.by_name(arr)
    handoff = (not shared and _shared.WORKER[0] is not None and isinstance(arr, np.ndarray)
               and arr.dtype.kind in "biufc")
    if handoff:
        arr = _shared.handoff(arr)
    elif not shared:
        return t.__reduce_ex__(4)
    from ember.nn.parameter import Parameter

    return rebuild_tensor, (_shared.segment_of(arr).name, arr.shape, arr.dtype.str,
                            t.requires_grad, isinstance(t, Parameter), handoff)


def init_reductions() -> None:
    from ember.nn.parameter import Parameter

    ForkingPickler.register(Tensor, reduce_tensor)
    ForkingPickler.register(Parameter, reduce_tensor)
