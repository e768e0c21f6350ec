"""ember.compile's compiler: captured programs replay what eager ember computes, for every op
family (values and gradients on fresh inputs at every call), recompile on new signatures,
break to eager where a program cannot follow, and train like eager runs."""

import gc
import logging
import weakref

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.compiler.runtime import CompiledFunctionBackward, Unsupported, compiled_function_of

R = np.random.default_rng(0)


def _arrays(shapes, seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) if isinstance(s, tuple) else s
            for s in shapes]


def _tensors(arrays, grad=True):
    return [ember.tensor(a, requires_grad=grad) if isinstance(a, np.ndarray) else a
            for a in arrays]


def _flat(out):
    return list(out) if isinstance(out, tuple | list) else [out]


def check_compiled(fn, *shapes, calls=3, rtol=1e-6, atol=1e-6):
    """``ember.compile(fn)`` gives eager ember's outputs and input gradients (for a random
    upstream gradient) at each of ``calls`` calls on new inputs, and captured a program."""
    cfn = ember.compile(fn)
    for k in range(calls):
        arrays = _arrays(shapes, seed=k)
        e_in, c_in = _tensors(arrays), _tensors(arrays)
        e_out, c_out = _flat(fn(*e_in)), _flat(cfn(*c_in))
        assert len(e_out) == len(c_out)
        rng = np.random.default_rng(100 + k)
        for e, c in zip(e_out, c_out):
            np.testing.assert_allclose(c.detach().numpy(), e.detach().numpy(), rtol=rtol,
                                       atol=atol)
            assert c.dtype == e.dtype and c.requires_grad == e.requires_grad
            if e.requires_grad:
                u = rng.standard_normal(tuple(e.shape)).astype(np.float32)
                e.backward(ember.tensor(u), retain_graph=True)
                c.backward(ember.tensor(u), retain_graph=True)
        for e, c in zip(e_in, c_in):
            if isinstance(e, ember.Tensor):
                assert (e.grad is None) == (c.grad is None)
                if e.grad is not None:
                    np.testing.assert_allclose(c.grad.numpy(), e.grad.numpy(), rtol=rtol,
                                               atol=atol)
    cf = compiled_function_of(cfn)
    assert cf.programs(), f"not captured: {cf.breaks}"
    return cf


IDX = ember.tensor([2, 0, 1, 1])
MASK = ember.tensor([[True, False, True, False]] * 3)
FAMILIES = {
    "pointwise": (lambda x, y: (x * y + x.exp() - y.sin() / (1 + x.abs())).tanh(),
                  (3, 4), (3, 4)),
    "broadcast_scalar": (lambda x, y: (x + y) * 2.5 - x.pow(2) + 1, (3, 4), (4,)),
    "reductions": (lambda x: (x.sum(1), x.mean(), x.var(0), x.amax(1), x.logsumexp(1),
                              x.norm(), x.max(1).values, x.prod(0)), (3, 4)),
    "views": (lambda x: (x.t().reshape(-1)[::2], x.unsqueeze(0).expand(2, 3, 4) * 1,
                         x.permute(1, 0)[1:, :2].flatten(), x.narrow(1, 1, 2).squeeze()),
              (3, 4)),
    "indexing": (lambda x: (x[IDX[:3]], x.gather(1, IDX.reshape(1, 4).expand(3, 4) % 4),
                            x.index_select(1, IDX), x.masked_fill(MASK, 0.5),
                            x[:, IDX] * 2), (3, 4)),
    "inplace": (lambda x: _inplace(x), (3, 4)),
    "joining": (lambda x, y: (ember.cat([x, y]), ember.stack([x, y], 1), *x.split([1, 2])),
                (3, 4), (3, 4)),
    "matmul": (lambda x, w, b: (x @ w, ember.bmm(b, b.transpose(1, 2)),
                                ember.einsum("ij,jk->ik", x, w)), (3, 4), (4, 5), (2, 3, 4)),
    "conv_pool": (lambda x, w: (F.max_pool2d(F.conv2d(x, w, padding=1), 2),
                                F.avg_pool2d(x, 2), F.adaptive_avg_pool2d(x, 3),
                                F.conv_transpose2d(x, w.transpose(0, 1), stride=2)),
                  (2, 3, 6, 6), (4, 3, 3, 3)),
    "norms": (lambda x, w: (F.batch_norm(x, None, None, w, w, training=True),
                            F.layer_norm(x, (5,)), F.group_norm(x, 2)), (4, 4, 5), (4,)),
    "activations": (lambda x: (F.relu(x), F.gelu(x), F.silu(x), F.softmax(x, 1),
                               F.log_softmax(x, 0), F.leaky_relu(x, 0.1), F.elu(x),
                               ember.sigmoid(x), F.hardtanh(x)), (3, 4)),
    "losses": (lambda x, y: (F.cross_entropy(x, IDX[:3] % 4), F.mse_loss(x, y),
                             F.binary_cross_entropy_with_logits(x, y.sigmoid()),
                             F.nll_loss(F.log_softmax(x, 1), IDX[:3])), (3, 4), (3, 4)),
    "scans_selection": (lambda x: (x.cumsum(1), x.sort(1).values, x.topk(2).values,
                                   ember.where(x > 0, x, x * 0.1), x.clamp(-0.5, 0.5)),
                        (3, 4)),
}


def test_max_pool_replays_its_data_dependent_kernel():
    """Max pooling looks at its data (NaN, -0.0, windows of padding only) to skip work, so a
    program records it as one call: each replay gives eager's bits and indices on new data,
    with and without the special values, and its gradient."""
    cfn = ember.compile(lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True))
    rng = np.random.default_rng(0)
    values = np.array([0.0, -0.0, 1.0, -np.inf, np.nan, 2.0], dtype=np.float32)
    for p_nan, p_neg0 in ((0.0, 0.0), (0.0, 0.0), (0.1, 0.2), (0.0, 0.3), (0.0, 0.0)):
        p = np.array([0.4 - p_neg0, p_neg0, 0.3, 0.2, p_nan, 0.1 - p_nan])
        x = rng.choice(values, (2, 3, 9, 10), p=p).astype(np.float32)
        x += (p_nan == p_neg0 == 0) * rng.standard_normal(x.shape).astype(np.float32)
        xe, xc = ember.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)
        (ev, ei), (cv, ci) = F.max_pool2d(xe, 3, 2, 1, return_indices=True), cfn(xc)
        np.testing.assert_array_equal(cv.detach().numpy().view(np.uint32),
                                      ev.detach().numpy().view(np.uint32))
        np.testing.assert_array_equal(ci.numpy(), ei.numpy())
        u = ember.tensor(rng.standard_normal(tuple(ev.shape)).astype(np.float32))
        ev.backward(u)
        cv.backward(u)
        np.testing.assert_array_equal(xc.grad.numpy(), xe.grad.numpy())
    assert len(compiled_function_of(cfn).programs()) == 1


def _inplace(x):
    y = x * 1
    y.add_(1)
    y[0] = y[1] * 2
    y = y * y
    return y.relu_()


@pytest.mark.parametrize("family", FAMILIES)
def test_each_op_family_replays_eager(family):
    fn, *shapes = FAMILIES[family]
    check_compiled(fn, *shapes)


def test_output_is_one_compiled_node_over_the_leaves():
    w = ember.randn(4, 3, requires_grad=True)
    f = ember.compile(lambda x: (x @ w).relu().sum())
    for _ in range(3):
        out = f(ember.randn(2, 4))
    assert type(out.grad_fn) is CompiledFunctionBackward
    assert out.grad_fn.name() == "CompiledFunctionBackward"
    assert [type(n).__name__ for n, _ in out.grad_fn.next_functions] == ["AccumulateGrad"]


def test_recompiles_on_a_new_signature_and_warns_past_the_limit(caplog):
    f = ember.compile(lambda x: x * 2 + 1)
    for n in (3, 3, 3, 4, 4):
        f(ember.randn(n))
    cf = compiled_function_of(f)
    assert len(cf.programs()) == 2
    with caplog.at_level(logging.WARNING):
        for n in range(5, 15):
            for _ in range(2):
                np.testing.assert_allclose(f(ember.ones(n)).numpy(), np.full(n, 3.0))
    assert "recompile_limit (8)" in caplog.text
    # guards also cover requires_grad, grad mode and argument values
    g = ember.compile(lambda x, k: x * k)
    for x, k in [(ember.ones(2), 2), (ember.ones(2), 2), (ember.ones(2), 3),
                 (ember.ones(2), 3), (ember.ones(2, requires_grad=True), 3)] * 2:
        assert g(x, k).tolist() == [k, k]
    assert len(compiled_function_of(g).programs()) == 3


def _reads(x):
    return x * float(x.sum())


def _branches(x):
    return x * 2 if x.sum() > 0 else x


def _prints(x):
    print(x)
    return x + 1


def _numpy(x):
    return ember.tensor(x.numpy() * 2)


def _masked(x):
    return x[x > 0]


@pytest.mark.parametrize("fn,phrase", [
    (_reads, "item"), (_branches, "__bool__"), (_prints, "printing a tensor"),
    (lambda x: x * x[0].item(), "item"), (lambda x: ember.tensor(x.tolist()), "tolist"),
    (_masked, "boolean mask"), (lambda x: x.nonzero(), "depends on the data"),
    (_numpy, "numpy"),
])
def test_graph_breaks_run_eagerly_and_fullgraph_raises(fn, phrase, capsys):
    f = ember.compile(fn)
    for k in range(3):
        x = ember.tensor(np.random.default_rng(k).standard_normal(4).astype(np.float32))
        out, want = f(x), fn(x)
        np.testing.assert_allclose(out.numpy(), want.numpy())
    cf = compiled_function_of(f)
    assert not cf.programs() and cf.breaks and phrase in cf.breaks[0], cf.breaks
    full = ember.compile(fn, fullgraph=True)
    full(x)  # the first call of a signature runs eagerly
    with pytest.raises(Unsupported, match=phrase):
        full(x)
    explained = ember.compiler.explain(fn)(x)
    assert explained.graph_break_count == 1 and phrase in str(explained)


def test_hooks_break_the_graph():
    m = ember.nn.Linear(3, 2)
    m.register_forward_hook(lambda mod, i, o: None)
    f = ember.compile(m)
    for _ in range(3):
        f(ember.randn(4, 3))
    assert "hooks" in compiled_function_of(f).breaks[0]


def test_dropout_replays_torch_draws_with_the_same_seed():
    m = ember.nn.Sequential(ember.nn.Linear(8, 8), ember.nn.Dropout(0.5))
    f = ember.compile(m)
    x = ember.randn(16, 8)
    for k in range(4):
        ember.manual_seed(k)
        got = f(x)
        ember.manual_seed(k)
        np.testing.assert_array_equal(got.detach().numpy(), m(x).detach().numpy())
    assert compiled_function_of(f).programs()


def test_graph_and_saved_values_are_freed_after_backward():
    w = ember.randn(50, 50, requires_grad=True)
    f = ember.compile(lambda x: (x @ w).tanh().sum())
    for _ in range(2):
        f(ember.randn(8, 50)).backward()
    out = f(ember.randn(8, 50))
    node = out.grad_fn
    saved = [weakref.ref(a) for a in node.saved_values if isinstance(a, np.ndarray)
             and a.base is None]
    assert saved
    ref = weakref.ref(node)
    out.backward()
    del out, node
    gc.collect()
    assert ref() is None and all(r() is None for r in saved)
    out = f(ember.randn(8, 50))
    out.backward(retain_graph=True)
    out.backward()  # retained: a second backward works
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out.backward()


def test_create_graph_through_a_compiled_region_runs_it_eagerly():
    f = ember.compile(lambda x: (x ** 3).sum())
    for k in range(3):
        x = ember.tensor([1.0, 2.0 + k], requires_grad=True)
        (g,) = ember.autograd.grad(f(x), x, create_graph=True)
        (h,) = ember.autograd.grad(g.sum(), x)
        np.testing.assert_allclose(g.detach().numpy(), 3 * x.detach().numpy() ** 2)
        np.testing.assert_allclose(h.numpy(), 6 * x.detach().numpy())


def test_module_compile_in_place_and_eager_backend():
    m = ember.nn.Linear(3, 2)
    m.compile()
    x = ember.randn(5, 3)
    for _ in range(3):
        out = m(x)
    assert type(out.grad_fn) is CompiledFunctionBackward
    np.testing.assert_allclose(out.detach().numpy(), m._call_impl(x).detach().numpy())
    eager = ember.compile(ember.nn.Linear(3, 2), backend="eager")
    for _ in range(3):
        assert type(eager(x).grad_fn).__name__ == "AddmmBackward0"


def test_show_code_names_values_after_ops_and_modules():
    m = ember.nn.Sequential(ember.nn.Linear(4, 3), ember.nn.ReLU())
    f = ember.compile(m)
    for _ in range(3):
        f(ember.randn(2, 4)).sum().backward()
    code = ember.compiler.show_code(f)
    assert "def forward(" in code and "def backward(" in code
    assert "# 0 (Linear) / Addmm" in code and "np_matmul" in code and "relu" in code


def _train(kind: str, compiled: bool, steps: int):
    nn = ember.nn
    ember.manual_seed(0)
    if kind == "mlp":
        model = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    elif kind == "cnn":
        model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                              nn.MaxPool2d(2), nn.Flatten(), nn.Linear(64, 16), nn.ReLU(),
                              nn.Dropout(0.25), nn.Linear(16, 10))
    else:
        model = _Lstm()
    opt = (ember.optim.SGD(model.parameters(), lr=0.05, momentum=0.9) if kind != "lstm"
           else ember.optim.Adam(model.parameters(), lr=1e-2))
    loss_fn = nn.CrossEntropyLoss()

    def fwd(x, y):
        out = model(x)
        return loss_fn(out.reshape(-1, 10), y.reshape(-1))
    step = opt.step
    if compiled:
        fwd, step = ember.compile(fwd, fullgraph=True), ember.compile(opt.step, fullgraph=True)
    rng = np.random.default_rng(1)
    ember.manual_seed(1)
    losses = []
    for _ in range(steps):
        if kind == "lstm":
            x, y = (ember.tensor(rng.integers(0, 10, (4, 6))) for _ in range(2))
        else:
            x = ember.tensor(rng.standard_normal((8, 1, 8, 8)).astype(np.float32))
            y = ember.tensor(rng.integers(0, 10, 8))
        loss = fwd(x, y)
        loss.backward()
        step()
        opt.zero_grad()
        losses.append(loss.item())
    return np.array(losses), [p.detach().numpy().copy() for p in model.parameters()]


class _Lstm(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = ember.nn.Embedding(10, 8)
        self.rnn = ember.nn.LSTM(8, 12, batch_first=True)
        self.out = ember.nn.Linear(12, 10)

    def forward(self, x):
        return self.out(self.rnn(self.emb(x))[0])


@pytest.mark.parametrize("kind", ["mlp", "cnn", "lstm"])
def test_seeded_training_compiled_equals_eager(kind):
    """100 steps (MLP, CNN with BatchNorm and Dropout, LSTM with Adam): the compiled loss
    and optimizer step give eager's losses and parameters."""
    el, ep = _train(kind, False, 100)
    cl, cp = _train(kind, True, 100)
    np.testing.assert_allclose(cl, el, rtol=1e-5, atol=1e-6)
    for a, b in zip(cp, ep):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_results_of_earlier_calls_are_never_overwritten():
    """Intermediates live in buffers the program keeps between calls; what a call returns
    or saves for backward never does."""
    w = ember.randn(6, 6, requires_grad=True)
    f = ember.compile(lambda x: ((x @ w).relu() * 2 + 1).tanh())
    xs = [ember.randn(4, 6) for _ in range(4)]
    outs = [f(x) for x in xs]
    for x, out in zip(xs, outs):
        np.testing.assert_array_equal(out.detach().numpy(),
                                      ((x @ w).relu() * 2 + 1).tanh().detach().numpy())
    for out in outs[1:]:
        out.sum().backward()  # each backward reads its own call's saved values
    g = w.grad.numpy().copy()
    w.grad = None
    for x in xs[1:]:
        ((x @ w).relu() * 2 + 1).tanh().sum().backward()
    np.testing.assert_allclose(g, w.grad.numpy(), rtol=1e-6)


def test_dynamo_and_compiler_namespaces():
    import torch

    assert ember._dynamo.config.recompile_limit == torch._dynamo.config.recompile_limit == 8
    assert set(ember.compiler.list_backends()) >= {"inductor", "cudagraphs"}
    f = ember.compile(lambda x: ember.compiler.disable(lambda y: y * 2)(x) + 1)
    g = ember.compile(lambda x: (ember._dynamo.graph_break(), x + 1)[1])
    for _ in range(3):
        assert f(ember.ones(2)).tolist() == [3.0, 3.0] and g(ember.ones(1)).tolist() == [2.0]
    assert "compiler.disable" in compiled_function_of(f).breaks[0]
    assert "graph_break" in compiled_function_of(g).breaks[0]
    ember._dynamo.config.cache_size_limit = 2
    try:
        h = ember.compile(lambda x: x + 1)
        for n in range(1, 6):
            h(ember.ones(n))
        assert len(compiled_function_of(h).cache) == 2
    finally:
        ember._dynamo.config.recompile_limit = 8
    assert not ember.compiler.is_compiling()
    ember.compiler.reset()
    assert not compiled_function_of(f).cache


def test_a_root_named_like_a_numbered_local_keeps_its_own_name():
    """A closure tensor named ``t1`` (a root) and the second ``t`` (transpose) local once got
    the same name in the generated code."""
    ember.manual_seed(0)
    m = ember.nn.Sequential(ember.nn.Linear(8, 16), ember.nn.Tanh(), ember.nn.Linear(16, 4),
                            ember.nn.Tanh(), ember.nn.Linear(4, 3))
    t1 = ember.tensor([0, 1, 2, 0, 1])
    cf = ember.compile(lambda x: ember.nn.functional.cross_entropy(m(x), t1))
    for _ in range(3):
        x = ember.randn(5, 8)
        got = cf(x)
        assert got.item() == ember.nn.functional.cross_entropy(m(x), t1).item()
    assert not compiled_function_of(cf).breaks


def test_modules_reached_through_default_arguments_are_roots():
    """``def f(x, m=model)``: the model's parameters get gradients, as in eager."""
    ember.manual_seed(0)
    model = ember.nn.Linear(3, 2)

    def f(x, m=model):
        return m(x).square().sum()

    cf = ember.compile(f)
    for _ in range(3):
        x = ember.randn(4, 3)
        model.zero_grad()
        cf(x).backward()
        got = model.weight.grad.numpy().copy()
        model.zero_grad()
        f(x).backward()
        np.testing.assert_allclose(got, model.weight.grad.numpy(), rtol=1e-6)
    assert compiled_function_of(cf).programs()
