"""``torch._dynamo``'s names that programs use, over ember's compiler: ``reset``,
``explain``, ``config.recompile_limit`` (alias ``cache_size_limit``), ``disable``,
``graph_break``, ``is_compiling``, ``list_backends``, ``OptimizedModule``."""

from __future__ import annotations

from ember._compile import OptimizedModule
from ember.compiler import disable, explain, is_compiling, list_backends, reset
from ember.compiler.traced import ACTIVE, GraphBreak


class _Config:
    """torch._dynamo.config: the recompile limit per compiled function (8, as torch)."""

    recompile_limit = 8

    @property
    def cache_size_limit(self) -> int:
        return self.recompile_limit

    @cache_size_limit.setter
    def cache_size_limit(self, value: int) -> None:
        self.recompile_limit = value


config = _Config()


def graph_break() -> None:
    """Force a graph break: the function being captured runs eagerly."""
    if ACTIVE[0] is not None:
        raise GraphBreak("torch._dynamo.graph_break() was called")


__all__ = ["OptimizedModule", "config", "disable", "explain", "graph_break", "is_compiling",
           "list_backends", "reset"]
