"""``torch.lobpcg``: the k largest (or smallest) eigenpairs of a symmetric positive-definite
generalized problem ``A X = B X E`` by the Locally Optimal Block Preconditioned Conjugate
Gradient method, ported from torch's ``torch/_lobpcg.py`` (Knyazev's method, with Duersch et
al.'s robust "ortho" update and the "basic" one), dense tensors only. Seeded like torch, it
draws the same starting block; eigenvectors then agree with torch's up to sign.

The gradient (``B`` = I only, as torch) is torch's: the complete eigenspace formula, or for a
partial one the characteristic-polynomial correction on the orthogonal complement.
"""

from __future__ import annotations

import ember
from ember._lowrank import _floating
from ember._tensor import Tensor
from ember.autograd.function import Function


def _mm(A: Tensor | None, B: Tensor) -> Tensor:
    return B if A is None else ember.matmul(A, B)


def _qform(A: Tensor | None, S: Tensor) -> Tensor:
    """``S^T A S`` (``S^T S`` for ``A`` None)."""
    return ember.matmul(S.mT, _mm(A, S))


def _symeig(A: Tensor, largest: bool | None = False) -> tuple[Tensor, Tensor]:
    E, Z = ember.linalg.eigh(A, UPLO="U")
    if largest:
        E, Z = E.flip(-1), Z.flip(-1)
    return E, Z


class LOBPCG:
    """The iteration's state: the block ``X``, its Ritz values ``E``, residuals ``R`` and the
    search basis ``S = [X, P, W]``."""

    def __init__(self, A, B, X, iK, iparams: dict, fparams: dict, bparams: dict,
                 method: str, tracker=None) -> None:
        self.A, self.B, self.iK, self.X, self.method = A, B, iK, X, method
        self.tracker = tracker
        self.iparams, self.fparams, self.bparams = iparams, fparams, bparams
        m, n = iparams["m"], iparams["n"]
        self.E = ember.zeros((n,), dtype=X.dtype)
        self.R = ember.zeros((m, n), dtype=X.dtype)
        self.S = ember.zeros((m, 3 * n), dtype=X.dtype)
        self.tvars: dict = {}
        self.ivars: dict = {"istep": 0}
        self.fvars: dict = {"_": 0.0}
        self.bvars: dict = {"_": False}

    def update(self) -> None:
        if self.ivars["istep"] == 0:
            X_norm = float(ember.norm(self.X))
            self.fvars["X_norm"] = X_norm
            self.fvars["A_norm"] = float(ember.norm(_mm(self.A, self.X))) / X_norm
            self.fvars["B_norm"] = float(ember.norm(_mm(self.B, self.X))) / X_norm
            self.ivars["iterations_left"] = self.iparams["niter"]
            self.ivars["converged_count"] = 0
            self.ivars["converged_end"] = 0
        self._update_ortho() if self.method == "ortho" else self._update_basic()
        self.ivars["iterations_left"] -= 1
        self.ivars["istep"] += 1

    def update_residual(self) -> None:
        self.R = _mm(self.A, self.X) - _mm(self.B, self.X) * self.E

    def update_converged_count(self) -> int:
        """How many leading eigenpairs meet the relative residual tolerance."""
        A_norm, B_norm = self.fvars["A_norm"], self.fvars["B_norm"]
        E, X, R = self.E, self.X, self.R
        rerr = ember.norm(R, 2, (0,)) / (
            ember.norm(X, 2, (0,)) * (A_norm + ember.abs(E[:X.shape[-1]]) * B_norm))
        converged = (rerr < self.fparams["tol"]).tolist()
        count = next((i for i, c in enumerate(converged) if not c), len(converged))
        if count < self.ivars["converged_count"]:
            raise AssertionError(f"the number of converged eigenpairs (was "
                                 f"{self.ivars['converged_count']}, got {count}) cannot "
                                 "decrease")
        self.ivars["converged_count"] = count
        self.tvars["rerr"] = rerr
        return count

    def stop_iteration(self) -> bool:
        return (self.bvars.get("force_stop", False) or self.ivars["iterations_left"] == 0
                or self.ivars["converged_count"] >= self.iparams["k"])

    def run(self) -> None:
        """Iterate until converged or out of iterations; ``tracker(self)`` after each step
        may stop early with ``self.bvars["force_stop"] = True``."""
        self.update()
        if self.tracker is not None:
            self.tracker(self)
        while not self.stop_iteration():
            self.update()
            if self.tracker is not None:
                self.tracker(self)

    def _first_step(self, largest: bool) -> None:
        Ri = self._get_rayleigh_ritz_transform(self.X)
        E, Z = _symeig(_qform(_qform(self.A, self.X), Ri), largest)
        self.X = ember.matmul(self.X, ember.matmul(Ri, Z))
        if self.method != "ortho":
            self.E[:] = E
        self.update_residual()
        self.update_converged_count()
        self.S[:, :self.iparams["n"]] = self.X

    def _update_basic(self) -> None:
        ns, nc = self.ivars["converged_end"], self.ivars["converged_count"]
        n, largest, mm = self.iparams["n"], self.bparams["largest"], ember.matmul
        if self.ivars["istep"] == 0:
            self._first_step(largest)
            W = _mm(self.iK, self.R)
            ns = self.ivars["converged_end"] = n + W.shape[-1]
            self.S[:, n:ns] = W
            return
        S_ = self.S[:, nc:ns]
        Ri = self._get_rayleigh_ritz_transform(S_)
        E_, Z = _symeig(_qform(_qform(self.A, S_), Ri), largest)
        self.X[:, nc:] = mm(S_, mm(Ri, Z[:, :n - nc]))
        self.E[nc:] = E_[:n - nc]
        P = mm(S_, mm(Ri, Z[:, n:2 * n - nc]))
        np_ = P.shape[-1]
        self.update_residual()
        nc = self.update_converged_count()
        self.S[:, :n] = self.X
        self.S[:, n:n + np_] = P
        W = _mm(self.iK, self.R[:, nc:])
        ns = self.ivars["converged_end"] = n + np_ + W.shape[-1]
        self.S[:, n + np_:ns] = W

    def _update_ortho(self) -> None:
        ns, nc = self.ivars["converged_end"], self.ivars["converged_count"]
        n, largest, mm = self.iparams["n"], self.bparams["largest"], ember.matmul
        if self.ivars["istep"] == 0:
            self._first_step(largest)
            W = self._get_ortho(self.R, self.X)
            ns = self.ivars["converged_end"] = n + W.shape[-1]
            self.S[:, n:ns] = W
            return
        S_ = self.S[:, nc:ns]
        E_, Z = _symeig(_qform(self.A, S_), largest)
        self.X[:, nc:] = mm(S_, Z[:, :n - nc])
        self.E[nc:] = E_[:n - nc]
        P = mm(S_, mm(Z[:, n - nc:], ember.linalg.qr(Z[:n - nc, n - nc:].mT).Q))
        np_ = P.shape[-1]
        self.update_residual()
        nc = self.update_converged_count()
        self.S[:, :n] = self.X
        self.S[:, n:n + np_] = P
        W = self._get_ortho(self.R[:, nc:], self.S[:, :n + np_])
        ns = self.ivars["converged_end"] = n + np_ + W.shape[-1]
        self.S[:, n + np_:ns] = W

    def _get_rayleigh_ritz_transform(self, S: Tensor) -> Tensor:
        """``Ri`` with ``Ri^T S^T B S Ri = I`` (upper triangular), via a scaled Cholesky."""
        SBS = _qform(self.B, S)
        d_row = SBS.diagonal(0, -2, -1) ** -0.5
        d_col = d_row.reshape(d_row.shape[0], 1)
        R = ember.linalg.cholesky((SBS * d_row) * d_col, upper=True)
        return ember.linalg.solve_triangular(R, d_row.diag_embed(), upper=True, left=False)

    def _get_svqb(self, U: Tensor, drop: bool, tau: float) -> Tensor:
        """B-orthonormal columns spanning ``U`` (Algorithm 4 of Duersch's thesis)."""
        if U.numel() == 0:
            return U
        UBU = _qform(self.B, U)
        d = UBU.diagonal(0, -2, -1)
        nz = ember.where(d.abs() != 0.0)[0]
        if len(nz) < len(d):
            U = U[:, nz]
            if U.numel() == 0:
                return U
            UBU = _qform(self.B, U)
            d = UBU.diagonal(0, -2, -1)
        d_col = (d ** -0.5).reshape(d.shape[0], 1)
        E, Z = _symeig((UBU * d_col) * d_col.mT)
        t = tau * float(E.abs().max())
        if drop:
            keep = ember.where(E > t)[0]
            E, Z, d_col = E[keep], Z[:, keep], d_col[keep]
        else:
            E = ember.where(E < t, t, E)
        return ember.matmul(U * d_col.mT, Z * E ** -0.5)

    def _get_ortho(self, U: Tensor, V: Tensor) -> Tensor:
        """B-orthonormal columns spanning ``U`` and B-orthogonal to ``V`` (Algorithm 3)."""
        mm, B = ember.matmul, self.B
        tau_ortho, tau_drop = self.fparams["ortho_tol"], self.fparams["ortho_tol_drop"]
        tau_replace = self.fparams["ortho_tol_replace"]
        use_drop = self.bparams["ortho_use_drop"]
        BV_norm = float(ember.norm(_mm(B, V)))
        VBU = mm(V.mT, _mm(B, U))
        for _ in range(self.iparams["ortho_i_max"]):
            U = U - mm(V, VBU)
            drop, tau_svqb = False, tau_drop
            for _ in range(self.iparams["ortho_j_max"]):
                if use_drop:
                    U = self._get_svqb(U, drop, tau_svqb)
                    drop, tau_svqb = True, tau_replace
                else:
                    U = self._get_svqb(U, False, tau_replace)
                if U.numel() == 0:
                    return U
                BU = _mm(B, U)
                UBU = mm(U.mT, BU)
                R = UBU - ember.eye(UBU.shape[-1], dtype=UBU.dtype)
                if float(ember.norm(R)) / float(ember.norm(BU) * ember.norm(U)) < tau_ortho:
                    break
            VBU = mm(V.mT, BU)
            if float(ember.norm(VBU)) / (BV_norm * float(ember.norm(U))) < tau_ortho:
                break
            if self.iparams["m"] < U.shape[-1] + V.shape[-1]:
                if B is None:
                    raise AssertionError("B must not be None")
                raise ValueError(f"Overdetermined shape of U: #B-cols(={B.shape[-1]}) >= "
                                 f"#U-cols(={U.shape[-1]}) + #V-cols(={V.shape[-1]}) must "
                                 "hold")
        return U


def _run(A, k, B, X, n, iK, niter, tol, largest, method, tracker, ortho_iparams,
         ortho_fparams, ortho_bparams) -> tuple[Tensor, Tensor]:
    """torch's ``_lobpcg``: parameters, the starting block, one run per matrix of a batch."""
    if A.shape[-2] != A.shape[-1]:
        raise AssertionError(f"A must be square, got shape {A.shape}")
    if B is not None and A.shape != B.shape:
        raise AssertionError(f"A and B must have same shape, got {A.shape} vs {B.shape}")
    dtype = _floating(A)
    if tol is None:
        tol = {ember.float32: 1.2e-07, ember.float64: 2.23e-16}[dtype] ** 0.5
    m = A.shape[-1]
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if n is None else n) if X is None else X.shape[-1]
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m})"
                         f" is smaller than 3 x the number of requested eigenpairs (={n})")
    method = "ortho" if method is None else method
    iparams = {"m": m, "n": n, "k": k, "niter": 1000 if niter is None else niter}
    fparams = {"tol": tol}
    bparams = {"largest": True if largest is None else largest}
    if method == "ortho":
        iparams.update(ortho_iparams or {})
        fparams.update(ortho_fparams or {})
        bparams.update(ortho_bparams or {})
        iparams.setdefault("ortho_i_max", 3)
        iparams.setdefault("ortho_j_max", 3)
        for key in ("ortho_tol", "ortho_tol_drop", "ortho_tol_replace"):
            fparams.setdefault(key, tol)
        bparams.setdefault("ortho_use_drop", False)
    batch = A.shape[:-2]
    bA = A.reshape((-1,) + A.shape[-2:])
    bB = None if B is None else B.reshape((-1,) + A.shape[-2:])
    bX = None if X is None else X.reshape((-1,) + X.shape[-2:])
    Es, Xs = [], []
    for i in range(bA.shape[0]):
        X_ = ember.randn((m, n), dtype=dtype) if bX is None else bX[i]
        if tuple(X_.shape) != (m, n):
            raise AssertionError(f"X shape mismatch: got {X_.shape}, expected {(m, n)}")
        worker = LOBPCG(bA[i], None if bB is None else bB[i], X_, iK, iparams, fparams,
                        bparams, method, tracker)
        worker.run()
        Es.append(worker.E[:k])
        Xs.append(worker.X[:, :k])
    if not batch:
        return Es[0], Xs[0]
    return (ember.stack(Es).reshape(batch + (k,)).to(dtype),
            ember.stack(Xs).reshape(batch + (m, k)).to(dtype))


def _complete_eigenspace_grad(D_grad, U_grad, A, D, U) -> Tensor:
    F = D.unsqueeze(-2) - D.unsqueeze(-1)
    F = 1 / (F + ember.diag_embed(ember.full_like(D, float("inf"))))  # 0 on the diagonal
    inner = ember.matmul(U.mT, U_grad) * F
    if D_grad is not None:
        inner = inner + ember.diag_embed(D_grad)
    return ember.matmul(U, ember.matmul(inner, U.mT))


def _char_poly(roots: Tensor) -> Tensor:
    """Coefficients (lowest power first) of ``prod (x - root)`` per batch of roots."""
    order = roots.shape[-1]
    c = ember.zeros(roots.shape[:-1] + (order + 2,), dtype=roots.dtype)
    c[..., 0] = 1
    c[..., -1] = 1
    for i in range(1, order + 1):
        new = c.clone()
        new[..., order - i:order + 1] -= roots[..., i - 1:i] * c[..., order - i + 1:order + 2]
        c = new
    return c[..., 1:order + 2]


def _poly_at(poly: Tensor, x: Tensor, zero_power: Tensor, step) -> Tensor:
    res = zero_power.clone()
    for k in range(poly.shape[-1] - 2, -1, -1):
        res = step(res, x, poly[..., k])
    return res


def _partial_eigenspace_grad(D_grad, U_grad, A, D, U, largest) -> Tensor:
    """The gradient through k of m eigenpairs: the complete-space term, corrected on the
    orthogonal complement with the characteristic polynomial of the k eigenvalues."""
    Ut = U.mT
    proj = ember.eye(A.shape[-1], dtype=A.dtype) - U.matmul(Ut)
    U_ortho = proj.matmul(ember.randn(*A.shape[:-1], A.shape[-1] - D.shape[-1],
                                      dtype=A.dtype, generator=ember.Generator()))
    U_ortho_t = U_ortho.mT
    chr_poly = _char_poly(D)
    if U_grad is None:
        U_grad = ember.zeros_like(U)
    projected, acc = U_grad, ember.zeros_like(U_grad)
    for k in range(1, chr_poly.shape[-1]):
        poly_D = _poly_at(chr_poly[..., k:], D, ember.ones_like(D),
                          lambda r, x, c: c.unsqueeze(-1) + x * r)
        acc = acc + projected * poly_D.unsqueeze(-2)
        projected = A.matmul(projected)
    eye = ember.eye(A.shape[-1], dtype=A.dtype)
    at_A = _poly_at(chr_poly, A, eye, lambda r, x, c: x.matmul(r) + c.unsqueeze(-1) * eye)
    sign = -1 if (largest and k % 2 == 1) else 1
    L = ember.linalg.cholesky(sign * ember.matmul(U_ortho_t, ember.matmul(at_A, U_ortho)))
    res = _complete_eigenspace_grad(D_grad, U_grad, A, D, U)
    return res - U_ortho.matmul(sign * ember.cholesky_solve(U_ortho_t.matmul(acc), L)).matmul(Ut)


class LOBPCGAutogradFunction(Function):
    """torch's autograd wrapper: the eigenpairs of the symmetrized ``A`` (``B`` = I)."""

    @staticmethod
    def forward(ctx, A, k, B, X, n, iK, niter, tol, largest, method, tracker, ortho_iparams,
                ortho_fparams, ortho_bparams):
        D, U = _run(A.contiguous(), k, B, X, n, iK, niter, tol, largest, method, tracker,
                    ortho_iparams, ortho_fparams, ortho_bparams)
        ctx.save_for_backward(A, B, D, U)
        ctx.largest = largest
        return D, U

    @staticmethod
    def backward(ctx, D_grad, U_grad):
        A, B, D, U = ctx.saved_tensors
        if B is not None:
            raise ValueError("lobpcg.backward does not support backward with B != I yet.")
        largest = True if ctx.largest is None else ctx.largest
        if U.shape[-1] == U.shape[-2]:
            A_grad = _complete_eigenspace_grad(D_grad, U_grad, A, D, U)
        else:
            A_grad = _partial_eigenspace_grad(D_grad, U_grad, A, D, U, largest)
        return (A_grad,) + (None,) * 13


def lobpcg(A: Tensor, k: int | None = None, B: Tensor | None = None, X: Tensor | None = None,
           n: int | None = None, iK: Tensor | None = None, niter: int | None = None,
           tol: float | None = None, largest: bool | None = None, method: str | None = None,
           tracker=None, ortho_iparams: dict | None = None,
           ortho_fparams: dict | None = None,
           ortho_bparams: dict | None = None) -> tuple[Tensor, Tensor]:
    """The ``k`` largest (``largest=False``: smallest) eigenpairs ``(E, X)`` of the symmetric
    positive-definite ``A X = B X diag(E)`` by LOBPCG (torch's algorithm and defaults)."""
    if A.requires_grad or (B is not None and B.requires_grad):
        # A's gradient is made symmetric, so that A - lr * grad stays symmetric
        B_sym = (B + B.mT) / 2 if B is not None else None
        return LOBPCGAutogradFunction.apply((A + A.mT) / 2, k, B_sym, X, n, iK, niter, tol,
                                            largest, method, tracker, ortho_iparams,
                                            ortho_fparams, ortho_bparams)
    return _run(A, k, B, X, n, iK, niter, tol, largest, method, tracker, ortho_iparams,
                ortho_fparams, ortho_bparams)
