"""A differential fuzzer: random programs run in ember and in torch, compared.

A program is a few inputs and 3-12 statements drawn from torch's op families (elementwise ops
with broadcasting and scalars, views, in-place ops on views and non-leaf tensors, indexing and
index assignment, reductions, where/clamp/masked ops, cat/stack, matmul), followed by a fixed
footer that takes first- and second-order gradients. ``generate`` draws one deterministically
from a seed, ``compare`` runs it in both libraries and lists the disagreements, ``shrink``
reduces a disagreeing program to a minimal one. ``python -m tests.fuzz --help`` runs batches.
"""

from .compare import Disagreement, compare
from .generate import generate
from .program import Program
from .shrink import shrink

__all__ = ["Disagreement", "Program", "compare", "generate", "shrink"]
