"""Top-level and Tensor-method spellings of ``ember.linalg`` functions, legacy forms included
(``torch.svd``, ``torch.qr``, ``torch.cholesky``, ``Tensor.inverse``, ...), and cross products.
"""

from __future__ import annotations

import numpy as np

from ember import return_types
from ember._tensor import Tensor, _wrap_dim
from ember._warn import warn_user
from ember.autograd.function import Op


def _linalg():
    import ember.linalg

    return ember.linalg


def _deprecated(msg: str) -> None:
    """Warn at the user's line (``torch.qr`` reaches here through the out= wrapper,
    ``Tensor.qr`` directly)."""
    warn_user(msg)


def inverse(A: Tensor) -> Tensor:
    return _linalg().inv(A)


def det(A: Tensor) -> Tensor:
    return _linalg().det(A)


def logdet(A: Tensor) -> Tensor:
    return _linalg().logdet(A)


def slogdet(A: Tensor):
    """``(sign, logabsdet)`` as a ``slogdet`` named tuple (``linalg.slogdet`` names it apart)."""
    return return_types.slogdet(*_linalg().slogdet(A))


def matrix_power(A: Tensor, n: int) -> Tensor:
    return _linalg().matrix_power(A, n)


def svd(A: Tensor, some: bool = True, compute_uv: bool = True):
    """Legacy ``(U, S, V)`` (V, not V^H); ``some=False`` gives full U and V."""
    r = _linalg().svd(A, full_matrices=not some)
    if not compute_uv:
        from ember._creation import zeros

        m, n = A.shape[-2:]
        return return_types.svd(zeros(*A.shape[:-2], m, m, dtype=A.dtype), r.S.detach(),
                                zeros(*A.shape[:-2], n, n, dtype=A.dtype))
    return return_types.svd(r.U, r.S, r.Vh.mT)


def qr(A: Tensor, some: bool = True):
    """Legacy ``torch.qr``: ``some`` picks reduced or complete mode."""
    _deprecated("torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a "
                "future PyTorch release.\nThe boolean parameter 'some' has been replaced with a "
                "string parameter 'mode'.\nQ, R = torch.qr(A, some)\nshould be replaced with\n"
                "Q, R = torch.linalg.qr(A, 'reduced' if some else 'complete')")
    return return_types.qr(*_linalg().qr(A, "reduced" if some else "complete"))


def cholesky(A: Tensor, upper: bool = False) -> Tensor:
    """Legacy ``torch.cholesky`` (CholeskyBackward0 in torch; here linalg's node)."""
    _deprecated("torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be "
                "removed in a future PyTorch release.")
    return _linalg().cholesky(A, upper=upper)


class LinalgCross(Op):
    node_name = "LinalgCrossBackward0"
    saves = (0, 1)
    save_for = ((1,), (0,))  # each for the other's gradient
    broadcasts = True

    @staticmethod
    def forward(ctx, a, b, dim=-1):
        ctx.dim = dim
        return np.cross(a, b, axis=dim)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        ga = LinalgCross.apply(b, g, dim=ctx.dim) if need[0] else None
        gb = LinalgCross.apply(g, a, dim=ctx.dim) if need[1] else None
        return ga, gb


def linalg_cross(a: Tensor, b: Tensor, *, dim: int = -1) -> Tensor:
    """Cross product of 3-vectors along ``dim`` (other dims broadcast)."""
    if a.ndim != b.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    d = _wrap_dim(dim, a.ndim)
    if a.shape[d] != 3 or b.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{a.shape[d]} and {b.shape[d]}")
    from ember.ops._promote import binary_args

    a, b = binary_args(a, b)
    return LinalgCross.apply(a, b, dim=d)


def cross(a: Tensor, b: Tensor, dim: int | None = None) -> Tensor:
    """torch.cross: without ``dim``, the first dim of size 3 (with torch's warning)."""
    if dim is None:
        warn_user("Using torch.cross without specifying the dim arg is deprecated.\nPlease "
                  "either pass the dim explicitly or simply use torch.linalg.cross.\nThe "
                  "default value of dim will change to agree with that of linalg.cross in a "
                  "future release.")
        dim = next((i for i, s in enumerate(a.shape) if s == 3), -1)
    return linalg_cross(a, b, dim=dim)


_SHARED = {
    "inverse": inverse, "det": det, "logdet": logdet, "slogdet": slogdet,
    "matrix_power": matrix_power, "svd": svd, "qr": qr, "cholesky": cholesky, "cross": cross,
}
METHODS = dict(_SHARED)
FUNCTIONS = dict(_SHARED)
