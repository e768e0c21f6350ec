"""ember.distributed: torch.distributed on MPI (and NCCL through CuPy for CUDA tensors).

How data flows: a program calls a collective (``all_reduce(t)``, ``collectives.py``) on a
process group (``process_group.py``: the world, or one from ``new_group``). The group's backend
(``backends/mpi.py``; ``backends/nccl.py`` for CUDA tensors) checks that every rank is calling
the same collective on matching tensors, then makes the MPI (or NCCL) call on the tensor's
array, in place. The call is wrapped in a ``Work`` (``work.py``): ``async_op=True`` returns it,
otherwise it is waited on, with the group's timeout. Objects travel pickled over the same
collectives (``object_collectives.py``). Ranks are processes that ``python -m
ember.distributed.run`` (``run.py``, torchrun's command line) or any MPI launcher starts; a
rank that raises takes the job down (``faults.py``). ``"gloo"`` names the MPI backend.
"""

from ember.distributed.collectives import (
    all_gather,
    all_gather_into_tensor,
    all_reduce,
    all_to_all,
    all_to_all_single,
    barrier,
    broadcast,
    gather,
    irecv,
    isend,
    recv,
    reduce,
    reduce_scatter,
    reduce_scatter_tensor,
    scatter,
    send,
)
from ember.distributed.object_collectives import (
    all_gather_object,
    broadcast_object_list,
    gather_object,
    scatter_object_list,
)
from ember.distributed.process_group import (
    Backend,
    GroupMember,
    ProcessGroup,
    default_pg_timeout,
    destroy_process_group,
    get_backend,
    get_global_rank,
    get_group_rank,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    is_available,
    is_gloo_available,
    is_initialized,
    is_mpi_available,
    is_nccl_available,
    is_torchelastic_launched,
    new_group,
)
from ember.distributed.reduce_op import ReduceOp
from ember.distributed.work import DistBackendError, DistError, DistStoreError, Work

__all__ = [
    "Backend", "DistBackendError", "DistError", "DistStoreError", "GroupMember", "ProcessGroup",
    "ReduceOp", "Work", "all_gather", "all_gather_into_tensor", "all_gather_object",
    "all_reduce", "all_to_all", "all_to_all_single", "barrier", "broadcast",
    "broadcast_object_list", "default_pg_timeout", "destroy_process_group", "gather",
    "gather_object", "get_backend", "get_global_rank", "get_group_rank",
    "get_process_group_ranks", "get_rank", "get_world_size", "group", "init_process_group",
    "irecv", "is_available", "is_gloo_available", "is_initialized", "is_mpi_available",
    "is_nccl_available", "is_torchelastic_launched", "isend", "new_group", "recv", "reduce",
    "reduce_scatter", "reduce_scatter_tensor", "scatter", "scatter_object_list", "send",
]
