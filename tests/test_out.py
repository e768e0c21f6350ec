"""``out=`` against torch for every function that takes it: values, the returned object, dtype
rules and their errors, resizing and its warning, autograd refusal, overlap, version counter."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import torch
from oracle import assert_same
from out_cases import ARRAYS, CASES, RANDOM

import ember

DTYPES = ("float32", "float64", "int64", "int32", "bool", "float16")
# Cases whose torch message is a C++ internal or names types in another spelling: compared by
# type and this phrase.
PHRASE = {"max_all": "", "min_all": "", "mvlgamma": "can't be cast to the desired output type",
          "ldexp": "", "median": "Expected tensor for", "nanmedian": "Expected tensor for",
          "mean_int": "can't be cast to the desired output type",
          "special.multigammaln": "can't be cast to the desired output type"}
# Extra calls with integer or bool inputs: the rules where the result is not float.
INT_CASES = {"add_int": "m.add(I, J)", "sin_int": "m.sin(I)", "sum_int": "m.sum(I, 1)",
             "eq_int": "m.eq(I, J)", "neg_int": "m.neg(I)", "where_int": "m.where(B, I, J)",
             "cat_int": "m.cat([I, J])", "mean_int": "m.mean(I.double(), 1)",
             "sum_bool": "m.sum(B, 1)", "pow_int": "m.pow(J, 2)", "div_int": "m.div(I, J)"}
ALL = {**{k: v for k, (v, _) in CASES.items()}, **INT_CASES}


def _inputs(m) -> dict:
    return {k: m.from_numpy(v.copy()) for k, v in ARRAYS.items()}


def run(m, case: str, out=None, grad: bool = False, **extra):
    """Evaluate a case with ``out=`` (and the inputs requiring grad if asked); returns the
    result, the warnings raised, the inputs."""
    ns = {"m": m, **_inputs(m), "out": out}
    if grad:
        for k in ("F", "G", "P", "M", "V", "V3", "Q", "U", "A", "B1", "B2", "S", "F3"):
            ns[k].requires_grad_(True)
    src = ALL[case]
    if out is not None:
        src = src[:-1] + ", out=out)"
    m.manual_seed(0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = eval(src, ns)  # noqa: S307 - the case table is ours
    if res is None and out is not None:  # split_copy & co. return nothing: compare the outs
        res = out
    return res, [str(w.message) for w in caught], ns


def _outcome(m, case, out):
    try:
        return run(m, case, out)[0], None
    except Exception as exc:  # noqa: BLE001 - the exception is what we compare
        return None, exc


def _empty(m, dt: str, n=0):
    return m.empty(n, dtype=getattr(m, dt))


def _compare(case: str, e, t, random: bool) -> None:
    for ev, tv in zip(e if isinstance(e, tuple) else (e,), t if isinstance(t, tuple) else (t,)):
        if random or case == "empty":
            assert tuple(ev.shape) == tuple(tv.shape) and str(ev.dtype)[6:] == str(tv.dtype)[6:]
        else:
            assert_same(ev, tv, atol=1e-3, rtol=1e-3, what=case)


def _same_error(case: str, e_exc, t_exc) -> None:
    assert t_exc is not None, f"torch raised nothing; ember raised {e_exc!r}"
    assert e_exc is not None, f"ember raised nothing; torch raised {t_exc!r}"
    assert type(e_exc) is type(t_exc), (e_exc, t_exc)
    phrase = PHRASE.get(case)
    if phrase is None:
        assert str(e_exc) == str(t_exc)
    else:
        assert phrase in str(e_exc) and phrase in str(t_exc), (e_exc, t_exc)


def _fields(case: str):
    return CASES[case][1] if case in CASES else None


@pytest.mark.parametrize("case", sorted(ALL))
def test_out_every_dtype_matches_torch(case):
    fields = _fields(case)
    for k in range(len(fields) if fields else 1):
        for dt in DTYPES:
            outs = []
            for m in (ember, torch):
                if fields:
                    outs.append(tuple(_empty(m, dt if i == k else f) for i, f in
                                      enumerate(fields)))
                else:
                    outs.append(_empty(m, dt))
            (e, e_exc), (t, t_exc) = _outcome(ember, case, outs[0]), _outcome(torch, case, outs[1])
            if t_exc is not None or e_exc is not None:
                _same_error(case, e_exc, t_exc)
                continue
            assert (e is outs[0]) if not fields else all(a is b for a, b in zip(e, outs[0]))
            assert type(e).__name__ == type(t).__name__
            _compare(case, e, t, case in RANDOM)


@pytest.mark.parametrize("case", sorted(ALL))
def test_out_resized_with_torch_warning(case):
    t_plain = run(torch, case)[0]
    plain = t_plain if isinstance(t_plain, tuple) else (t_plain,)
    results = {}
    for m in (ember, torch):
        outs = tuple(m.zeros(7, dtype=getattr(m, str(p.dtype)[6:])) for p in plain)
        res, caught, _ = run(m, case, outs if len(outs) > 1 else outs[0])
        results[m] = res, caught, outs
    (e, e_warn, e_outs), (t, t_warn, _) = results[ember], results[torch]
    e_warn, t_warn = ([w for w in ws if "resized" in w] for ws in (e_warn, t_warn))
    assert len(e_warn) == len(t_warn)
    for ew, tw in zip(e_warn, t_warn):
        # torch names kthvalue's and mode's shapes after a keepdim unsqueeze; the
        # decompositions' come in another order.
        if case not in ("kthvalue", "mode", "svd", "linalg.svd", "linalg.eigh"):
            assert tw.startswith(ew), (ew, tw)  # torch adds "(Triggered internally at ...)"
    assert all(o._version == 1 for o in e_outs)
    _compare(case, e, t, case in RANDOM)


@pytest.mark.parametrize("case", sorted(ALL))
def test_out_of_the_right_shape_is_written_in_place(case):
    """No warning, the same storage (a view of it sees the values), its strides kept."""
    t_plain = run(torch, case)[0]
    plain = t_plain if isinstance(t_plain, tuple) else (t_plain,)
    if any(p.ndim != 2 for p in plain):
        shaped = [lambda m, p=p: m.zeros(tuple(p.shape), dtype=getattr(m, str(p.dtype)[6:]))
                  for p in plain]
    else:  # a transposed (non-contiguous) out
        shaped = [lambda m, p=p: m.zeros(tuple(p.shape)[::-1],
                                         dtype=getattr(m, str(p.dtype)[6:])).T for p in plain]
    results = []
    for m in (ember, torch):
        outs = tuple(make(m) for make in shaped)
        strides = [o.stride() for o in outs]
        res, caught, _ = run(m, case, outs if len(outs) > 1 else outs[0])
        assert [w for w in caught if "resized" in w] == []
        assert [o.stride() for o in outs] == strides
        results.append(res)
    _compare(case, *results, case in RANDOM)


GRAD_CASES = sorted(c for c, (src, _) in CASES.items() if c not in RANDOM and any(
    k in src for k in ("F", "P", "M", "V", "Q", "U", "A", "B1", "S")) and "m.bernoulli" not in src)


@pytest.mark.parametrize("case", GRAD_CASES)
def test_out_refused_under_autograd(case):
    """torch refuses inputs that require grad, but lets non-differentiable functions run, and
    its composites (softmax, inner, quantile, ...) copy into out, which then requires grad."""
    t_plain = run(torch, case)[0]
    plain = t_plain if isinstance(t_plain, tuple) else (t_plain,)
    seen = []
    for m in (ember, torch):
        outs = tuple(m.empty(0, dtype=getattr(m, str(p.dtype)[6:])) for p in plain)
        try:
            run(m, case, outs if len(outs) > 1 else outs[0], grad=True)
            seen.append([o.requires_grad for o in outs])
        except RuntimeError as exc:
            seen.append(str(exc))
        with m.no_grad():
            outs = tuple(m.empty(0, dtype=getattr(m, str(p.dtype)[6:])) for p in plain)
            run(m, case, outs if len(outs) > 1 else outs[0], grad=True)
            assert not any(o.requires_grad for o in outs)
    assert seen[0] == seen[1]


def test_out_that_requires_grad_is_refused_but_written_under_no_grad():
    errors = []
    for m in (ember, torch):
        out = m.zeros(3, requires_grad=True)
        a = m.ones(3)
        with pytest.raises(RuntimeError) as info:
            m.add(a, a, out=out)
        errors.append(str(info.value))
        with pytest.raises(RuntimeError) as info:
            m.zeros(3, out=out)
        errors.append(str(info.value))
        with m.no_grad():
            assert m.mul(a, 3, out=out) is out
        assert out.requires_grad and out.tolist() == [3.0, 3.0, 3.0]
    assert errors[:2] == errors[2:]


def test_tutorial_matmul_and_mul_out():
    """The tensors tutorial: y3 = torch.rand_like(y1); torch.matmul(t, t.T, out=y3)."""
    for m in (ember, torch):
        m.manual_seed(0)
        t = m.ones(4, 4)
        t[:, 1] = 0
        y1 = t @ t.T
        y3 = m.rand_like(y1)
        assert m.matmul(t, t.T, out=y3) is y3 and m.equal(y3, y1)
        z3 = m.rand_like(t)
        assert m.mul(t, t, out=z3) is z3 and m.equal(z3, t * t)


def test_out_version_counter_and_views_see_the_write():
    for m in (ember, torch):
        base = m.zeros(2, 3)
        row = base[1]
        v = row._version
        m.add(m.ones(3), 1, out=row)
        assert base.tolist() == [[0.0] * 3, [2.0] * 3]
        assert row._version == v + 1 and base._version == v + 1


@pytest.mark.parametrize("call", [
    lambda m, x: m.add(x, 1, out=x.expand(2, 3)),  # out overlaps itself
    lambda m, x: m.add(x[:2], 1, out=x[1:]),  # partial overlap with an input
    lambda m, x: m.cat([x, x], out=x),
    lambda m, x: m.max(x, 0, out=m.empty(0)),  # a tuple is needed
    lambda m, x: m.max(x, 0, out=(m.empty(0),)),
    lambda m, x: m.add(x, x, out=(m.empty(0),)),
    lambda m, x: m.zeros(2, dtype=m.float64, out=m.empty(0)),
    lambda m, x: m.sum(x.reshape(1, 3), 1, dtype=m.float64, out=m.empty(0)),
])
def test_out_bad_calls_raise_as_torch(call):
    errors = []
    for m in (ember, torch):
        with pytest.raises(Exception) as info:
            call(m, m.arange(3.0))
        errors.append(info.value)
    assert type(errors[0]) is type(errors[1]), errors
    if type(errors[1]) is RuntimeError:
        assert str(errors[0]) == str(errors[1])


LENIENT_OVERLAP = {"addmm", "addmv"}  # torch checks their first input only; ember none


def _first_input(src: str) -> str | None:
    return next((n for n in re.findall(r"\b([A-Z][A-Z0-9]*)\b", src) if n in ARRAYS), None)


@pytest.mark.parametrize("case", sorted(c for c in ALL if c not in RANDOM and _first_input(ALL[c])))
def test_out_partly_overlapping_an_input(case):
    """out one element further along the storage of the first input: refused where torch
    refuses (elementwise, cat, gather, ...), written where torch does not check."""
    src = ALL[case]
    var, seen = _first_input(src), []
    for m in (ember, torch):
        ns = {"m": m, **_inputs(m)}
        res = eval(src, ns)  # noqa: S307
        first = (res if isinstance(res, tuple) else (res,))[0]
        x = ns[var]
        if x.dtype != first.dtype:
            pytest.skip("out's dtype differs from the input's: no storage to share")
        buf = m.zeros(x.numel() + 1 + first.numel(), dtype=x.dtype)
        buf[:x.numel()] = x.reshape(-1)
        ns[var] = buf[:x.numel()].view(x.shape)
        out = buf[1:1 + first.numel()].view(first.shape)
        ns["out"] = (out, *(m.empty(0, dtype=r.dtype) for r in res[1:])) \
            if isinstance(res, tuple) else out
        try:
            eval(src[:-1] + ", out=out)", ns)  # noqa: S307
            seen.append("ok")
        except RuntimeError as exc:
            seen.append(str(exc))
    assert seen[0] == seen[1] or case in LENIENT_OVERLAP


def test_out_full_overlap_with_an_input_is_allowed():
    for m in (ember, torch):
        x = m.arange(4.0)
        assert m.add(x, x, out=x) is x and x.tolist() == [0.0, 2.0, 4.0, 6.0]
        y = m.arange(6.0).reshape(2, 3)
        m.clamp(y, 1, 4, out=y)
        assert y.tolist() == [[1.0, 1.0, 2.0], [3.0, 4.0, 4.0]]


def test_out_keyword_only_where_torch_has_it():
    """The wrapped functions keep their names, docs and (out-less) behaviour."""
    assert ember.add.__name__ == "add" and ember.matmul.__doc__
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    e = ember.matmul(ember.tensor(x), ember.tensor(x.T))
    assert_same(e, torch.matmul(torch.tensor(x), torch.tensor(x.T)))


def test_warnings_point_at_the_callers_line():
    """The out= wrapper adds a frame: the resize warning and the deprecations inside wrapped
    functions still name the user's line."""
    a = ember.eye(3) * 2
    calls = [lambda: ember.add(a, a, out=ember.zeros(2)), lambda: ember.qr(a),
             lambda: ember.cholesky(a), lambda: a.qr(),
             lambda: ember.softmax(a, 0, out=ember.zeros(2)),
             # functions autocast wraps (a frame more): their warnings too
             lambda: ember.nn.functional.softmax(a), lambda: ember.nn.functional.log_softmax(a),
             lambda: ember.chain_matmul(a, a), lambda: ember.var(ember.ones(1)),
             lambda: ember.sum(a, 0, out=ember.zeros(2)), lambda: ember.cross(a, a)]
    for call in calls:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        assert caught and all(w.filename == __file__ for w in caught), \
            [(w.filename, str(w.message)[:40]) for w in caught]


def _torch_functions_with_out() -> dict:
    """Per namespace, the names torch's functions take ``out=`` under: the stub of torch's
    C functions (any overload), torch.functional's signatures, linalg/special docstrings."""
    import ast
    import inspect
    import os

    stub = os.path.join(os.path.dirname(torch.__file__), "_C", "_VariableFunctions.pyi")
    with open(stub) as f:
        tree = ast.parse(f.read())
    top = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)
           and "out" in [a.arg for a in n.args.kwonlyargs]}
    for name in dir(torch.functional):
        fn = getattr(torch.functional, name)
        if callable(fn) and not name.startswith("_"):
            try:
                if "out" in inspect.signature(fn).parameters:
                    top.add(name)
            except (TypeError, ValueError):
                pass
    found = {"": top}
    for ns in ("linalg", "special"):
        mod = getattr(torch, ns)
        found[ns] = {n for n in dir(mod) if "out=" in ((getattr(mod, n).__doc__ or "")
                                                       .strip().split("\n\n")[0])}
    return found


def test_out_on_exactly_the_functions_that_take_it_in_torch():
    from ember.ops._out import LINALG_RULES, RULES, SPECIAL_RULES

    torch_out = _torch_functions_with_out()
    for ns, rules in (("", RULES), ("linalg", LINALG_RULES), ("special", SPECIAL_RULES)):
        mod = getattr(ember, ns) if ns else ember
        names = {n for n in dir(mod) if not n.startswith("_") and callable(getattr(mod, n))
                 and not isinstance(getattr(mod, n), type)}
        assert names & set(rules) == names & torch_out[ns], ns
        for name in names & set(rules):
            assert getattr(getattr(mod, name), "__wrapped__", None) is not None, name


@pytest.mark.skipif(not (ember.cuda.is_available() and torch.cuda.is_available()),
                    reason="needs a GPU that both CuPy and torch see")
def test_out_on_cuda():
    """Written in place on the device, resized there, multi-output and factories too."""
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    results = []
    for m in (ember, torch):
        a = m.tensor(x, device="cuda")
        y, z, v, i = (m.empty(0, device="cuda") for _ in range(4))
        i = i.long()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m.matmul(a, a.T, out=y)
            m.add(a, 1, out=z)
            m.max(a, 1, out=(v, i))
            s = m.sum(a, 1, out=m.zeros(3, dtype=m.float64, device="cuda"))
            r = m.arange(5, out=m.zeros(2, device="cuda"))
        assert str(y.device).startswith("cuda") and str(s.device).startswith("cuda")
        results.append([t.cpu().numpy() for t in (y, z, v, i, s, r)])
    for e, t in zip(*results):
        np.testing.assert_allclose(e, t, rtol=1e-6)
