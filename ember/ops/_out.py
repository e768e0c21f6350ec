"""torch's ``out=`` for every ``ember.<function>`` that takes it in torch, added in one place.

``ember.ops.install`` wraps each function named in ``RULES``: ``out=None`` costs one test; with
an ``out`` the function runs as usual and its result is written into ``out`` (a tuple of
tensors for a multi-output function), which is returned (torch's ``<name>_out`` named tuple for
several). As in torch:

- under autograd, an input or ``out`` that requires grad is refused;
- ``out`` of another shape is resized (with torch's deprecation warning if it had elements);
- each function has torch's dtype rule for ``out``, with torch's message: the result must be
  castable to ``out``'s dtype (TensorIterator ops), or of exactly its dtype (most others), or
  ``out`` must be bool, ...; factories and sum-like reductions compute in ``out``'s dtype;
- ``out`` may not overlap itself (an expanded tensor) or part of an input;
- ``out``'s version counter is bumped.
"""

from __future__ import annotations

import functools

import numpy as np

from ember import _dtype, return_types
from ember._tensor import Tensor
from ember._warn import warn_user
from ember.autograd.grad_mode import STATE
from ember.ops.pointwise_more import _CNAME

# c10's type names, which some of torch's messages use (``long int``, ``c10::Half``).
_META = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char", "int16": "short int",
         "int32": "int", "int64": "long int", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
         "float32": "float", "float64": "double"}


def _fails(test: str, res: _dtype.dtype, out: _dtype.dtype) -> bool:
    if test == "cast":  # torch.can_cast: no float -> integer, no number -> bool
        return res._kind > out._kind
    if test == "same":
        return res is not out
    if test == "bool":
        return out is not _dtype.bool_
    if test == "float":
        return not out.is_floating_point
    return out is _dtype.bool_  # "notbool": a kernel that has no bool version


# A check is (test, exception, message); {R}/{O} are the result's and out's torch names
# (Float), {r}/{o} their c10 names (float), {name} the function.
CAST = ("cast", RuntimeError, "result type {R} can't be cast to the desired output type {O}")
SAME = ("same", RuntimeError, "Expected out tensor to have dtype {r}, but got {o} instead")
FOUND = ("same", RuntimeError, "Found dtype {O} but expected {R}")
SCALAR_TYPE = ("same", RuntimeError, "expected scalar_type {R} but found {O}")
BOOL_RESULT = ("bool", RuntimeError, "{name} only supports bool tensor for result, got: {O}")
BOOL_OUTPUT = ("bool", RuntimeError, "{name} does not support non-boolean outputs.")
FACTORY = ("same", RuntimeError, "dtype {R} does not match dtype of out parameter ({O})")


def _no_kernel(kernel: str, test: str = "notbool") -> tuple:
    return (test, NotImplementedError, f'"{kernel}" not implemented for ' "'{O}'")


def _castable(name: str) -> tuple:
    return ("cast", RuntimeError,
            name + ": Expected result to be safely castable from {R} dtype, but got result with "
            "dtype {O}")


def _same(msg: str) -> tuple:
    return ("same", RuntimeError, msg)


class Rule:
    """How ``out=`` works for one function: ``checks`` for a single output; ``fields`` for a
    multi-output call, a tuple of checks per output (one tuple: the same for all); ``into``:
    the function computes in ``out``'s dtype (passed as ``dtype=``), ``"factory"`` for a
    tensor factory."""

    __slots__ = ("checks", "fields", "into")

    def __init__(self, *checks, fields=None, into: str | None = None) -> None:
        self.checks, self.fields, self.into = checks, fields, into


def _rules(names: str, rule: Rule) -> dict:
    return dict.fromkeys(names.split(), rule)


_EXACT = ((SAME,),)  # every output of exactly the result's dtype
RULES: dict[str, Rule] = {
    **_rules("acos arccos acosh arccosh add sub subtract mul multiply div divide "
             "true_divide asin arcsin asinh arcsinh atan arctan atanh arctanh atan2 arctan2 "
             "copysign cos cosh deg2rad rad2deg digamma erf erfc erfinv exp exp2 expm1 lgamma "
             "log log10 log1p log2 logit polygamma reciprocal rsqrt sigmoid sin sinc sinh sqrt "
             "square tan tanh eq ne not_equal ge greater_equal gt greater le less_equal lt less "
             "fmax fmin fmod floor_divide remainder hypot logaddexp logaddexp2 logical_and "
             "logical_or logical_xor logical_not maximum minimum bitwise_and bitwise_or "
             "bitwise_xor bitwise_left_shift bitwise_right_shift pow xlogy lerp addcdiv addcmul "
             "outer ger kron diff mean var std angle conj_physical", Rule(CAST)),
    **_rules("abs absolute ceil fix floor frac neg negative round sgn sign trunc clamp clip "
             "clamp_min clamp_max bitwise_not", Rule(FOUND)),
    **_rules("mm matmul bmm addmm addmv baddbmm mv cross inverse msort tril triu diag gather "
             "take_along_dim index_add index_copy scatter scatter_add scatter_reduce softmax "
             "log_softmax renorm argmax argmin argsort norm complex polar", Rule(SAME)),
    **_rules("cat concat concatenate stack hstack vstack row_stack dstack column_stack",
             Rule(("cast", TypeError, "torch.cat(): input types can't be cast to the desired "
                                      "output type {O}"))),
    **_rules("all any", Rule(BOOL_RESULT)),
    **_rules("isneginf isposinf signbit", Rule(BOOL_OUTPUT)),
    **_rules("max min", Rule(CAST, fields=_EXACT)),
    **_rules("sort topk", Rule(fields=_EXACT)),
    **_rules("cummax cummin", Rule(fields=((SCALAR_TYPE,),))),
    **_rules("aminmax slogdet qr svd", Rule(fields=_EXACT)),
    **_rules("median nanmedian", Rule(fields=(
        (_same("Expected tensor for 'values' to have the same type as tensor for argument #2 "
               "'self'; but type {O} does not equal {R} (while checking arguments for "
               "{name}())"),),
        (_same("Expected tensor for argument #1 'indices' to have scalar type Long; but got "
               "{O} instead (while checking arguments for {name}_out)"),)))),
    "kthvalue": Rule(fields=((_same("output values must be of same type as input"),),
                             (_same("output indices must be of scalar type Long"),))),
    "mode": Rule(fields=((_same("expected scalar type '{R}' but got '{O}' for values output"),),
                         (_same("expected scalar type '{R}' but got '{O}' for indices output"),))),
    "where": Rule(_same("Expected out type to be {R} but got {O}")),
    "amax": Rule(_same("Expected the dtype for input and out to match, but got {R} for input's "
                       "dtype and {O} for out's dtype.")),
    "nan_to_num": Rule(_same("nan_to_num: dtype of out: {O} should be same as input: {R}")),
    "dot": Rule(_same("result dtype {O} does not match input dtype {R}")),
    "tensordot": Rule(_same("tensordot: Expected the output tensor to have dtype {R}, but got an "
                            "output tensor with dtype {O}")),
    "take": Rule(_same("take(): self and out expected to have the same dtype, but got self.dtype "
                       "= {R} and out.dtype = {O}")),
    "index_select": Rule(_same("index_select(): self and result must have the same scalar "
                               "type")),
    "masked_select": Rule(_same("masked_select(): self and result must have the same scalar "
                                "type")),
    "quantile": Rule(_same("quantile() out tensor must be same dtype as the input tensor")),
    "histc": Rule(_same("torch.histogram: input tensor and hist tensor should have the same "
                        "dtype, but got input {r} and hist {o}")),
    "logcumsumexp": Rule(SCALAR_TYPE),
    "heaviside": Rule(_same("heaviside is not yet implemented for tensors with different "
                            "dtypes.")),
    "float_power": Rule(_same("the output given to float_power has dtype {O} but the operation's "
                              "result requires dtype {R}")),
    "addbmm": Rule(_same("self and mat2 must have the same dtype, but got {O} and {R}")),
    "nonzero": Rule(_same("nonzero: Expected out tensor to have scalar type {R} but got scalar "
                          "type{O}")),
    "searchsorted": Rule(_same("torch.searchsorted(): output tensor's dtype is wrong, it can only "
                               "be Int(int32) or Long(int64) depending on whether out_int32 flag "
                               "is True, but we got output tensor's dtype {O} and out_int32 flag "
                               "is {int32}")),
    "multinomial": Rule(_same("multinomial expects Long tensor out, got: {O}")),
    "mvlgamma": Rule(("cast", RuntimeError, "mvlgamma: result type {R} can't be cast to the "
                                            "desired output type {O}")),
    "cholesky": Rule(_castable("cholesky")),
    "matrix_power": Rule(_castable("matrix_power"), SAME),
    "ldexp": Rule(("cast", RuntimeError, "ldexp can't be cast to the desired output type {O}"),
                  _same("ldexp: expected the output dtype {R}, but got {O}")),
    "logsumexp": Rule(("float", RuntimeError, "logsumexp(): Expected floating point type for "
                                              "result tensor, but got: {O}")),
    "nanmean": Rule(_no_kernel("nansum_cpu", "float"), CAST),
    "bernoulli": Rule(),  # 0/1 fit every dtype
    "normal": Rule(_no_kernel("normal_kernel_cpu", "float"), CAST),
    # Computed in out's dtype (a dtype= that differs is refused).
    **_rules("sum prod", Rule(SAME, into="dtype")),
    "nansum": Rule(_no_kernel("nansum_cpu", "float"), SAME, into="dtype"),
    "cumsum": Rule(_no_kernel("cumsum_out_cpu"), SAME, into="dtype"),
    "cumprod": Rule(_no_kernel("cumprod_out_cpu"), SAME, into="dtype"),
    **_rules("zeros ones full eye empty", Rule(FACTORY, into="factory")),
    "randint": Rule(("notbool", RuntimeError, "to - 1 is out of bounds for bool"), FACTORY,
                    into="factory"),
    **{n: Rule(_no_kernel(f"{n}_cpu"), FACTORY, into="factory")
       for n in ("arange", "linspace", "logspace")},
    "rand": Rule(_no_kernel("check_uniform_bounds", "float"), FACTORY, into="factory"),
    "randn": Rule(_no_kernel("normal_kernel_cpu", "float"), FACTORY, into="factory"),
    "randperm": Rule(_no_kernel("randperm"), FACTORY, into="factory"),
}
RULES.update(amin=RULES["amax"], vdot=RULES["dot"], inner=RULES["tensordot"],
             nanquantile=RULES["quantile"], bucketize=RULES["searchsorted"])

# ember.linalg and ember.special: their own rules (linalg.cholesky is not torch.cholesky); in
# the tables below their names carry a "linalg_" / "special_" prefix, as torch's aten ops do.
LINALG_RULES = {
    **_rules("cholesky cross det eigh eigvalsh inv matmul qr slogdet solve svd svdvals "
             "vector_norm", Rule(SAME, fields=_EXACT)),
    **{n: Rule(_same(f"linalg.{n} expected out tensor dtype {{R}} but got: {{O}}"))
       for n in ("norm", "matrix_norm")},
    "matrix_power": RULES["matrix_power"],
    "matrix_rank": Rule(("cast", RuntimeError, "torch.linalg.matrix_rank: Expected result to be "
                                               "safely castable from {R} dtype, but got result "
                                               "with dtype {O}")),
    "pinv": Rule(_castable("linalg.pinv")),
    "multi_dot": Rule(_same("multi_dot(): expected out tensor to have dtype {r} but got {o}")),
    "solve_triangular": Rule(_same("expected scalar type {R} but found {O}")),
    "vecdot": Rule(_same("linalg.vecdot: Expected out of dtype{R} but found {O}")),
}
SPECIAL_RULES = {
    **_rules("digamma entr erf erfc erfcx erfinv exp2 expit expm1 gammaln log1p log_ndtr logit "
             "ndtr ndtri psi sinc polygamma xlog1py xlogy", Rule(CAST)),
    "round": Rule(FOUND), "logsumexp": RULES["logsumexp"], "multigammaln": RULES["mvlgamma"],
}

# Autograd: most functions refuse inputs or out that require grad, under the name of the aten
# op that runs (torch.divide -> "div(): ..."). Non-differentiable ones do not check; torch's
# composites (softmax, inner, quantile, ...) compute and then copy into out, so a gradient
# flows through out (torch gives softmax and diag a node that cannot run backward; ember's
# copy can).
ATEN = {
    "absolute": "abs", "arccos": "acos", "arccosh": "acosh", "arcsin": "asin",
    "arcsinh": "asinh", "arctan": "atan", "arctan2": "atan2", "arctanh": "atanh",
    "argsort": "sort", "msort": "sort", "clip": "clamp", "cross": "linalg_cross",
    "diff": "sub", "subtract": "sub", "divide": "div", "true_divide": "div", "fix": "trunc",
    "float_power": "pow", "square": "pow", "ger": "mul", "kron": "mul", "outer": "mul",
    "multiply": "mul", "inverse": "linalg_inv_ex", "matrix_power": "matmul",
    "nanmean": "nansum", "negative": "neg", "norm": "linalg_vector_norm", "qr": "linalg_qr",
    "slogdet": "_linalg_slogdet", "svd": "_linalg_svd", "take_along_dim": "gather",
    **dict.fromkeys("concat concatenate hstack vstack row_stack dstack column_stack".split(),
                    "cat"),
    "linalg_cholesky": "linalg_cholesky_ex", "linalg_det": "_linalg_det",
    "linalg_eigh": "_linalg_eigh", "linalg_eigvalsh": "_linalg_eigh", "linalg_inv": "linalg_inv_ex",
    "linalg_matmul": "matmul", "linalg_matrix_power": "matmul", "linalg_multi_dot": "mm",
    "linalg_slogdet": "_linalg_slogdet", "linalg_solve": "_linalg_solve_ex",
    "linalg_svd": "_linalg_svd", "linalg_svdvals": "_linalg_svd", "linalg_vecdot": "sum",
    "special_expit": "sigmoid", "special_gammaln": "lgamma", "special_psi": "digamma",
    "special_multigammaln": "mvlgamma",
    **{f"special_{n}": n for n in "digamma erf erfc erfinv exp2 expm1 log1p logit round sinc "
                                  "logsumexp polygamma xlogy".split()},
}
NOT_DIFFERENTIABLE = frozenset(
    "argmax argmin bucketize searchsorted eq ne not_equal ge greater_equal gt greater le "
    "less_equal lt less histc logical_and logical_or logical_xor logical_not signbit isneginf "
    "isposinf multinomial all any nonzero linalg_matrix_rank".split())
COPIED = frozenset("inner tensordot quantile nanquantile softmax log_softmax diag floor_divide "
                   "heaviside linalg_norm linalg_matrix_norm special_ndtr".split())
# Overlap of out with an input: refused partly (TensorIterator ops), even fully (torch's
# assert_no_overlap: cat, gather, ...), or not checked (reductions, BLAS, linalg, composites).
UNCHECKED = frozenset(
    "all any amax amin sum prod mean nansum nanmean var std norm logsumexp cummax cummin diff "
    "histc quantile nanquantile mm mv bmm dot vdot matmul addmm addmv inner tensordot "
    "matrix_power cholesky inverse qr svd slogdet mvlgamma diag tril triu softmax "
    "log_softmax special_logsumexp special_multigammaln special_ndtr".split()
    + [f"linalg_{n}" for n in LINALG_RULES if n != "cross"])
NO_ALIAS = frozenset("cat concat concatenate stack hstack vstack row_stack dstack column_stack "
                     "gather index_select masked_select take take_along_dim".split())
# Resized without a warning (factories, and a few kernels that resize directly).
SILENT_RESIZE = frozenset("zeros ones full eye empty rand randn randint randperm linspace "
                          "logspace bernoulli multinomial addbmm".split())


def _message(template: str, name: str, res: _dtype.dtype, out: _dtype.dtype) -> str:
    return template.format(name=name, R=_CNAME[res.name], O=_CNAME[out.name],
                           r=_META[res.name], o=_META[out.name], int32=res is _dtype.int32)


def _check_dtype(checks: tuple, name: str, res: _dtype.dtype, out: _dtype.dtype) -> None:
    for test, exc, template in checks:
        if _fails(test, res, out):
            raise exc(_message(template, name, res, out))


def _tensors(args, kwargs):
    for a in (*args, *kwargs.values()):
        if isinstance(a, Tensor):
            yield a
        elif isinstance(a, list | tuple):
            yield from (t for t in a if isinstance(t, Tensor))


def _label(name: str, rule: Rule, args: tuple) -> str:
    """The op torch names in the autograd refusal."""
    if rule.into == "factory":
        return f"aten::{name}"
    if name in ("max", "min") and len(args) > 1 and isinstance(args[1], Tensor):
        return name + "imum"
    return ATEN.get(name, name)


def _refuse_grad(label: str, args, kwargs, outs) -> None:
    if STATE.enabled and any(t._rg for t in (*_tensors(args, kwargs), *outs)):
        raise RuntimeError(f"{label}(): functions with out=... arguments don't support "
                           "automatic differentiation, but one of the arguments requires grad.")


def _as_outs(out, name: str, n: int | None) -> tuple:
    """``out`` as a tuple of tensors: one, or ``n`` for a multi-output result."""
    if n is None:
        if isinstance(out, Tensor):
            return (out,)
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if isinstance(out, tuple | list) and all(isinstance(o, Tensor) for o in out):
        if len(out) != n:
            raise TypeError(f"expected tuple of {n} elements but got {len(out)}")
        return tuple(out)
    raise TypeError(f"{name}(): argument 'out' must be tuple of Tensors, not "
                    f"{type(out).__name__}")


def _span(a) -> tuple:
    """The byte range an array's elements occupy."""
    lo = hi = a.__array_interface__["data"][0]
    for n, s in zip(a.shape, a.strides):
        if n > 1:
            lo, hi = (lo + s * (n - 1), hi) if s < 0 else (lo, hi + s * (n - 1))
    return lo, hi + a.itemsize


def _dense(a) -> bool:
    """Non-overlapping and dense: some order of the dims is contiguous (torch's rule for when
    it checks overlap)."""
    expect = a.itemsize
    for s, n in sorted((abs(s), n) for n, s in zip(a.shape, a.strides) if n > 1):
        if s != expect:
            return False
        expect *= n
    return True


def _check_overlap(o: np.ndarray, inputs: list, full_too: bool) -> None:
    if any(s == 0 and n > 1 for n, s in zip(o.shape, o.strides)):
        raise RuntimeError("unsupported operation: more than one element of the written-to "
                           "tensor refers to a single memory location. Please clone() the "
                           "tensor before performing the operation.")
    if not isinstance(o, np.ndarray) or not o.size or not _dense(o):
        return  # torch checks dense tensors only; a CuPy array is not inspected here
    lo, hi = _span(o)
    for i in inputs:
        if not isinstance(i, np.ndarray) or not i.size or not _dense(i):
            continue
        ilo, ihi = _span(i)
        same = ilo == lo and i.shape == o.shape and i.strides == o.strides and not full_too
        if ilo < hi and lo < ihi and not same:
            raise RuntimeError("unsupported operation: some elements of the input tensor and "
                               "the written-to tensor refer to a single memory location. "
                               "Please clone() the tensor before performing the operation.")


def _resize_warning(name: str, o: Tensor, r: Tensor) -> str | None:
    if name == "arange":  # torch's range kernel has its own words, on a count mismatch only
        if o._data.size == r._data.size:
            return None
        return (f"The number of elements in the out tensor of shape {list(o.shape)} is "
                f"{o._data.size} which does not match the computed number of elements "
                f"{r._data.size}. Note that this may occur as a result of rounding error. The "
                f"out tensor will be resized to a tensor of shape ({r._data.size},).")
    if not o._data.size or name in SILENT_RESIZE:
        return None
    return (f"An output with one or more elements was resized since it had shape "
            f"{list(o.shape)}, which does not match the required output shape {list(r.shape)}. "
            "This behavior is deprecated, and in a future PyTorch release outputs will not be "
            "resized unless they have zero elements. You can explicitly reuse an out tensor t "
            "by resizing it, inplace, to zero elements with t.resize_(0).")


def _write(name: str, o: Tensor, r: Tensor, copied: bool) -> None:
    """Write the result into ``o``, resized to the result's shape if it differs. ``copied``:
    through ``copy_``, which records the copy under autograd."""
    if name in NO_RESIZE:
        o.copy_(r)  # torch's broadcast error for an out of another shape
        return
    if name in RAW_WRITE and o._data.shape == r._data.shape and not o._data.flags.c_contiguous:
        memory = o._data.ravel(order="K")  # the out's memory, in memory order
        if np.shares_memory(memory, o._data):
            memory[...] = r._data.ravel()  # written as if the out were contiguous, as torch
            o._vc[0] += 1
            return
    if o._data.shape != r._data.shape:
        msg = _resize_warning(name, o, r)
        if msg:
            warn_user(msg)
        if not copied:
            o._data = r._data.astype(o._data.dtype, copy=True)
            o._vc[0] += 1
            return
        o._data = np.empty_like(r._data, dtype=o._data.dtype)
    if copied:
        o.copy_(r)
        return
    np.copyto(o._data, r._data, casting="unsafe")
    o._vc[0] += 1


def _call(fn, name: str, rule: Rule, args: tuple, kwargs: dict, out):
    given = (out,) if isinstance(out, Tensor) else tuple(o for o in out if isinstance(o, Tensor))
    copied = name in COPIED and STATE.enabled
    if name not in NOT_DIFFERENTIABLE and not copied:
        _refuse_grad(_label(name, rule, args), args, kwargs, given)
    if rule.into is not None:  # computed in out's dtype, checked before
        dt = kwargs.get("dtype")
        kwargs["dtype"] = dt = given[0].dtype if dt is None else _dtype.to_dtype(dt)
        _check_dtype(rule.checks, name, dt, given[0].dtype)
    res = fn(*args, **kwargs)
    multi = isinstance(res, tuple)
    outs = _as_outs(out, name, len(res) if multi else None)
    results = tuple(res) if multi else (res,)
    checks = rule.fields if multi else (rule.checks,)
    if len(checks) == 1:
        checks *= len(results)
    unchecked = name in UNCHECKED or (name in ("max", "min") and not multi and len(args) == 1)
    inputs = [] if unchecked else [t._data for t in _tensors(args, kwargs)]
    for o, r, c in zip(outs, results, checks):
        _check_dtype(c, name, r.dtype, o.dtype)
        _check_overlap(o._data, inputs, name in NO_ALIAS)
    pairs = list(zip(outs, results))
    for o, r in reversed(pairs) if name in WRITTEN_BACKWARDS else pairs:
        _write(name, o, r, copied)
        if r._rg and r._grad_fn is None:  # a factory's requires_grad=True
            o._rg = True
    if type(res) is tuple:  # a list of pieces (split_copy, ...): torch returns nothing
        return None
    return getattr(return_types, f"{type(res).__name__}_out")(*outs) if multi else outs[0]


def with_out(fn, name: str, rule: Rule):
    """``fn`` taking torch's ``out=`` keyword as described in the module docstring."""
    @functools.wraps(fn)
    def call(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        return _call(fn, name, rule, args, kwargs, out)
    return call


def add_out(namespace: dict, rules: dict = RULES, prefix: str = "") -> None:
    """Give every function of ``namespace`` named in ``rules`` its ``out=`` (``prefix``:
    ``"linalg_"`` for ember.linalg's, ...)."""
    for name, rule in rules.items():
        if name in namespace:
            namespace[name] = with_out(namespace[name], prefix + name, rule)


# --- the functions added for API coverage (ember/ops/*_more.py, view_copies.py, ...) --------

_COPIES = ("alias_copy as_strided_copy detach_copy diagonal_copy expand_copy permute_copy "
           "select_copy slice_copy slice_scatter squeeze_copy t_copy transpose_copy unfold_copy "
           "unsqueeze_copy view_copy")
RULES.update({
    **_rules("addr gcd lcm i0 igamma igammac nextafter threshold", Rule(CAST)),
    **_rules(_COPIES + " frobenius_norm index_reduce isin", Rule(SAME)),
    **_rules("split_copy split_with_sizes_copy unbind_copy triangular_solve", Rule(fields=_EXACT)),
    "hardshrink": Rule(FOUND),
    "chain_matmul": LINALG_RULES["multi_dot"],
    "cholesky_inverse": Rule(_castable("cholesky_inverse")),
    "cholesky_solve": Rule(_castable("cholesky_solve")),
    "frexp": Rule(fields=(
        (_same("torch.frexp() expects mantissa to have dtype {r} but got {o}"),),
        (_same("torch.frexp() expects exponent to have int dtype but got {o}"),))),
    "histogram": Rule(fields=(
        (_same("torch.histogram: input tensor and hist tensor should have the same dtype, but got "
               "input {r} and hist {o}"),),
        (_same("torch.histogram: input tensor and bin_edges tensor should have the same dtype, "
               "but got input {r} and bin_edges {o} for dimension 0"),))),
    "narrow_copy": Rule(_same("Expected self.dtype() == output.dtype() to be true, but got false.  "
                              "(Could this error message be improved?  If so, please report an "
                              "enhancement request to PyTorch.)")),
    "nonzero_static": Rule(_same("nonzero_static: Expected out tensor to have scalar type {R} but "
                                 "got scalar type{O}")),
    "nuclear_norm": Rule(_same("linalg.matrix_norm expected out tensor dtype {R} but got: {O}")),
    "range": Rule(_no_kernel("range_cpu"), FACTORY, into="factory"),
})
LINALG_RULES.update({
    **_rules("cholesky_ex inv_ex solve_ex", Rule(fields=_EXACT)),
    **{n: Rule(_castable(n if n != "cond" else "linalg.cond")) for n in
       ("cond", "tensorinv", "tensorsolve")},
})
SPECIAL_RULES.update(_rules("gammainc gammaincc i0 i0e i1 i1e modified_bessel_i0 "
                            "modified_bessel_i1", Rule(CAST)))
ATEN.update({"chain_matmul": "mm", "frobenius_norm": "norm", "linalg_solve_ex": "_linalg_solve_ex",
             "special_gammainc": "igamma", "special_gammaincc": "igammac", "special_i0": "i0"})
NOT_DIFFERENTIABLE = NOT_DIFFERENTIABLE | frozenset(
    "gcd lcm isin nonzero_static range split_with_sizes_copy unbind_copy split_copy "
    "special_modified_bessel_i0 special_modified_bessel_i1".split())
# torch.special's Cephes functions (bessel_cephes.py, orthogonal_polynomials.py, zeta.py):
# TensorIterator kernels; all but zeta have no derivative.
CEPHES_SPECIAL = (
    "airy_ai bessel_j0 bessel_j1 bessel_y0 bessel_y1 modified_bessel_k0 modified_bessel_k1 "
    "scaled_modified_bessel_k0 scaled_modified_bessel_k1 spherical_bessel_j0 "
    "chebyshev_polynomial_t chebyshev_polynomial_u chebyshev_polynomial_v chebyshev_polynomial_w "
    "shifted_chebyshev_polynomial_t shifted_chebyshev_polynomial_u shifted_chebyshev_polynomial_v "
    "shifted_chebyshev_polynomial_w hermite_polynomial_h hermite_polynomial_he "
    "laguerre_polynomial_l legendre_polynomial_p")
SPECIAL_RULES.update(_rules(CEPHES_SPECIAL + " zeta", Rule(CAST)))
NOT_DIFFERENTIABLE = NOT_DIFFERENTIABLE | frozenset(f"special_{n}" for n in CEPHES_SPECIAL.split())
COPIED = COPIED | frozenset((_COPIES + " histogram nuclear_norm linalg_cond linalg_tensorinv "
                             "linalg_tensorsolve").split())
SILENT_RESIZE = SILENT_RESIZE | frozenset(("narrow_copy", "range"))
UNCHECKED = UNCHECKED | frozenset((_COPIES + " chain_matmul cholesky_inverse cholesky_solve "
                                   "frobenius_norm histogram narrow_copy nuclear_norm threshold "
                                   "triangular_solve linalg_cholesky_ex linalg_cond linalg_inv_ex "
                                   "linalg_solve_ex linalg_tensorinv linalg_tensorsolve").split())
# LU, Householder and LDL functions (ember/_linalg_lu.py, _linalg_householder.py,
# _linalg_ldl.py): results of exactly out's dtype, but for geqrf's and orgqr's castable ones.
RULES.update({
    "lu_unpack": Rule(fields=_EXACT),
    "lu_solve": Rule(SAME),
    "geqrf": Rule(fields=((_castable("geqrf"),),)),
    "orgqr": Rule(_castable("orgqr")),
    "ormqr": Rule(_same("torch.ormqr: Expected input and result to have the same dtype, but "
                        "input has dtype{R} and result has dtype {O}")),
})
LINALG_RULES.update({
    **_rules("lu lu_factor lu_factor_ex ldl_factor ldl_factor_ex", Rule(fields=_EXACT)),
    "lu_solve": Rule(SAME),
    "ldl_solve": Rule(SAME),
    "householder_product": Rule(_castable("householder_product")),
})
UNCHECKED = UNCHECKED | frozenset("lu_solve lu_unpack geqrf orgqr ormqr linalg_lu "
                                  "linalg_lu_factor linalg_lu_factor_ex linalg_lu_solve "
                                  "linalg_ldl_factor linalg_ldl_factor_ex linalg_ldl_solve "
                                  "linalg_householder_product".split())
# Written with copy_ into outs of the right shape (no resizing), as torch's split_copy does.
NO_RESIZE = frozenset(("split_copy",))
# Written into the out's memory in C order whatever its strides (torch's narrow_copy kernel).
RAW_WRITE = frozenset(("narrow_copy",))
# Outputs written last to first (torch's histogram resizes bin_edges before hist).
WRITTEN_BACKWARDS = frozenset(("histogram",))
