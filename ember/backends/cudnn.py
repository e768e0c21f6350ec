"""ember.backends.cudnn: no cuDNN. The flags (``benchmark``, ``deterministic``, ...) can be set
as in torch; they change nothing because ember never calls cuDNN."""

from __future__ import annotations

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    return False


def version() -> None:
    return None
