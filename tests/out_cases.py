"""One call per function that takes ``out=`` in torch, for tests/test_out.py.

Each case is source text evaluated with ``m`` (ember or torch), the inputs below made in that
library, and ``out``; ``fields`` gives the result dtypes of a multi-output call (the ``out``
tuple's length). Inputs are made from the same NumPy arrays in both libraries.
"""

from __future__ import annotations

import numpy as np

RNG = np.random.default_rng(11)


def _f(*shape, low=-2.0, high=2.0):
    return RNG.uniform(low, high, size=shape).astype(np.float32)


ARRAYS = {
    "F": _f(3, 4), "G": _f(3, 4), "P": _f(3, 4, low=0.3, high=2.0),
    "U": _f(3, 4, low=-0.9, high=0.9), "A": _f(3, 4, low=1.2, high=3.0),
    "Q": _f(3, 4, low=0.05, high=0.95), "V": _f(4), "W": _f(4), "V3": _f(3),
    "M": (np.eye(3) * 3 + _f(3, 3, low=-0.5, high=0.5)).astype(np.float32),
    "S": np.array([[4, 1, 0.5], [1, 3, 0.2], [0.5, 0.2, 2]], np.float32),
    "F3": _f(3, 3), "G3": _f(3, 3), "B1": _f(2, 3, 4), "B2": _f(2, 4, 3), "B3": _f(2, 3, 3),
    "I": RNG.integers(-5, 6, (3, 4)), "J": RNG.integers(1, 4, (3, 4)),
    "B": RNG.random((3, 4)) < 0.5, "X": np.array([[1.0, np.inf, -np.inf, np.nan]] * 3, np.float32),
    "IDX": np.array([[0, 3], [1, 1], [2, 0]]), "IDX1": np.array([0, 2]),
    "SORTED": np.array([-1.0, 0.0, 0.5, 1.5], np.float32),
}

# name -> (call, fields); fields None for one output
CASES: dict[str, tuple[str, tuple | None]] = {}


def _add(fields, **calls):
    for name, call in calls.items():
        CASES[name] = (call, fields)


_UNARY = ("abs absolute ceil cos cosh deg2rad exp exp2 expm1 fix floor frac neg negative "
          "rad2deg round sgn sigmoid sign sin sinc sinh square tan tanh trunc erf erfc "
          "atan arctan asinh arcsinh msort nan_to_num tril triu diag")
_add(None, **{n: f"m.{n}(F)" for n in _UNARY.split()})
_add(None, **{n: f"m.{n}(P)" for n in "log log10 log1p log2 sqrt rsqrt reciprocal digamma "
              "lgamma".split()})
_add(None, **{n: f"m.{n}(U)" for n in "acos arccos asin arcsin atanh arctanh erfinv".split()})
_add(None, acosh="m.acosh(A)", arccosh="m.arccosh(A)", logit="m.logit(Q)",
     isneginf="m.isneginf(X)", isposinf="m.isposinf(X)", signbit="m.signbit(F)",
     bitwise_not="m.bitwise_not(I)", logical_not="m.logical_not(F)",
     mvlgamma="m.mvlgamma(A, 1)", polygamma="m.polygamma(1, P)")
_BINARY = ("add sub subtract mul multiply div divide true_divide atan2 arctan2 copysign eq ne "
           "not_equal ge greater_equal gt greater le less_equal lt less fmax fmin fmod "
           "floor_divide remainder heaviside hypot logaddexp logaddexp2 logical_and "
           "logical_or logical_xor maximum minimum")
_add(None, **{n: f"m.{n}(F, G)" for n in _BINARY.split()})
_add(None, **{n: f"m.{n}(I, J)" for n in "bitwise_and bitwise_or bitwise_xor "
              "bitwise_left_shift bitwise_right_shift".split()})
_add(None, pow="m.pow(P, G)", float_power="m.float_power(P, 2)", xlogy="m.xlogy(F, P)",
     ldexp="m.ldexp(F, J)", lerp="m.lerp(F, G, 0.3)", addcdiv="m.addcdiv(F, G, P, value=0.5)",
     addcmul="m.addcmul(F, G, P)", where="m.where(B, F, G)", clamp="m.clamp(F, -0.5, 0.5)",
     clip="m.clip(F, -0.5, 0.5)", clamp_min="m.clamp_min(F, 0.1)",
     clamp_max="m.clamp_max(F, 0.1)")
_add(None, mm="m.mm(F, G.T)", matmul="m.matmul(F, G.T)", bmm="m.bmm(B1, B2)",
     addmm="m.addmm(M, F, G.T)", addmv="m.addmv(V3, F, V)", addbmm="m.addbmm(M, B1, B2)",
     baddbmm="m.baddbmm(B3, B1, B2)", mv="m.mv(F, V)", dot="m.dot(V, W)", vdot="m.vdot(V, W)",
     outer="m.outer(V, W)", ger="m.ger(V, W)", inner="m.inner(F, G)", kron="m.kron(F3, G3)",
     tensordot="m.tensordot(F, G, ([1], [1]))", cross="m.cross(F3, G3, dim=1)",
     inverse="m.inverse(M)", cholesky="m.cholesky(S)", matrix_power="m.matrix_power(M, 3)")
_add(None, sum="m.sum(F, 1)", nansum="m.nansum(F, 1)", prod="m.prod(F, 1)",
     mean="m.mean(F, 1)", nanmean="m.nanmean(F, 1)", var="m.var(F, 1)", std="m.std(F, 1)",
     logsumexp="m.logsumexp(F, 1)", amax="m.amax(F, 1)", amin="m.amin(F, 1)",
     all="m.all(B, 1)", any="m.any(B, 1)", argmax="m.argmax(F, 1)", argmin="m.argmin(F, 1)",
     norm="m.norm(F)", cumsum="m.cumsum(F, 1)", cumprod="m.cumprod(F, 1)",
     logcumsumexp="m.logcumsumexp(F, 1)", softmax="m.softmax(F, 1)",
     log_softmax="m.log_softmax(F, 1)", diff="m.diff(F)", histc="m.histc(F, bins=4)",
     quantile="m.quantile(F, 0.3, dim=1)", nanquantile="m.nanquantile(F, 0.3, dim=1)",
     renorm="m.renorm(F, 2, 0, 1.0)", argsort="m.argsort(F, stable=True)")
_add(None, max_all="m.max(F)", min_all="m.min(F)", max_other="m.max(F, G)",
     min_other="m.min(F, G)")
_add(None, cat="m.cat([F, G])", concat="m.concat([F, G], 1)", concatenate="m.concatenate([F, G])",
     stack="m.stack([F, G])", hstack="m.hstack([F, G])", vstack="m.vstack([F, G])",
     row_stack="m.row_stack([F, G])", dstack="m.dstack([F, G])",
     column_stack="m.column_stack([F, G])", gather="m.gather(F, 1, IDX)",
     take="m.take(F, IDX1)", take_along_dim="m.take_along_dim(F, IDX, 1)",
     index_select="m.index_select(F, 0, IDX1)", index_add="m.index_add(F, 0, IDX1, G[:2])",
     index_copy="m.index_copy(F, 0, IDX1, G[:2])", masked_select="m.masked_select(F, B)",
     scatter="m.scatter(F, 1, IDX, G)", scatter_add="m.scatter_add(F, 1, IDX, G)",
     scatter_reduce="m.scatter_reduce(F, 1, IDX, G, 'amax')", nonzero="m.nonzero(B)",
     searchsorted="m.searchsorted(SORTED, F)", bucketize="m.bucketize(F, SORTED)")
_VI = ("float32", "int64")
_add(_VI, max="m.max(F, 1)", min="m.min(F, 1)", sort="m.sort(F, 1)", topk="m.topk(F, 2)",
     kthvalue="m.kthvalue(F, 2, 1)", median="m.median(F, 1)", nanmedian="m.nanmedian(F, 1)",
     mode="m.mode(I.float(), 1)", cummax="m.cummax(F, 1)", cummin="m.cummin(F, 1)")
_add(("float32", "float32"), aminmax="m.aminmax(F, dim=1)", slogdet="m.slogdet(M)",
     qr="m.qr(F)")
_add(("float32",) * 3, svd="m.svd(F)")
# Factories: the result takes out's dtype. Random ones are compared by shape and dtype.
_add(None, zeros="m.zeros(2, 3)", ones="m.ones(2, 3)", full="m.full((2, 3), 2)",
     arange="m.arange(5)", linspace="m.linspace(0, 1, 5)", logspace="m.logspace(0, 2, 5)",
     eye="m.eye(3)")
# torch.linalg and torch.special
_add(None, **{f"linalg.{k}": f"m.linalg.{v}" for k, v in {
    "cholesky": "cholesky(S)", "cross": "cross(F3, G3)", "det": "det(M)",
    "eigvalsh": "eigvalsh(S)", "inv": "inv(M)", "matmul": "matmul(F, G.T)",
    "matrix_norm": "matrix_norm(F)", "matrix_power": "matrix_power(M, 2)",
    "matrix_rank": "matrix_rank(M)", "multi_dot": "multi_dot([F, G.T, M])", "norm": "norm(F)",
    "pinv": "pinv(F)", "solve": "solve(M, F3)", "svdvals": "svdvals(F)",
    "solve_triangular": "solve_triangular(M.triu(), F3, upper=True)", "vecdot": "vecdot(F, G)",
    "vector_norm": "vector_norm(F)"}.items()})
_add(("float32", "float32"), **{"linalg.eigh": "m.linalg.eigh(S)", "linalg.qr": "m.linalg.qr(F)",
                                "linalg.slogdet": "m.linalg.slogdet(M)"})
_add(("float32",) * 3, **{"linalg.svd": "m.linalg.svd(F, full_matrices=False)"})
_add(None, **{f"special.{n}": f"m.special.{n}(Q)" for n in
              "digamma entr erf erfc erfcx erfinv exp2 expit expm1 gammaln log1p log_ndtr logit "
              "ndtr ndtri psi round sinc".split()})
_add(None, **{"special.logsumexp": "m.special.logsumexp(F, 1)",
              "special.multigammaln": "m.special.multigammaln(A, 1)",
              "special.polygamma": "m.special.polygamma(1, P)",
              "special.xlog1py": "m.special.xlog1py(F, P)",
              "special.xlogy": "m.special.xlogy(F, P)"})
RANDOM = {"empty": "m.empty(2, 3)", "rand": "m.rand(2, 3)", "randn": "m.randn(2, 3)",
          "randint": "m.randint(0, 5, (2, 3))", "randperm": "m.randperm(5)",
          "normal": "m.normal(F, P)", "bernoulli": "m.bernoulli(Q)",
          "multinomial": "m.multinomial(Q, 2)"}
_add(None, **RANDOM)


def function_of(case: str) -> str:
    """The function a case calls (``max_all`` calls ``max``)."""
    return CASES[case][0].split("(")[0].removeprefix("m.").replace(".", "_")
