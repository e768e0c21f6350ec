"""Process groups: the default (world) group, ``new_group``, and the queries about them.

Every rank is a process started by an MPI launcher (``ember-run``, ``mpiexec``, ``srun``); MPI
says how many there are and which one this is. ``init_process_group`` checks what the program
asks for against that, initialises MPI with a timeout (``MPI_Init`` waits for all ranks), runs
a rendezvous that names ranks that did not join, and makes the world group. A group owns one
backend (``backends/``): MPI for ``"mpi"`` and ``"gloo"``, NCCL through CuPy for ``"nccl"``.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time
from datetime import timedelta

import numpy as np

from ember.distributed import faults
from ember.distributed.work import DistStoreError

default_pg_timeout = timedelta(minutes=30)
_LAUNCHER_ENV = (  # (rank, size, local rank, local size) as each launcher names them
    ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"),  # MPICH's hydra
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"),  # Open MPI
    ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"),  # srun
)


class Backend(str):
    """torch's ``Backend``: ``Backend("GLOO") == "gloo"``. ``"gloo"`` runs on MPI in ember."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got: "
                             f"{type(name)}")
        value = name.lower()
        if value not in ("gloo", "nccl", "mpi", "undefined"):
            raise ValueError(f"Invalid backend: '{name}'")
        return str.__new__(cls, value)


class ProcessGroup:
    """A set of ranks that run collectives together (torch's ``ProcessGroup``)."""

    def __init__(self, backend, backend_name: str, ranks: list[int], name: str) -> None:
        self._backend, self._backend_name = backend, backend_name
        self._ranks, self._name = ranks, name

    def rank(self) -> int:
        return self._backend.rank

    def size(self) -> int:
        return self._backend.size

    def name(self) -> str:
        return self._backend_name

    @property
    def group_name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"<ProcessGroup {self._name!r} backend={self._backend_name} ranks={self._ranks}>"


class GroupMember:
    """``GroupMember.WORLD`` (the default group once initialised) and ``NON_GROUP_MEMBER``
    (what ``new_group`` returns on ranks outside the group)."""

    WORLD: ProcessGroup | None = None
    NON_GROUP_MEMBER = -100


group = GroupMember  # torch's ``dist.group.WORLD``


_GROUPS: list = []  # every live group, the world first


def env_from_launcher() -> None:
    """Under ``mpiexec``/``srun`` without ``ember-run``, set torchrun's variables from the
    launcher's, so programs that read ``os.environ["LOCAL_RANK"]`` run unchanged."""
    if "RANK" in os.environ:
        return
    for rank, size, local, local_size in _LAUNCHER_ENV:
        if rank in os.environ and size in os.environ:
            os.environ["RANK"], os.environ["WORLD_SIZE"] = os.environ[rank], os.environ[size]
            os.environ.setdefault("LOCAL_RANK", os.environ.get(local, os.environ[rank]))
            os.environ.setdefault("LOCAL_WORLD_SIZE", os.environ.get(local_size,
                                                                     os.environ[size]))
            return


def is_available() -> bool:
    """Whether mpi4py (ember's transport) can be imported."""
    import importlib.util

    return importlib.util.find_spec("mpi4py") is not None


def is_mpi_available() -> bool:
    return is_available()


def is_gloo_available() -> bool:
    return is_available()


def is_nccl_available() -> bool:
    try:
        from ember.distributed.backends.nccl import nccl

        nccl()
    except RuntimeError:
        return False
    return True


def is_initialized() -> bool:
    return GroupMember.WORLD is not None


def is_torchelastic_launched() -> bool:
    return "TORCHELASTIC_RUN_ID" in os.environ


def _world() -> ProcessGroup:
    if GroupMember.WORLD is None:
        raise ValueError("Default process group has not been initialized, please make sure to "
                         "call init_process_group.")
    return GroupMember.WORLD


def _timeout_s(timeout) -> float:
    return (timeout or default_pg_timeout).total_seconds()


def _init_mpi(timeout: float, rank: int):
    """Import mpi4py, which runs MPI_Init: it waits for every rank of the job and holds the GIL
    while it does, so a forked watchdog enforces the timeout (reporting, then killing this
    process, after which the MPI launcher stops the others)."""
    from ember.distributed.backends.mpi import mpi

    if "mpi4py.MPI" in sys.modules:
        return mpi()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the watchdog: only os calls, then _exit
        os.close(write)
        if not select.select([read], [], [], timeout)[0]:
            msg = (f"DistStoreError: Timed out after {timeout:.0f} seconds initializing MPI: not "
                   "every rank of the job called init_process_group")
            os.write(2, f"[rank{rank}]: ember.distributed.{msg}\n".encode())
            faults.record(rank, msg)
            os.kill(os.getppid(), signal.SIGKILL)
        os._exit(0)
    os.close(read)
    try:
        return mpi()
    finally:
        os.close(write)
        os.waitpid(pid, 0)


def _rendezvous(MPI, comm, timeout: float) -> None:
    """Every rank checks in with rank 0, which names the ranks that did not within ``timeout``."""
    rank, size = comm.Get_rank(), comm.Get_size()
    tag = 0x7E3
    one = np.ones(1, np.uint8)
    if rank == 0:
        flags = np.zeros(size, np.uint8)
        reqs = [comm.Irecv(flags[r:r + 1], source=r, tag=tag) for r in range(1, size)]
        _poll(lambda: MPI.Request.Testall(reqs), timeout, lambda: DistStoreError(
            f"Timed out after {timeout:.0f} seconds waiting for clients. {int(flags.sum()) + 1}/"
            f"{size} clients joined: rank(s) {[r for r in range(1, size) if not flags[r]]} did "
            "not call init_process_group"))
        acks = [comm.Isend(one, dest=r, tag=tag) for r in range(1, size)]
        MPI.Request.Waitall(acks)
    else:
        comm.Isend(one, dest=0, tag=tag).Wait()
        ack = comm.Irecv(np.zeros(1, np.uint8), source=0, tag=tag)
        _poll(ack.Test, timeout, lambda: DistStoreError(
            f"Timed out after {timeout:.0f} seconds waiting for rank 0 to see every rank join"))


def _poll(done, timeout: float, error) -> None:
    start = time.monotonic()
    while not done():
        if time.monotonic() - start > timeout:
            raise error()
        time.sleep(0.001)


def _make_backend(name: str, comm, timeout: float):
    if name == "nccl":
        from ember.distributed.backends.nccl import NcclBackend

        return NcclBackend(comm, timeout)
    from ember.distributed.backends.mpi import MpiBackend

    return MpiBackend(comm, timeout)


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: timedelta | None = None, world_size: int = -1, rank: int = -1,
                       store=None, group_name: str = "", pg_options=None,
                       device_id=None) -> None:
    """Join the job's ranks into the default group (torch's signature).

    Ranks and world size come from the MPI launcher; ``rank``/``world_size`` (or the
    ``RANK``/``WORLD_SIZE`` variables) are checked against them. ``init_method`` and ``store``
    are accepted for torch programs; MPI does the rendezvous. Start the job with
    ``ember-run --nproc-per-node N script.py`` or ``mpiexec -n N python script.py``.
    """
    if GroupMember.WORLD is not None:
        raise ValueError("trying to initialize the default process group twice!")
    name = Backend(backend or "gloo")
    env_from_launcher()
    want_size = world_size if world_size != -1 else int(os.environ.get("WORLD_SIZE", "-1"))
    want_rank = rank if rank != -1 else int(os.environ.get("RANK", "-1"))
    seconds = _timeout_s(timeout)
    MPI = _init_mpi(seconds, want_rank if want_rank >= 0 else 0)
    world = MPI.COMM_WORLD
    size, me = world.Get_size(), world.Get_rank()
    if size == 1 and want_size > 1:
        raise RuntimeError(
            f"init_process_group: world_size={want_size}, but this process was not started by "
            "an MPI launcher, and ember's process groups run on MPI. Start the ranks with "
            f"`ember-run --nproc-per-node {want_size} script.py` or "
            f"`mpiexec -n {want_size} python script.py`.")
    if want_size not in (-1, size) or want_rank not in (-1, me):
        raise ValueError(f"init_process_group: asked for rank {want_rank} of {want_size}, but the "
                         f"MPI launcher started this process as rank {me} of {size}")
    _rendezvous(MPI, world, seconds)
    pg = ProcessGroup(_make_backend(name, world, seconds), name, list(range(size)),
                      group_name or "0")
    GroupMember.WORLD = pg
    _GROUPS.append(pg)
    faults.install(me)


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Free a group's communicators; without an argument, every group (and the world)."""
    everything = group is None or group is GroupMember.WORLD
    for pg in list(_GROUPS) if everything else [group]:
        if pg in _GROUPS:
            _GROUPS.remove(pg)
            pg._backend.close()
    if everything:
        GroupMember.WORLD = None
        faults.uninstall()


def new_group(ranks=None, timeout: timedelta | None = None, backend: str | None = None,
              pg_options=None, use_local_synchronization: bool = False, group_desc=None):
    """A group of the given world ranks (every rank must call this, as in torch); ranks
    outside it get ``GroupMember.NON_GROUP_MEMBER``."""
    world = _world()
    size = world.size()
    members = sorted(set(range(size) if ranks is None else ranks))
    for r in members:
        if not 0 <= r < size:
            raise ValueError(f"Invalid rank {r}: the world has ranks 0..{size - 1}")
    comm = world._backend.comm
    sub = comm.Create_group(comm.Get_group().Incl(members)) if world.rank() in members else None
    if sub is None:
        return GroupMember.NON_GROUP_MEMBER
    name = Backend(backend or world.name())
    seconds = _timeout_s(timeout) if timeout is not None else world._backend.timeout
    pg = ProcessGroup(_make_backend(name, sub, seconds), name, members, str(len(_GROUPS)))
    sub.Free()  # the backend holds its own duplicates
    _GROUPS.append(pg)
    return pg


def resolve(group: ProcessGroup | None) -> ProcessGroup | None:
    """The group a collective runs on (the world for None), or None on a non-member."""
    world = _world()
    if group is None or group is GroupMember.WORLD:
        return world
    if group is GroupMember.NON_GROUP_MEMBER:
        return None
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup, got {type(group).__name__}")
    if group not in _GROUPS:
        raise ValueError("Invalid process group specified (it was destroyed)")
    return group


def get_rank(group: ProcessGroup | None = None) -> int:
    pg = resolve(group)
    return -1 if pg is None else pg.rank()


def get_world_size(group: ProcessGroup | None = None) -> int:
    pg = resolve(group)
    return -1 if pg is None else pg.size()


def get_backend(group: ProcessGroup | None = None) -> str:
    pg = resolve(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return pg.name()


def get_process_group_ranks(group: ProcessGroup | None) -> list[int]:
    return list(resolve(group)._ranks)


def get_global_rank(group: ProcessGroup, group_rank: int) -> int:
    ranks = resolve(group)._ranks
    if not 0 <= group_rank < len(ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {group}")
    return ranks[group_rank]


def get_group_rank(group: ProcessGroup, global_rank: int) -> int:
    ranks = resolve(group)._ranks
    if global_rank not in ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return ranks.index(global_rank)
