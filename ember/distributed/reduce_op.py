"""``ReduceOp``: how a reducing collective combines the ranks' tensors."""

from __future__ import annotations

import enum


class RedOpType(enum.IntEnum):
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8
    UNUSED = 9


class ReduceOp:
    """torch's ``ReduceOp``: ``ReduceOp.SUM`` is ``<RedOpType.SUM: 0>``.

    AVG works on every backend in ember (torch's gloo refuses it): a SUM, then a division by
    the group's size.
    """

    RedOpType = RedOpType
    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR
    PREMUL_SUM = RedOpType.PREMUL_SUM
    UNUSED = RedOpType.UNUSED


def as_red_op(op) -> RedOpType:
    """``op`` as a ``RedOpType``, or torch's error for anything else."""
    if isinstance(op, RedOpType):
        if op > RedOpType.BXOR:  # PREMUL_SUM, UNUSED
            raise ValueError(f"ReduceOp.{op.name} is not supported by ember's backends")
        return op
    raise TypeError(f"Invalid function argument: expected a ReduceOp, got {type(op).__name__}")
