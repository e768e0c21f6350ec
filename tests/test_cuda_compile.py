"""ember.compile on cuda tensors: programs captured on host copies and replayed with CuPy,
elementwise runs fused into generated kernels, and ``mode="reduce-overhead"`` as CUDA graphs,
against eager ember on the GPU (and torch for a training run). The fusion pass's structure is
checked everywhere; the rest needs a GPU (skipped in CI)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.compiler.fusion import FusedKernel, fuse_elementwise
from ember.compiler.ir import Graph, Node, Value

GPU = ember.cuda.is_available() and torch.cuda.is_available()
needs_gpu = pytest.mark.skipif(not GPU, reason="needs a GPU that both CuPy and torch see")


def _val(name, shape=(4,), dtype=np.float32):
    v = Value(name, shape, np.dtype(dtype))
    v.storage = v
    return v


def test_fusion_merges_an_elementwise_run_and_keeps_what_is_read_later():
    kind = (4,)
    x, y = _val("x", kind), _val("y", (1,))
    x.kind = y.kind = "placeholder"
    a, b, c, d = (_val(n, kind) for n in "abcd")
    nodes = [Node(("ufunc", np.multiply, "__call__"), (x, 1.5), {}, (a,)),
             Node(("ufunc", np.tanh, "__call__"), (a,), {}, (b,)),
             Node(("ufunc", np.add, "__call__"), (b, y), {}, (c,)),
             Node(("method", "sum"), (a,), {}, (d,))]  # reads a: a is a kernel output
    g = Graph([x, y], nodes, [c, d])
    assert fuse_elementwise(g, ()) == 1
    kernel = g.nodes[0]
    assert isinstance(kernel.kind[1], FusedKernel) and kernel.outputs == (a, c)
    assert kernel.args == (x, y) and kernel.tuple_result
    body = kernel.kind[1].body
    assert "tanh(t0)" in body and "((float)1.5)" in body and "out1 = t2;" in body
    assert g.nodes[1].kind == ("method", "sum")


def test_fusion_leaves_mixed_dtypes_inplace_calls_and_lone_calls():
    x = _val("x")
    h = _val("h", dtype=np.float64)
    a, b, c = _val("a"), _val("b", dtype=np.float64), _val("c")
    nodes = [Node(("ufunc", np.exp, "__call__"), (x,), {}, (a,)),
             Node(("ufunc", np.add, "__call__"), (h, 1.0), {}, (b,)),  # other dtype
             Node(("ufunc", np.negative, "__call__"), (x,), {"out": (x,)}, (c,), writes=(x,))]
    g = Graph([x, h], nodes, [a, b, c])
    assert fuse_elementwise(g, ()) == 0 and len(g.nodes) == 3


def _mlp(lib):
    rng = np.random.default_rng(0)
    m = lib.nn.Sequential(lib.nn.Linear(20, 64), lib.nn.GELU(), lib.nn.Linear(64, 64),
                          lib.nn.Tanh(), lib.nn.Linear(64, 5))
    with lib.no_grad():
        for p in m.parameters():
            p.copy_(lib.tensor(rng.uniform(-0.3, 0.3, tuple(p.shape)), dtype=p.dtype))
    return m.cuda()


def _data(lib, *shape, seed=1):
    return lib.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32),
                      device="cuda")


def _program(compiled):
    from ember.compiler.runtime import compiled_function_of

    cf = compiled_function_of(compiled)
    assert cf.programs(), f"no program: {cf.breaks}"
    return cf.programs()[0]


@needs_gpu
@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
def test_compiled_mlp_on_cuda_equals_eager(mode):
    m = _mlp(ember)
    y = ember.tensor([0, 1, 2, 3, 4, 0, 1, 2], device="cuda")

    def loss_of(x):
        return ember.nn.functional.cross_entropy(m(x), y)

    cf = ember.compile(loss_of, mode=mode)
    for step in range(5):
        x = _data(ember, 8, 20, seed=step)
        got = cf(x)
        got.backward()
        g_got = [p.grad.cpu().numpy().copy() for p in m.parameters()]
        m.zero_grad()
        want = loss_of(x)
        want.backward()
        g_want = [p.grad.cpu().numpy().copy() for p in m.parameters()]
        m.zero_grad()
        assert got.device.type == "cuda"
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-5)
        for a, b in zip(g_got, g_want):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    prog = _program(cf)
    assert prog.gpu
    if mode:
        assert prog.forward.graph is not None, prog.forward.failed
        assert prog.backward.graph is not None, prog.backward.failed


@needs_gpu
def test_elementwise_chain_is_fused_on_cuda():
    def chain(x):
        y = x
        for _ in range(10):
            y = (y * 1.01 + 0.5).tanh() - x
        return y.sum()

    cf = ember.compile(chain)
    x = _data(ember, 1000).requires_grad_()
    for _ in range(3):
        got = cf(x)
        got.backward()
        g = x.grad.cpu().numpy().copy()
        x.grad = None
    want = chain(x)
    want.backward()
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-4)
    np.testing.assert_allclose(g, x.grad.cpu().numpy(), rtol=1e-4, atol=1e-5)
    prog = _program(cf)
    assert prog.kernels >= 2 and "CUDA:" in prog.code()


@needs_gpu
def test_compiled_cnn_with_batchnorm_and_dropout_on_cuda_equals_eager():
    def make():
        ember.manual_seed(0)
        return ember.nn.Sequential(
            ember.nn.Conv2d(1, 4, 3, padding=1), ember.nn.BatchNorm2d(4), ember.nn.ReLU(),
            ember.nn.MaxPool2d(2), ember.nn.Flatten(), ember.nn.Dropout(0.25),
            ember.nn.Linear(4 * 4 * 4, 10)).cuda()

    x, y = _data(ember, 6, 1, 8, 8), ember.tensor([1, 2, 3, 4, 5, 6], device="cuda")
    runs = []
    for compiled in (False, True):
        m = make()
        opt = ember.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        fwd = ember.compile(m) if compiled else m
        ember.manual_seed(5)
        losses = []
        for _ in range(6):
            opt.zero_grad()
            loss = ember.nn.functional.cross_entropy(fwd(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        runs.append((losses, m[1].running_mean.cpu().numpy()))
    np.testing.assert_allclose(runs[0][0], runs[1][0], rtol=1e-5)
    np.testing.assert_allclose(runs[0][1], runs[1][1], rtol=1e-5, atol=1e-7)


@needs_gpu
@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
def test_compiled_optimizer_step_on_cuda_equals_eager(opt_name):
    results = []
    for compiled in (False, True):
        m = _mlp(ember)
        opt = getattr(ember.optim, opt_name)(m.parameters(), lr=1e-2)
        step = ember.compile(opt.step) if compiled else opt.step
        for i in range(5):
            opt.zero_grad()
            m(_data(ember, 8, 20, seed=i)).square().mean().backward()
            step()
        results.append([p.detach().cpu().numpy() for p in m.parameters()])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


@needs_gpu
def test_reduce_overhead_refuses_a_backward_after_its_saved_values_were_overwritten():
    m = _mlp(ember)
    cf = ember.compile(lambda x: m(x).sum(), mode="reduce-overhead")
    for i in range(3):
        cf(_data(ember, 8, 20, seed=i)).backward()
    first = cf(_data(ember, 8, 20, seed=7))
    second = cf(_data(ember, 8, 20, seed=8))
    second.backward()
    with pytest.raises(RuntimeError, match="overwritten by a subsequent run"):
        first.backward()


@needs_gpu
def test_training_compiled_with_cuda_graphs_matches_torch():
    losses = {}
    for lib in (ember, torch):
        m = _mlp(lib)
        opt = lib.optim.SGD(m.parameters(), lr=0.1)
        y = lib.tensor([0, 1, 2, 3, 4, 0, 1, 2], device="cuda")
        def loss_of(x, lib=lib, m=m, y=y):
            return lib.nn.functional.cross_entropy(m(x), y)

        fwd = ember.compile(loss_of, mode="reduce-overhead") if lib is ember else loss_of
        out = []
        for i in range(20):
            opt.zero_grad()
            loss = fwd(_data(lib, 8, 20, seed=i % 4))
            loss.backward()
            opt.step()
            out.append(loss.item())
        losses[lib.__name__] = out
    np.testing.assert_allclose(losses["ember"], losses["torch"], rtol=1e-4, atol=1e-5)


# --- the GPU code path simulated on the CPU: NumPy stands in for CuPy, and a small
# interpreter evaluates each generated kernel's C body (so its arithmetic is checked too)

_C_FUNCS = {"exp": "np.exp", "log": "np.log", "tanh": "np.tanh", "sqrt": "np.sqrt",
            "pow": "np.power", "fabs": "np.fabs", "expm1": "np.expm1", "log1p": "np.log1p",
            "log2": "np.log2", "sin": "np.sin", "cos": "np.cos"}


def _interpret(kernel, *arrays):
    import re

    env = {"np": np, **{f"in{i}": np.asarray(a) for i, a in enumerate(arrays)}}
    outs = {}
    for stmt in filter(None, (s.strip() for s in kernel.body.split(";"))):
        decl = re.match(r"(float|double) (t\d+) = (.*)", stmt)
        if decl is None:
            out, t = (s.strip() for s in stmt.split("="))
            outs[int(out[3:])] = env[t]
            continue
        ctype, name, expr = decl.groups()
        expr = expr.replace(f"(({ctype})", "(")
        pick = re.match(r"\(\((.*)\) ([<>]) \((.*)\) \|\|", expr)
        if pick:  # maximum / minimum
            expr = f"np.{'maximum' if pick[2] == '>' else 'minimum'}({pick[1]}, {pick[3]})"
        for c, py in _C_FUNCS.items():
            expr = re.sub(rf"\b{c}\(", f"{py}(", expr)
        env[name] = np.asarray(eval(expr, env)).astype(  # noqa: S307 - our generated C
            np.float32 if ctype == "float" else np.float64)
    res = [outs[i] for i in range(kernel.n_out)]
    return res[0] if len(res) == 1 else tuple(res)


@pytest.fixture
def simulated_gpu(monkeypatch):
    from ember.compiler import codegen, fusion, gpu, program, validate

    shim = gpu.CupyNumpy(np)
    monkeypatch.setattr(program, "_on_gpu", lambda tensors: True)
    for mod in (codegen, program, validate):
        monkeypatch.setattr(mod, "gpu_namespace", lambda graphs=False: shim)
    monkeypatch.setattr(codegen, "device_object", lambda obj: obj)
    monkeypatch.setattr(fusion.FusedKernel, "__call__", _interpret)
    yield
    ember.compiler.reset()


def _mlp_cpu():
    ember.manual_seed(0)
    return ember.nn.Sequential(ember.nn.Linear(8, 16), ember.nn.GELU(), ember.nn.Linear(16, 16),
                               ember.nn.Tanh(), ember.nn.Linear(16, 4))


def test_gpu_code_path_simulated_on_the_cpu(simulated_gpu):
    """Fused kernels, ``out=`` as CuPy takes it, an optimizer's 0-d step count kept on NumPy
    (``onp``): the GPU program of a training step equals eager ember."""
    from ember.compiler.runtime import compiled_function_of

    results = []
    for compiled in (False, True):
        m = _mlp_cpu()
        opt = ember.optim.Adam(m.parameters(), lr=1e-2)
        y = ember.tensor([0, 1, 2, 3, 0])

        def loss_of(x, m=m, y=y):
            return ember.nn.functional.cross_entropy(m(x), y)

        fwd = ember.compile(loss_of) if compiled else loss_of
        step = ember.compile(opt.step) if compiled else opt.step
        losses = []
        for i in range(4):
            opt.zero_grad()
            loss = fwd(ember.tensor(np.random.default_rng(i).standard_normal((5, 8)),
                                    dtype=ember.float32))
            loss.backward()
            step()
            losses.append(loss.item())
        results.append((losses, [p.detach().numpy().copy() for p in m.parameters()]))
        if compiled:
            fw, st = compiled_function_of(fwd), compiled_function_of(step)
            assert not fw.breaks and not st.breaks, (fw.breaks, st.breaks)
            assert fw.programs()[0].kernels >= 2 and fw.programs()[0].gpu
            assert "onp.add(state_0_0_step, 1" in st.programs()[0].code()
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-5)
    for a, b in zip(results[0][1], results[1][1]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_graph_matmul_equals_cupy_matmul(dtype):
    """ember's capturable GEMM kernel against cuBLAS: odd sizes, transposed views, batches
    with broadcasting, vectors, ``out=``."""
    import cupy

    from ember.compiler.gpu import graph_matmul

    rng = np.random.default_rng(0)

    def r(*shape):
        return cupy.asarray(rng.standard_normal(shape).astype(dtype))

    cases = [(r(1, 1), r(1, 1)), (r(5, 3), r(3, 7)), (r(64, 784), r(512, 784).T),
             (r(130, 17).T, r(130, 65)), (r(2, 3, 4, 5), r(5, 6)), (r(1, 4, 5), r(3, 5, 2)),
             (r(7), r(7, 3)), (r(4, 7), r(7)), (r(9), r(9)), (r(0, 3), r(3, 4))]
    tol = 1e-4 if dtype == "float32" else 1e-10
    for a, b in cases:
        want = cupy.matmul(a, b)
        got = graph_matmul(a, b)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got.get(), want.get(), rtol=tol, atol=tol)
    out = cupy.empty((64, 512), dtype)
    a, b = cases[2]
    assert graph_matmul(a, b, out=out) is out
    np.testing.assert_allclose(out.get(), cupy.matmul(a, b).get(), rtol=tol, atol=tol)
