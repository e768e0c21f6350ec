"""The LOBPCG iteration on arrays (Knyazev 2001), with the robust "ortho" basis of Duersch,
Shao, Yang & Gu (2018).

Each step extends the Ritz vectors ``X`` by the previous search directions ``P`` and the
(preconditioned) residuals ``W`` and keeps the ``n`` wanted Ritz pairs of the pencil
``(S^T A S, S^T B S)`` on ``S = [X, P, W]``. "basic" takes ``P`` and ``W`` as they are, scaled
to unit B-norm (Knyazev's method; its Cholesky of ``S^T B S`` fails when ``S`` is nearly
dependent; the step is then retried without ``P``, and a second failure is raised). "ortho"
makes ``W`` B-orthonormal to ``[X, P]`` by projection and repeated SVQB passes (Stathopoulos &
Wu 2002) and takes ``P`` B-orthonormal to ``X`` from the Rayleigh-Ritz coordinates, so
``S^T B S`` stays near I.

A batch runs in lockstep with fixed block sizes. A direction that takes no part in a step is a
zero column: the residual and search direction of a converged pair (soft locking), or a
direction dropped as dependent. The Rayleigh-Ritz step sets zero columns aside by giving them
a Ritz value beyond the wanted end of the spectrum.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ember._backend import to_numpy, xp_of


@dataclass
class Options:
    """The iteration's parameters (defaults and validation are the front end's)."""

    niter: int  # the most Rayleigh-Ritz steps (the start block's included); < 0: no limit
    tol: float
    largest: bool
    ortho: bool
    ortho_i_max: int = 3
    ortho_j_max: int = 3
    ortho_tol: float = 0.0
    ortho_tol_drop: float = 0.0
    ortho_tol_replace: float = 0.0
    ortho_use_drop: bool = False


def _mT(a):
    return a.swapaxes(-1, -2)


def _sym(a):
    return (a + _mT(a)) * 0.5


def _diag(v, xp):
    """The diagonal matrices with the vectors ``v`` (``(*, p)``) on their diagonals."""
    return v[..., :, None] * xp.eye(v.shape[-1], dtype=v.dtype)


def _rsqrt(v, keep, xp):
    """``1 / sqrt(v)`` where ``keep``, 0 elsewhere (without dividing by zero)."""
    return xp.where(keep, 1 / xp.sqrt(xp.where(keep, v, 1)), 0).astype(v.dtype, copy=False)


class Block:
    """Columns ``u`` with their images ``bu = B u`` (``u`` itself when B is I) and, where the
    step needs it, ``au = A u``; a change of basis applies to all of them at once."""

    __slots__ = ("u", "bu", "au")

    def __init__(self, u, bu, au=None) -> None:
        self.u, self.bu, self.au = u, bu, au

    def map(self, f) -> Block:
        u = f(self.u)
        return Block(u, u if self.bu is self.u else f(self.bu),
                     None if self.au is None else f(self.au))

    def times(self, c) -> Block:
        return self.map(lambda a: a @ c)

    def minus(self, v: Block, c) -> Block:
        """``self - v c`` (the images of ``v`` that ``self`` has are used)."""
        u = self.u - v.u @ c
        return Block(u, u if self.bu is self.u else self.bu - v.bu @ c,
                     None if self.au is None else self.au - v.au @ c)

    @staticmethod
    def cat(blocks: list[Block], xp) -> Block:
        u = xp.concatenate([b.u for b in blocks], axis=-1)
        same = all(b.bu is b.u for b in blocks)
        bu = u if same else xp.concatenate([b.bu for b in blocks], axis=-1)
        au = None if blocks[0].au is None else xp.concatenate([b.au for b in blocks], axis=-1)
        return Block(u, bu, au)


def _cholesky(g, xp):
    # imported when used: ember.linalg (loaded first, as _linalg_decomp needs) installs
    # autocast's wrappers on import, which must not happen while ember itself loads
    from ember import linalg  # noqa: F401
    from ember._linalg_decomp import _not_pd

    try:
        return xp.linalg.cholesky(g)
    except np.linalg.LinAlgError:  # torch's message: which leading minor failed
        raise _not_pd(to_numpy(g)) from None


def rayleigh_ritz(s: Block, n_x: int, n: int, largest: bool):
    """The ``n`` wanted Ritz pairs in the basis ``s``: values ``(*, n)`` (descending when
    ``largest``, else ascending), their coordinates ``z`` ``(*, p, n)`` in the B-orthonormal
    basis ``s @ to_s``, and ``to_s`` ``(*, p, p)`` (upper triangular up to a column scaling, so
    the first ``n_x`` of those columns span the first ``n_x`` of ``s``).

    The first ``n_x`` columns are taken as they are; the others are scaled to unit B-norm and
    set aside when zero, so a dependent start block fails the Cholesky as in torch."""
    xp = xp_of(s.u)
    t = _sym(_mT(s.u) @ s.au)
    g = _sym(_mT(s.u) @ s.bu)
    gd = xp.diagonal(g, axis1=-2, axis2=-1).copy()
    gd[..., :n_x] = 1
    live = gd > 0
    d = _rsqrt(gd, live, xp)
    dd = d[..., :, None] * d[..., None, :]
    g = g * dd + _diag(~live, xp).astype(g.dtype)
    linv = xp.linalg.inv(_cholesky(g, xp))
    h = _sym(linv @ (t * dd) @ _mT(linv))
    # The zero columns' rows of h are zero: a shift past ||h||_F puts their Ritz values last.
    far = 2 * xp.linalg.norm(h, axis=(-2, -1)) + 1
    h = h + _diag(xp.where(live, 0, -far[..., None] if largest else far[..., None]), xp)
    theta, z = xp.linalg.eigh(h)
    if largest:
        theta, z = theta[..., ::-1], z[..., ::-1]
    # Exactly zero on the set-aside coordinates (eigh leaves rounding there), which the
    # search directions built from z must not pick up.
    z = z[..., :n] * live[..., :, None]
    return theta[..., :n], z, d[..., :, None] * _mT(linv)


def svqb(u: Block, opts: Options, drop: bool) -> Block:
    """One SVQB pass: ``u`` made B-orthonormal through the eigenvectors of its scaled Gram
    matrix. Directions with an eigenvalue below ``tol * largest`` are dropped (zeroed) when
    ``drop``, else kept at that floor for the next pass to finish (Duersch et al.)."""
    xp = xp_of(u.u)
    g = _sym(_mT(u.u) @ u.bu)
    gd = xp.diagonal(g, axis1=-2, axis2=-1)
    d = _rsqrt(gd, gd > 0, xp)
    theta, z = xp.linalg.eigh(g * d[..., :, None] * d[..., None, :])
    top = theta[..., -1:]
    if drop:
        scale = _rsqrt(theta, theta > opts.ortho_tol_drop * top, xp)
    else:
        theta = xp.maximum(theta, opts.ortho_tol_replace * top)
        scale = _rsqrt(theta, theta > 0, xp)
    return u.times(d[..., :, None] * z * scale[..., None, :])


def _max_abs(a) -> float:
    return float(abs(a).max()) if a.size else 0.0


def _orthonormal(u: Block, tol: float) -> bool:
    """Whether the nonzero columns of ``u`` are B-orthonormal to ``tol``."""
    xp = xp_of(u.u)
    g = _mT(u.u) @ u.bu
    return _max_abs(g - _diag(xp.diagonal(g, axis1=-2, axis2=-1) > 0, xp)) < tol


def ortho(u: Block, v: Block, opts: Options, times_b=None, drop: bool | None = None) -> Block:
    """``u`` made B-orthonormal and B-orthogonal to the B-orthonormal ``v``: project out
    ``v``, then SVQB until orthonormal; again while ``v^T B u`` is not yet small. When the
    passes run out, a last projection and dropping SVQB pass take out what is still dependent.
    SVQB may blow up what the projection left of a direction inside ``v``, rounding errors
    included, so ``B u`` is recomputed (``times_b``) after each pass rather than carried."""
    drop = opts.ortho_use_drop if drop is None else drop

    def project_and_svqb(u: Block, drop: bool) -> Block:
        u = svqb(u.minus(v, _mT(v.u) @ u.bu), opts, drop)
        if times_b is not None:
            u.bu = times_b(u.u)
        return u

    for _ in range(opts.ortho_i_max):
        u = project_and_svqb(u, drop)
        for _ in range(opts.ortho_j_max - 1):
            if _orthonormal(u, opts.ortho_tol):
                break
            u = svqb(u, opts, drop)
            if times_b is not None:
                u.bu = times_b(u.u)
        if _orthonormal(u, opts.ortho_tol) and _max_abs(_mT(v.u) @ u.bu) < opts.ortho_tol:
            return u
    return project_and_svqb(u, True)


def next_directions(z, n_x: int, opts: Options):
    """The coordinates (in the B-orthonormal basis of ``rayleigh_ritz``) of the next search
    directions P: the new Ritz vectors ``z`` less their part in the old X (its first ``n_x``
    coordinates), orthonormalized against ``z`` (Duersch et al.'s basis selection). Working
    in these coordinates keeps the transform applied to ``S``'s A and B images orthonormal.
    There may be fewer independent directions than columns (a converged pair's W is zero), so
    dependent ones are dropped."""
    y = z.copy()
    y[..., :n_x, :] = 0
    return ortho(Block(y, y), Block(z, z), opts, drop=True).u


def _rms_norm(a, xp):
    """``||A||_F / sqrt(m)``: the root-mean-square eigenvalue magnitude of a symmetric A."""
    m = a.shape[-1]
    return xp.linalg.norm(a, axis=(-2, -1)) / xp.sqrt(xp.asarray(m, dtype=a.dtype))


def _residuals(xb: Block, e, scale: tuple, xp) -> tuple:
    """``R = A X - B X E`` and each column's ``||r|| / ((||A|| + |e| ||B||) ||x||)``."""
    r = xb.au - xb.bu * e[..., None, :]
    bound = (scale[0] + abs(e) * scale[1]) * xp.linalg.norm(xb.u, axis=-2)
    rnorm = xp.linalg.norm(r, axis=-2)
    return r, xp.where(bound > 0, rnorm / xp.where(bound > 0, bound, 1), rnorm)


def _step(xb: Block, pb: Block, wb: Block, opts: Options, xp) -> tuple:
    """One Rayleigh-Ritz step on ``[X, P, W]``: the new Ritz values, X and P blocks, and
    the basis. When the basis lost its independence (basic), the step restarts without P."""
    from ember.linalg import LinAlgError

    n = xb.u.shape[-1]
    try:
        sb = Block.cat([xb, pb, wb], xp)
        e, z, to_s = rayleigh_ritz(sb, n, n, opts.largest)
    except LinAlgError:
        sb = Block.cat([xb, pb.map(xp.zeros_like), wb], xp)
        e, z, to_s = rayleigh_ritz(sb, n, n, opts.largest)
    c = to_s @ z
    if opts.ortho:
        cp = to_s @ next_directions(z, n, opts)
    else:  # Knyazev's P: the new X's parts in P and W
        cp = c.copy()
        cp[..., :n, :] = 0
    return e, sb.times(c), sb.times(cp), sb.u


def lobpcg_arrays(a, b, ik, x, k: int, opts: Options, report: Callable | None = None):
    """``(E, X)``: the ``k`` wanted eigenpairs of ``A X = B X E`` from the start block ``x``
    (``(*, m, n)``, ``k <= n``). ``report(step, E, X, R, rerr, S)`` is called after each
    Rayleigh-Ritz step and stops the iteration by returning True.

    A pair has converged when ``||r|| <= tol (||A|| + |e| ||B||) ||x||``, with the norms of A
    and B their root-mean-square eigenvalue magnitudes; converged pairs are soft-locked."""
    xp = xp_of(a)
    n = x.shape[-1]
    times_b = (lambda w: w) if b is None else (lambda w: b @ w)
    xb = Block(x, times_b(x), a @ x)
    e, z, to_s = rayleigh_ritz(xb, n, n, opts.largest)
    xb = xb.times(to_s @ z)
    pb = xb.map(xp.zeros_like)
    scale = (_rms_norm(a, xp)[..., None], 1 if b is None else _rms_norm(b, xp)[..., None])
    s, step = None, 1
    while True:
        r, rerr = _residuals(xb, e, scale, xp)
        # By position, and afresh each step: a column's pair can change (a converged but
        # unwanted one moves out of the block as better ones come in).
        active = rerr >= opts.tol
        stop = report is not None and report(step, e, xb.u, r, rerr, s)
        if stop or not active[..., :k].any() or 0 <= opts.niter <= step:
            return xp.ascontiguousarray(e[..., :k]), xp.ascontiguousarray(xb.u[..., :k])
        mask = active[..., None, :].astype(x.dtype)
        w = (r if ik is None else ik @ r) * mask
        wb = Block(w, times_b(w))
        if opts.ortho:
            wb = ortho(wb, Block.cat([xb, pb], xp), opts, None if b is None else times_b)
        else:
            pb = pb.map(mask.__mul__)  # soft locking, as Knyazev's
        wb.au = a @ wb.u
        e, xb, pb, s = _step(xb, pb, wb, opts, xp)
        step += 1
