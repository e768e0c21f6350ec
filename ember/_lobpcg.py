"""``torch.lobpcg``: the k largest (or smallest) eigenpairs of the symmetric generalized
eigenproblem ``A X = B X E`` by LOBPCG (the iteration is in ``_lobpcg_solver.py``), with
torch's defaults, argument checks and tracker, and a gradient for A (B = I) from the
first-order perturbation of each eigenpair.
"""

from __future__ import annotations

import math

from ember._lobpcg_solver import Options, lobpcg_arrays
from ember._lowrank import _floating
from ember._tensor import Tensor
from ember.autograd.function import Function
from ember.autograd.grad_mode import is_grad_enabled


class LOBPCG:
    """What a ``tracker`` sees after each step: the parameters (``iparams``, ``fparams``,
    ``bparams``), the iteration variables (``ivars``: ``istep``, ``converged_count``;
    ``bvars``: ``force_stop``, which a tracker may set; ``tvars``: ``rerr``), the inputs
    ``A``, ``B``, ``iK`` and the current ``E``, ``X``, residual ``R`` and basis ``S``."""

    def __init__(self, A, B, iK, iparams: dict, fparams: dict, bparams: dict) -> None:
        self.A, self.B, self.iK = A, B, iK
        self.iparams, self.fparams, self.bparams = iparams, fparams, bparams
        self.ivars = {"istep": 0, "converged_count": 0}
        self.bvars = {"force_stop": False}
        self.fvars: dict = {}
        self.tvars: dict = {}
        self.E = self.X = self.R = self.S = None


def _reporter(state: LOBPCG, tracker, k: int, tol: float):
    """The solver's per-step callback: updates ``state`` and calls the user's tracker."""
    def report(step, e, x, r, rerr, s) -> bool:
        done = (rerr[..., :k] < tol).sum(axis=-1)
        state.ivars.update(istep=step, converged_count=int(done.min()) if done.size else 0)
        state.E, state.X, state.R = Tensor._make(e), Tensor._make(x), Tensor._make(r)
        state.S = None if s is None else Tensor._make(s)
        state.tvars["rerr"] = Tensor._make(rerr)
        tracker(state)
        return bool(state.bvars["force_stop"])
    return report


def _solve(A: Tensor, B, X: Tensor, iK, k: int, opts: Options, state) -> tuple:
    a, b, ik, x = (None if t is None else t._data for t in (A, B, iK, X))
    e, x = lobpcg_arrays(a, b, ik, x, k, opts, state)
    return Tensor._make(e), Tensor._make(x)


class LOBPCGAutogradFunction(Function):
    """LOBPCG as one node of the graph, with the eigenpairs' backward formula."""

    @staticmethod
    def forward(ctx, A, B, X, iK, k, opts, report):
        ctx.has_b = B is not None
        ctx.set_materialize_grads(False)
        E, X = _solve(A, B, X, iK, k, opts, report)
        ctx.save_for_backward(A, E, X)
        return E, X

    @staticmethod
    def backward(ctx, gE, gX):
        if ctx.has_b:
            raise ValueError("lobpcg.backward does not support backward with B != I yet.")
        A, E, X = ctx.saved_tensors
        return eigenpairs_backward(A, E, X, gE, gX), None, None, None, None, None, None


def eigenpairs_backward(A: Tensor, E: Tensor, X: Tensor, gE, gX):
    """The gradient for the symmetric A from those of ``k`` of its eigenpairs (``E``,
    orthonormal ``X``): with ``dE_i = x_i^T dA x_i`` and ``dx_i = -(A - E_i)^+ dA x_i``,
    ``gA = X diag(gE) X^T - sum_i (A - E_i)^+ gx_i x_i^T``. The pseudo-inverse acts on span(X)
    through the eigenvalue gaps and on its complement through a solve with
    ``Q (A - E_i) Q + X X^T`` (``Q = I - X X^T``), which is the identity on span(X)."""
    import ember

    k = E.shape[-1]
    eye = ember.eye(k, dtype=E.dtype, device=E.device)
    inner = 0 if gE is None else gE.unsqueeze(-1) * eye
    if gX is None:
        return X @ inner @ X.mT
    xg = X.mT @ gX
    gap = E.unsqueeze(-2) - E.unsqueeze(-1) + eye  # [j, i] = E_i - E_j (1 on the diagonal)
    inner = inner + xg / gap * (1 - eye)
    xx = X @ X.mT
    q = ember.eye(A.shape[-1], dtype=A.dtype, device=A.device) - xx
    shifted = (q @ A @ q).unsqueeze(-3) - E[..., None, None] * q.unsqueeze(-3) \
        + xx.unsqueeze(-3)
    y = ember.linalg.solve(shifted, (q @ gX).mT.unsqueeze(-1)).squeeze(-1)  # (*, k, m)
    return X @ inner @ X.mT - y.mT @ X.mT


def _params(tol: float, iparams, fparams, bparams) -> tuple[dict, dict, dict]:
    """The "ortho" method's parameters: torch's defaults, updated with the user's."""
    return ({"ortho_i_max": 3, "ortho_j_max": 3, **(iparams or {})},
            {"ortho_tol": tol, "ortho_tol_drop": tol, "ortho_tol_replace": tol,
             **(fparams or {})},
            {"ortho_use_drop": False, **(bparams or {})})


def _check(A: Tensor, B, X, k, n):
    """torch's checks, in its order; returns ``(k, n)``."""
    if A.shape[-2] != A.shape[-1]:
        raise AssertionError(f"A must be square, got shape {A.shape}")
    if B is not None and A.shape != B.shape:
        raise AssertionError(f"A and B must have same shape, got {A.shape} vs {B.shape}")
    if X is None:
        k = 1 if k is None else k
        n = k if n is None else n
    else:
        n = X.shape[-1]
        k = n if k is None else k
    m = A.shape[-1]
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m})"
                         f" is smaller than 3 x the number of requested eigenpairs (={n})")
    if X is not None and X.shape != (*A.shape[:-2], m, n):
        raise AssertionError(f"X shape mismatch: got {X.shape}, expected {(*A.shape[:-2], m, n)}")
    return k, n


def lobpcg(A: Tensor, k: int | None = None, B: Tensor | None = None, X: Tensor | None = None,
           n: int | None = None, iK: Tensor | None = None, niter: int | None = None,
           tol: float | None = None, largest: bool | None = None, method: str | None = None,
           tracker=None, ortho_iparams: dict | None = None, ortho_fparams: dict | None = None,
           ortho_bparams: dict | None = None) -> tuple[Tensor, Tensor]:
    """``(E, X)``: the ``k`` largest (``largest=False``: smallest) eigenvalues ``(*, k)`` and
    B-orthonormal eigenvectors ``(*, m, k)`` of ``A X = B X E`` for symmetric ``A`` and
    symmetric positive-definite ``B`` (default I), by LOBPCG from a block of ``n`` columns
    (``X``, or ``n`` random ones). ``iK`` is a preconditioner (an approximate inverse of A),
    ``niter`` the most steps (default 1000, -1: until converged), ``tol`` the relative residual
    that counts as converged (default sqrt(eps) of the dtype). ``method`` is "ortho" (default:
    B-orthonormal bases, robust) or "basic" (Knyazev's original). Differentiable in ``A``.

        >>> A = ember.diag(ember.arange(1., 31.))
        >>> E, X = ember.lobpcg(A, k=2)  # E ~ tensor([30., 29.])
    """
    import ember

    track = is_grad_enabled() and (A.requires_grad or B is not None and B.requires_grad)
    if A.requires_grad:  # as torch: the gradient for A is then symmetric
        A = (A + A.mT) / 2
    k, n = _check(A, B, X, k, n)
    dtype = _floating(A)
    if X is None:
        X = ember.randn(*A.shape[:-2], A.shape[-1], n, dtype=dtype, device=A.device)
    from ember.ops.linalg import _same_dtype

    _same_dtype(A, X, "mm")
    if B is not None:
        _same_dtype(B, X, "mm")
    if iK is not None:
        if iK.shape != A.shape:
            raise AssertionError(f"A and iK must have same shape, got {A.shape} vs {iK.shape}")
        _same_dtype(iK, X, "mm")
    # torch's error for a zero (or empty) start block
    if math.prod(A.shape[:-2]) and not float(X.detach().norm()):
        raise ZeroDivisionError("0.0 cannot be raised to a negative power")
    if tol is None:  # torch's: float32 and float64 only (KeyError otherwise)
        tol = {ember.float32: 1.2e-07, ember.float64: 2.220446049250313e-16}[dtype] ** 0.5
    ip, fp, bp = _params(tol, ortho_iparams, ortho_fparams, ortho_bparams)
    niter = 1000 if not niter else niter
    largest = True if largest is None else bool(largest)
    opts = Options(niter, tol, largest, method != "basic", ip["ortho_i_max"], ip["ortho_j_max"],
                   fp["ortho_tol"], fp["ortho_tol_drop"], fp["ortho_tol_replace"],
                   bp["ortho_use_drop"])
    report = None
    if tracker is not None:
        m = A.shape[-1]
        state = LOBPCG(A, B, iK, {"m": m, "n": n, "k": k, "niter": niter, **ip},
                       {"tol": tol, **fp}, {"largest": largest, **bp})
        report = _reporter(state, tracker, k, tol)
    if track:
        return LOBPCGAutogradFunction.apply(A, B, X.detach(), iK, k, opts, report)
    return _solve(A, B, X, iK, k, opts, report)
