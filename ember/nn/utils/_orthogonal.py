"""The orthogonal parametrization's module and the linear algebra it needs.

``_Orthogonal`` maps an unconstrained matrix onto the orthogonal ones as torch's does: the
matrix exponential or the Cayley transform of a skew-symmetric matrix, or a product of
Householder reflectors; with ``use_trivialization`` the result multiplies a fixed orthogonal
``base`` (set by ``right_inverse``). The matrix exponential is a Function whose backward is
torch's (the exponential of a block matrix), so it differentiates to any order; the Householder
product is composed from differentiable ops.
"""

from __future__ import annotations

from enum import Enum, auto

import numpy as np

import ember
from ember._tensor import Tensor
from ember.autograd.function import Function
from ember.autograd.grad_mode import no_grad
from ember.nn.modules.module import Module

# Higham (2005): Padé [13/13] with scaling and squaring is accurate to double precision for
# matrices whose 1-norm is below theta13 once scaled.
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
           40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def _expm(a: np.ndarray) -> np.ndarray:
    """The matrix exponential of (a batch of) square matrices, computed in float64."""
    a64 = a.astype(np.float64)
    if a64.size == 0:
        return a64.astype(a.dtype)
    norm = np.abs(a64).sum(axis=-2).max()
    s = max(0, int(np.ceil(np.log2(norm / _THETA13)))) if norm > _THETA13 else 0
    a64 = a64 / 2.0 ** s
    b = _PADE13
    eye = np.broadcast_to(np.eye(a.shape[-1]), a64.shape)
    a2 = a64 @ a64
    a4 = a2 @ a2
    a6 = a4 @ a2
    u = a64 @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2)
               + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * eye)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 \
        + b[0] * eye
    r = np.linalg.solve(v - u, v + u)
    for _ in range(s):
        r = r @ r
    return r.astype(a.dtype)


class _MatrixExp(Function):
    """torch.linalg.matrix_exp; backward is torch's: the upper-right block of
    ``exp([[A^H, G], [0, A^H]])``."""

    node_name = "LinalgMatrixExpBackward0"

    @staticmethod
    def forward(ctx, a: Tensor) -> Tensor:
        ctx.save_for_backward(a)
        return Tensor._make(_expm(a._data))

    @staticmethod
    def backward(ctx, grad: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        n = a.shape[-1]
        ah = a.mH
        top = ember.cat([ah, grad], -1)
        bottom = ember.cat([ember.zeros_like(a), ah], -1)
        big = _MatrixExp.apply(ember.cat([top, bottom], -2))
        return big[..., :n, n:]


def _householder_product(a: Tensor, tau: Tensor) -> Tensor:
    """torch.linalg.householder_product: the first columns of ``H_1 ... H_k``, where
    ``H_i = I - tau_i v_i v_i^H`` and ``v_i`` is column i of ``a`` below the diagonal with a
    unit diagonal entry."""
    m, n = a.shape[-2], a.shape[-1]
    eye = np.eye(m, dtype=a._data.dtype)
    q = ember.from_numpy(np.broadcast_to(eye, (*a.shape[:-2], m, m)).copy())
    rows = np.arange(m)
    for i in range(tau.shape[-1]):
        below = ember.from_numpy((rows > i).astype(a._data.dtype))
        v = (a[..., :, i] * below + ember.from_numpy(eye[i])).unsqueeze(-1)
        q = q - (q @ v) @ (v.mH * tau[..., i, None, None])
    return q[..., :, :n]


def _make_orthogonal(a: np.ndarray) -> np.ndarray:
    """The Q of a's QR decomposition with R's diagonal made positive (torch's geqrf +
    householder_product, then the sign flip)."""
    q, r = np.linalg.qr(a)
    return q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]


def _is_orthogonal(q: np.ndarray) -> bool:
    n, k = q.shape[-2], q.shape[-1]
    eps = 10.0 * n * np.finfo(q.dtype).eps
    return bool(np.allclose(np.swapaxes(q, -1, -2) @ q, np.eye(k), atol=eps, rtol=1e-5))


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    def __init__(self, weight: Tensor, orthogonal_map: _OrthMaps, *,
                 use_trivialization: bool = True) -> None:
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:  # noqa: N803 - torch's name
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                X = ember.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = _MatrixExp.apply(A)
            else:
                eye = ember.eye(n, dtype=A.dtype)
                Q = ember.linalg.solve(eye - 0.5 * A, eye + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _householder_product(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        return Q.mT if transposed else Q

    def right_inverse(self, Q: Tensor) -> Tensor:  # noqa: N803 - torch's name
        if Q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {Q.shape}.")
        with no_grad():
            return self._right_inverse(Q)

    def _right_inverse(self, Q: Tensor) -> Tensor:  # noqa: N803 - torch's name
        q_init = Q
        n, k = Q.size(-2), Q.size(-1)
        transpose = n < k
        if transpose:
            Q = Q.mT
            n, k = k, n
        if not hasattr(self, "base"):
            if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                raise NotImplementedError(
                    "It is not possible to assign to the matrix exponential or the Cayley "
                    "parametrizations when use_trivialization=False.")
            h, tau = np.linalg.qr(Q.detach().numpy(), mode="raw")  # LAPACK geqrf, as torch.geqrf
            a = np.swapaxes(h, -1, -2).copy()
            diag = np.sign(np.diagonal(a, axis1=-2, axis2=-1)).copy()
            diag[tau == 0.0] *= -1
            idx = np.arange(k)
            a[..., idx, idx] = diag
            out = ember.from_numpy(a.astype(Q._data.dtype))
            return out.mT if transpose else out
        if n == k:
            q = Q.detach().numpy()
            base = q.copy() if _is_orthogonal(q) else _make_orthogonal(q)
        else:
            noise = ember.randn(*(Q.size()[:-2] + (n, n - k)), dtype=Q.dtype)
            base = _make_orthogonal(ember.cat([Q.detach(), noise], dim=-1).numpy())
        self.base = ember.from_numpy(base.astype(Q._data.dtype))
        neg_id = ember.zeros_like(q_init)
        neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return neg_id
