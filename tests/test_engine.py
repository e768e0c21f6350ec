"""The autograd engine: graph shape, accumulation, retain_graph, errors, memory."""

import gc
import weakref

import numpy as np
import pytest
import torch
from oracle import arr, check, fd_check, gradgrad_check

import ember


def test_grad_fn_names_and_edges_match_torch():
    def names(lib):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = lib.tensor([4.0, 5.0, 6.0], requires_grad=True)
        z = (x + y) * x
        w = z.sum()
        return [w.grad_fn.name(), z.grad_fn.name(),
                [type(n).__name__ if n else None for n, _ in z.grad_fn.next_functions],
                [nr for _, nr in z.grad_fn.next_functions]]
    assert names(ember) == names(torch)


def test_leaf_accumulator_is_shared_and_points_at_variable():
    x = ember.randn(3, requires_grad=True)
    a, b = x * 2, x * 3
    acc_a = a.grad_fn.next_functions[0][0]
    assert acc_a is b.grad_fn.next_functions[0][0]
    assert acc_a.variable is x
    assert type(acc_a).__name__ == "AccumulateGrad"


def test_scalar_constant_gets_none_edge():
    x = ember.randn(3, requires_grad=True)
    assert (x + 2).grad_fn.next_functions[1] == (None, 0)


@pytest.mark.parametrize("shape_a,shape_b", [((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((), (5,))])
def test_broadcast_grads_are_summed_back(shape_a, shape_b):
    check(lambda m, a, b: a * b + a, arr(*shape_a), arr(*shape_b))


def test_fan_out_and_diamond():
    check(lambda m, x: (x * x).exp() + x.tanh() * x, arr(4))

    def diamond(m, x):
        a = x * 2
        b, c = a.exp(), a.tanh()
        return b * c
    check(diamond, arr(3, 2))


def test_long_chain_does_not_recurse():
    x = ember.tensor([1.0], requires_grad=True)
    y = x
    for _ in range(10_000):
        y = y * 1.0001
    y.sum().backward()
    assert x.grad.item() == pytest.approx(1.0001 ** 10_000, rel=1e-3)


def test_grad_accumulates_across_calls():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    (x * 3).sum().backward()
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 6.0])


def test_grad_stored_is_not_aliased():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = ember.tensor([3.0, 4.0], requires_grad=True)
    (x + y).sum().backward()
    x.grad.mul_(10)
    np.testing.assert_allclose(y.grad.numpy(), [1.0, 1.0])
    g = ember.tensor([1.0, 1.0])
    x2 = ember.tensor([1.0, 2.0], requires_grad=True)
    x2.backward(g)
    assert x2.grad is not g
    g.mul_(5)
    np.testing.assert_allclose(x2.grad.numpy(), [1.0, 1.0])



@pytest.mark.parametrize("keep", [False, True])
def test_weight_grad_kept_only_when_no_one_else_sees_it(keep):
    # nn.Linear's weight gradient comes back through TBackward as a view; AccumulateGrad keeps
    # it without a copy only if nothing else can reach its memory (here: a hook that keeps the
    # pre-transpose gradient). Writing to .grad must then leave the hook's tensor alone (torch
    # steals it anyway and the two alias; ember copies instead).
    grads, x = [], arr(5, 4)
    for lib in (torch, ember):  # ember last: its tensors are checked after the loop
        lib.manual_seed(0)  # same seed, same Linear init in both
        lin = lib.nn.Linear(4, 3)
        seen = []
        wt = lin.weight.t()
        if keep:
            wt.register_hook(seen.append)
        (lib.tensor(x).mm(wt) + lin.bias).pow(2).sum().backward()
        g = lin.weight.grad
        assert g.is_contiguous() and g._base is None and tuple(g.shape) == (3, 4)
        grads.append(g.numpy().copy())
    before = [s.clone() for s in seen]
    lin.weight.grad.add_(1)
    assert len(seen) == keep and all(ember.equal(s, b) for s, b in zip(seen, before))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5)


def test_errors_match_torch():
    for lib in (ember, torch):
        x = lib.ones(3, requires_grad=True)
        with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar"):
            (x * 2).backward()
        with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
            lib.ones(3).sum().backward()
        y = (x * x).sum()
        y.backward()
        with pytest.raises(RuntimeError, match="Trying to backward through the graph a second"):
            y.backward()
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            x.add_(1)
        with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
            lib.autograd.grad((x * 2).sum(), [x, lib.ones(2, requires_grad=True)])
        with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires"):
            x.numpy()
        a = x * 1
        b = a.log()
        a.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            b.sum().backward()


def test_retain_graph_allows_second_backward():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0])


def test_graph_is_freed_after_backward():
    x = ember.randn(4, requires_grad=True)
    y = (x * 2).exp()
    node_ref = weakref.ref(y.grad_fn)
    out_ref = weakref.ref(y)
    loss = y.sum()
    loss.backward()
    assert y.grad_fn._saved is not None  # released marker, not the tensors
    del y, loss
    gc.collect(0)
    assert node_ref() is None and out_ref() is None


def test_saved_tensors_released_without_gc():
    x = ember.randn(4, requires_grad=True)
    h = x * 3
    y = h.exp()
    h_ref = weakref.ref(h)
    del h
    y.sum().backward()
    assert h_ref() is None  # no cycle kept the intermediate alive


def test_autograd_grad_create_graph_second_order():
    def f(lib, x):
        y = (x ** 3).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (g2,) = lib.autograd.grad(g.sum(), x)
        return g, g2
    x = arr(3)
    e = [t.detach() for t in f(ember, ember.tensor(x, requires_grad=True))]
    t = [t.detach() for t in f(torch, torch.tensor(x, requires_grad=True))]
    for a, b in zip(e, t):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5)


def test_backward_inputs_only_accumulates_there():
    for lib in (ember, torch):
        x = lib.ones(2, requires_grad=True)
        y = lib.ones(2, requires_grad=True)
        (x * y).sum().backward(inputs=[x])
        assert x.grad is not None and y.grad is None


def test_no_grad_and_set_grad_enabled():
    x = ember.ones(2, requires_grad=True)
    with ember.no_grad():
        assert not (x * 2).requires_grad
    with ember.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad

    @ember.no_grad()
    def f(t):
        return t * 2
    assert not f(x).requires_grad


def test_fd_and_gradgrad_on_core_ops():
    def f(a, b):
        return (a * b + a / (b * b + 1)).exp().tanh() - a.matmul(b.t()).sum(1, keepdim=True)
    a, b = arr(3, 2).astype(np.float64), arr(3, 2).astype(np.float64)
    fd_check(f, a, b)
    gradgrad_check(f, a, b)


# --- more engine behaviour, each compared with torch -----------------------------------------


def _same(fn):
    """``fn(lib)`` returns plain Python data; ember's must equal torch's."""
    e, t = fn(ember), fn(torch)
    assert e == t, f"ember {e!r} != torch {t!r}"
    return e


def _vals(t):
    return None if t is None else [round(float(v), 4) for v in t.detach().reshape(-1).tolist()]


@pytest.mark.parametrize("seed", range(6))
def test_execution_order_of_random_dag_matches_torch(seed):
    """Ready nodes run newest-first by creation; record the order with node pre-hooks."""
    def run(lib):
        rng = np.random.default_rng(seed)
        xs = [lib.tensor([0.5, 1.5], requires_grad=True) for _ in range(3)]
        pool = list(xs)
        for _ in range(12):
            a, b = (pool[i] for i in rng.integers(0, len(pool), 2))
            op = rng.integers(0, 4)
            pool.append(a * b if op == 0 else a + b if op == 1 else a.tanh() if op == 2
                        else (a - b).exp())
        order, names = [], {}
        for t in pool[3:]:
            node = t.grad_fn
            if node not in names:
                names[node] = f"{node.name()}_{len(names)}"
                node.register_prehook(lambda go, n=names[node]: order.append(n))
        for i, x in enumerate(xs):
            x.register_hook(lambda g, i=i: order.append(f"leaf{i}"))
        sum(t.sum() for t in pool[-4:]).backward()
        return order, [_vals(x.grad) for x in xs]
    _same(run)


def test_fan_out_many_uses_accumulate():
    def run(lib):
        x = lib.tensor([1.0, -2.0], requires_grad=True)
        ys = [x * float(i) for i in range(50)]
        total = ys[0]
        for y in ys[1:]:
            total = total + y * x
        total.sum().backward()
        return _vals(x.grad)
    _same(run)


def test_second_backward_error_message_is_torchs():
    def run(lib):
        x = lib.ones(2, requires_grad=True)
        y = (x.exp() * x).sum()
        y.backward()
        try:
            y.backward()
        except RuntimeError as e:
            return str(e)
    assert "Specify retain_graph=True" in _same(run)


def test_retain_graph_then_release_frees_saved():
    x = ember.randn(3, requires_grad=True)
    h = x * 2
    y = h * h
    h_ref = weakref.ref(h)
    del h
    loss = y.sum()
    loss.backward(retain_graph=True)
    assert h_ref() is not None  # still saved by the graph
    loss.backward()
    assert h_ref() is None
    np.testing.assert_allclose(x.grad.numpy(), 16 * x.detach().numpy(), rtol=1e-6)


def test_backward_inputs_non_leaf_and_errors():
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        h = x * 3
        (h * h).sum().backward(inputs=[h])
        out = [_vals(h.grad), x.grad is None, h.retains_grad]
        try:
            (x * 2).sum().backward(inputs=[])
        except RuntimeError as e:
            out.append(str(e))
        return out
    _same(run)


def test_grad_allow_unused_and_materialize():
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        z = lib.tensor([5.0], requires_grad=True)
        y = (x * x).sum()
        g = lib.autograd.grad(y, [x, z], allow_unused=True, retain_graph=True)
        m = lib.autograd.grad(y, [x, z], materialize_grads=True, retain_graph=True)
        out = [_vals(g[0]), g[1], _vals(m[1])]
        try:
            lib.autograd.grad(y, [z], materialize_grads=True, allow_unused=False)
        except ValueError as e:
            out.append(str(e))
        try:
            lib.autograd.grad(y, [lib.ones(1)])
        except RuntimeError as e:
            out.append(str(e))
        return out
    _same(run)


def test_grad_does_not_touch_dot_grad_and_create_graph_grad_has_history():
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        (g,) = lib.autograd.grad((x ** 3).sum(), x, create_graph=True)
        out = [x.grad is None, g.requires_grad, g.grad_fn is not None]
        (x ** 2).sum().backward(create_graph=True)
        out += [x.grad.requires_grad, _vals(x.grad)]
        return out
    _same(run)


def test_multiple_roots_and_grad_tensors():
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        a, b = x * 2, x.exp()
        lib.autograd.backward([a, b], [lib.tensor([1.0, -1.0]), lib.tensor([0.5, 0.5])])
        out = [_vals(x.grad)]
        try:
            lib.autograd.backward([x * 2], [lib.ones(3)])
        except RuntimeError as e:
            out.append(str(e).replace("torch.", "ember."))
        return out
    _same(run)


def test_non_leaf_grad_warning_matches_torch():
    import warnings

    def run(lib):
        x = lib.ones(2, requires_grad=True)
        y = x * 2
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            assert y.grad is None
        return [type(m.message).__name__ for m in w], "retain_grad()" in str(w[0].message)
    _same(run)


def test_requires_grad_propagation_and_leaves():
    def run(lib):
        x = lib.ones(2, requires_grad=True)
        c = lib.ones(2)
        out = [(x * c).requires_grad, (c * 2).requires_grad, x.is_leaf, (x * 2).is_leaf,
               x.detach().is_leaf, x.detach().requires_grad]
        with lib.no_grad():
            out.append((x * 2).requires_grad)
        try:
            (x * 2).requires_grad_(False)
        except RuntimeError as e:
            out.append(str(e)[:40])
        try:
            lib.ones(2, dtype=lib.int64).requires_grad_()
        except RuntimeError as e:
            out.append(str(e)[:40])
        return out
    _same(run)


def test_ten_thousand_chain_backward_and_graph_freed():
    x = ember.tensor([1.0], requires_grad=True)
    y = x
    for _ in range(10_000):
        y = y.tanh() + 0.5
    ref = weakref.ref(y.grad_fn)
    y.sum().backward()
    assert x.grad is not None
    del y
    gc.collect()
    assert ref() is None


def test_inplace_error_messages_name_the_op_as_torch():
    def run(lib):
        msgs = []
        x = lib.ones(2, requires_grad=True)
        for build in (lambda a: (a.log(), a.mul_(2)), lambda a: (a.exp(), None)):
            a = x * 1
            b, _ = build(a)
            if _ is None:
                b.mul_(2)  # ExpBackward0 saved its own output
            try:
                b.sum().backward()
            except RuntimeError as e:
                msgs.append(str(e).replace("torch.", "ember."))
        return msgs
    assert len(_same(run)) == 2


def test_grad_is_grads_batched():
    def run(lib):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * x.exp()
        (jac,) = lib.autograd.grad(y, x, lib.eye(3), is_grads_batched=True)
        return [_vals(r) for r in jac]
    _same(run)


def test_saved_attributes_on_nodes_like_torch():
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = lib.tensor([3.0, 4.0], requires_grad=True)
        m = x * y
        e = x.exp()
        out = [_vals(m.grad_fn._saved_self), _vals(m.grad_fn._saved_other),
               _vals(e.grad_fn._saved_result), m.grad_fn._saved_self is x]
        (m + e).sum().backward()
        try:
            m.grad_fn._saved_self
        except RuntimeError as err:
            out.append(str(err)[:60])
        try:
            m.grad_fn._saved_nothing
        except AttributeError:
            out.append("AttributeError")
        return out
    _same(run)


def test_backward_create_graph_warns_once_like_torch():
    import warnings

    def run(lib):
        lib.autograd._WARNED_CREATE_GRAPH.clear() if lib is ember else None
        x = lib.ones(2, requires_grad=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            (x * x).sum().backward(create_graph=True)
            (x * x).sum().backward(create_graph=True)
        return [str(m.message)[:60] for m in w if "reference cycle" in str(m.message)]
    e = run(ember)
    assert len(e) == 1 and e[0].startswith("Using backward() with create_graph=True")
