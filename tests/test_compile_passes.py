"""The compiler's peephole pass (``passes.simplify``) and the strided views replays make:
each rewrite fires where it is exact, never where it could change a result."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember._backend import strided_view
from ember.compiler import passes
from ember.compiler.ir import Graph, Node, Value
from ember.compiler.runtime import compiled_function_of


def _val(name, shape=(4,), kind="result", const=None):
    v = Value(name, shape, np.dtype(np.float32), kind=kind, const=const)
    v.storage = v
    return v


def _ufunc(fn, args, out, **kw):
    return Node(("ufunc", fn, "__call__"), tuple(args), {}, (out,), **kw)


def _negate_then_add(between=()):
    a, b = _val("a", kind="placeholder"), _val("b", kind="placeholder")
    n, s = _val("n"), _val("s")
    g = Graph([a, b], [_ufunc(np.negative, [b], n), *between, _ufunc(np.add, [a, n], s)], [s])
    return g, a, b, s


def test_negation_into_add_becomes_subtract():
    g, a, b, s = _negate_then_add()
    assert passes.simplify(g, (s,)) == 1
    [node] = g.nodes
    assert node.kind[1] is np.subtract and node.args == (a, b)


def test_negation_kept_when_its_operand_is_written_in_between():
    b_write = _val("w")
    g, a, b, s = _negate_then_add()
    write = Node(("ufunc", np.multiply, "__call__"), (g.placeholders[1], 2.0),
                 {"out": (g.placeholders[1],)}, (b_write,), writes=(g.placeholders[1],))
    g.nodes.insert(1, write)
    assert passes.simplify(g, (s,)) == 0
    assert [n.kind[1] for n in g.nodes] == [np.negative, np.multiply, np.add]


def test_negation_kept_when_read_elsewhere_or_kept():
    g, a, b, s = _negate_then_add()
    n = g.nodes[0].outputs[0]
    assert passes.simplify(g, (s, n)) == 0  # saved for the backward: must exist
    g, a, b, s = _negate_then_add()
    n = g.nodes[0].outputs[0]
    t = _val("t")
    g.nodes.append(_ufunc(np.exp, [n], t))
    g.outputs.append(t)
    assert passes.simplify(g, (s, t)) == 0


def test_scalar_of_an_owned_constant_is_folded_only_when_private():
    for writeable, folds in ((False, True), (True, False)):
        arr = np.array(3.0, np.float32)
        arr.flags.writeable = writeable
        c = _val("c", (), kind="constant", const=arr)
        x, r = _val("x", kind="placeholder"), _val("r", ())
        y = _val("y")
        g = Graph([x], [Node(("method", "__getitem__"), (c, ()), {}, (r,)),
                        _ufunc(np.subtract, [r, x], y)], [y])
        assert passes.simplify(g, (y,)) == int(folds)
        assert (r.kind == "constant") is folds and len(g.nodes) == 2 - folds


def _chain(x, y):
    z = x
    for _ in range(3):
        z = (1 - (z * 1.5).tanh()) - y
    return z.sum()


def _run(f, seed=0):
    rng = np.random.default_rng(seed)
    grads = []
    for _ in range(4):  # warm-up, capture, replays on new data
        xs = [ember.tensor(rng.standard_normal(8).astype(np.float32), requires_grad=True)
              for _ in range(2)]
        f(*xs).backward()
        grads.append([x.grad.numpy() for x in xs])
    return grads


def test_compiled_chain_sheds_negations_and_equals_eager_bit_for_bit(monkeypatch):
    f = ember.compile(_chain)
    eager = _run(_chain)
    for got, ref in zip(_run(f), eager):
        for a, b in zip(got, ref):
            np.testing.assert_array_equal(a, b)
    [prog] = compiled_function_of(f).programs()
    assert "np_add(" not in prog.bw_source and "[()]" not in prog.code()
    monkeypatch.setattr(passes, "simplify", lambda graph, keep: 0)
    plain = ember.compile(_chain)
    _run(plain)
    [unsimplified] = compiled_function_of(plain).programs()
    assert prog.bw_source.count("np_negative") < unsimplified.bw_source.count("np_negative")
    assert prog.n_ops < unsimplified.n_ops


def _cases():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    ro = a.copy()
    ro.flags.writeable = False
    return [(a, (2, 4, 6), (0, 24, 4)), (a.T, (6, 4), (4, 24)), (a[:, 1:3], (4, 2), (24, 4)),
            (ro, (4, 3), (24, 8)), (np.array(2.5), (5,), (0,)), (np.empty((0, 3)), (0, 3), (24, 8)),
            (a, (10, 10), (40, 4))]


@pytest.mark.parametrize("writeable", [False, True])
@pytest.mark.parametrize("case", range(7))
def test_strided_view_is_as_strided(case, writeable):
    arr, shape, strides = _cases()[case]
    ref = np.lib.stride_tricks.as_strided(arr, shape, strides, writeable=writeable)
    got = strided_view(arr, shape, strides, writeable)
    assert got.shape == ref.shape and got.strides == ref.strides
    assert got.flags.writeable == ref.flags.writeable
    if case != 6:  # (the last reads past the end: only its layout is defined)
        np.testing.assert_array_equal(got, ref)
    assert got.size == 0 or case == 6 or np.shares_memory(got, arr)


@pytest.mark.parametrize("n", [2 * 32768 + 1, 100_003])
def test_blocked_add_is_the_two_pass_update_bit_for_bit(n):
    from ember.optim.optimizer import blocked_add

    rng = np.random.default_rng(n)
    a, b = rng.standard_normal((2, n)).astype(np.float32)
    ref = a + b * np.float32(-0.01)
    blocked_add(b, -0.01, out=a)
    np.testing.assert_array_equal(a, ref)


def test_compiled_sgd_step_replays_one_blocked_update_per_large_parameter():
    def make():
        ember.manual_seed(0)
        w = ember.nn.Parameter(ember.randn(300, 300))
        small = ember.nn.Parameter(ember.randn(10))
        return [w, small], ember.optim.SGD([w, small], lr=0.1)

    (params, opt), (ref_params, ref_opt) = make(), make()
    step = ember.compile(opt.step)
    for i in range(4):
        for ps in (params, ref_params):
            for p in ps:
                p.grad = ember.full_like(p, 0.01 * (i + 1)) * p.detach().cos()
        step()
        ref_opt.step()
        for p, r in zip(params, ref_params):
            np.testing.assert_array_equal(p.detach().numpy(), r.detach().numpy())
    [prog] = compiled_function_of(step).programs()
    assert prog.fw_source.count("blocked_add(") == 1
