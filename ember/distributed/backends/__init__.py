"""Transports under ember's process groups: MPI (CPU tensors; also what ``"gloo"`` names) and
NCCL through CuPy (CUDA tensors). Each takes contiguous arrays and returns ``Work`` objects."""
