"""ember on ``cuda:0`` (CuPy) against torch on CUDA: values, gradients, devices, errors,
training, checkpoints. Skipped where CuPy sees no GPU (CI); run on a GPU machine with
``pytest tests/test_cuda.py``."""

import gc
import io
import weakref

import numpy as np
import pytest
import torch
from oracle import arr, same

import ember

pytestmark = pytest.mark.skipif(
    not (ember.cuda.is_available() and torch.cuda.is_available()),
    reason="needs a GPU that both CuPy and torch see")


@pytest.fixture(autouse=True)
def _full_precision():
    # torch's cuDNN convolutions default to TF32; ember's CuPy GEMMs are full float32.
    old = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32 = old


def _on_gpu(lib, a: np.ndarray, grad: bool):
    t = lib.tensor(a).cuda()
    return t.requires_grad_() if grad and a.dtype.kind == "f" else t


def check_cuda(fn, *arrays, atol=1e-5, rtol=1e-4):
    """``fn(lib, *cuda_tensors)`` in ember and torch: outputs, their device, and the inputs'
    gradients (on the GPU) for a random upstream gradient."""
    res = {}
    for lib in (ember, torch):
        ins = [_on_gpu(lib, a, True) for a in arrays]
        out = fn(lib, *ins)
        assert out.device.type == "cuda", f"{lib.__name__} output on {out.device}"
        vals = [out.detach().cpu().numpy()]
        if out.requires_grad:
            up = np.random.default_rng(1).standard_normal(tuple(out.shape)).astype(
                vals[0].dtype)
            out.backward(lib.tensor(up).cuda())
            for i in ins:
                if i.requires_grad:
                    assert i.grad.device.type == "cuda"
                    vals.append(i.grad.cpu().numpy())
        res[lib.__name__] = vals
    assert len(res["ember"]) == len(res["torch"])
    for e, t in zip(res["ember"], res["torch"]):
        assert e.dtype == t.dtype and e.shape == t.shape
        np.testing.assert_allclose(e, t, atol=atol, rtol=rtol)


F = "nn.functional"
CASES = {
    "arith": (lambda m, x, y: (x * 2 + 1) / (y.abs() + 1) - x ** 2, (3, 4), (4,)),
    "unary": (lambda m, x: x.exp() + x.abs().log1p() + x.tanh() + x.sigmoid() + x.sin(), (5,)),
    "activations": (lambda m, x: m.nn.functional.gelu(x) + m.nn.functional.silu(x)
                    + m.nn.functional.softplus(x) + m.nn.functional.elu(x)
                    + m.nn.functional.leaky_relu(x, 0.1) + m.relu(x), (4, 5)),
    "reductions": (lambda m, x: x.sum(0) * x.mean(1, keepdim=True) + x.var(0)
                   + x.amax(1, keepdim=True), (3, 4)),
    "max_dim": (lambda m, x: x.max(1).values + x.min(1).values, (3, 4)),
    "softmax": (lambda m, x: m.softmax(x, 1) * m.log_softmax(x, 0), (3, 4)),
    "matmul": (lambda m, a, b: a @ b, (2, 3, 4), (4, 5)),
    "linear": (lambda m, x, w, b: m.nn.functional.linear(x, w, b), (6, 4), (5, 4), (5,)),
    "shape": (lambda m, x: x.view(6, 4).t().reshape(2, 12).permute(1, 0).contiguous()[::2],
              (2, 3, 4)),
    "cat_stack": (lambda m, x, y: m.cat([x, y], 1) * m.stack([x, y]).sum(0).repeat(1, 2),
                  (2, 3), (2, 3)),
    "index": (lambda m, x: x[m.tensor([0, 2, 2]).cuda()] + x[1:, ::2].sum(), (4, 5)),
    "gather": (lambda m, x: x.gather(1, m.tensor([[0, 0], [1, 3], [2, 2]]).cuda()), (3, 4)),
    "where_clamp": (lambda m, x: m.where(x > 0, x, x * 0.1).clamp(-0.5, 0.5), (3, 4)),
    "cumsum_sort": (lambda m, x: x.cumsum(1) + x.sort(1).values + x.topk(4, 1).values,
                    (3, 4)),
    "cross_entropy": (lambda m, x: m.nn.functional.cross_entropy(
        x, m.tensor([1, 0, 3]).cuda(), label_smoothing=0.1), (3, 4)),
    "losses": (lambda m, x, y: m.nn.functional.mse_loss(x, y) + m.nn.functional.l1_loss(x, y)
               + m.nn.functional.binary_cross_entropy_with_logits(x, y.sigmoid()),
               (3, 4), (3, 4)),
    "conv2d": (lambda m, x, w, b: m.nn.functional.conv2d(x, w, b, padding=1, stride=2),
               (2, 3, 9, 9), (4, 3, 3, 3), (4,)),
    "conv1d_groups": (lambda m, x, w: m.nn.functional.conv1d(x, w, padding=2, groups=2),
                      (2, 4, 8), (6, 2, 3)),
    "conv_transpose2d": (lambda m, x, w: m.nn.functional.conv_transpose2d(x, w, stride=2),
                         (2, 3, 5, 5), (3, 4, 3, 3)),
    "max_pool2d": (lambda m, x: m.nn.functional.max_pool2d(x, 3, 2, padding=1), (2, 3, 8, 8)),
    "avg_pool2d": (lambda m, x: m.nn.functional.avg_pool2d(x, 3, 2, padding=1,
                                                           count_include_pad=False),
                   (2, 3, 8, 8)),
    "adaptive_pool": (lambda m, x: m.nn.functional.adaptive_avg_pool2d(x, 3)
                      + m.nn.functional.adaptive_max_pool2d(x, 3), (2, 3, 8, 8)),
    "batch_norm": (lambda m, x, w, b: m.nn.functional.batch_norm(x, None, None, w, b, True),
                   (4, 3, 5, 5), (3,), (3,)),
    "layer_group_norm": (lambda m, x: m.nn.functional.layer_norm(x, (6,))
                         + m.nn.functional.group_norm(x, 2), (2, 4, 6)),
    "embedding": (lambda m, w: m.nn.functional.embedding(m.tensor([[0, 2], [2, 1]]).cuda(), w),
                  (4, 3)),
    "einsum": (lambda m, a, b: m.einsum("bij,jk->bik", a, b), (2, 3, 4), (4, 5)),
    "pad_interpolate": (lambda m, x: m.nn.functional.interpolate(
        m.nn.functional.pad(x, (1, 1, 1, 1)), scale_factor=2, mode="bilinear"), (1, 2, 3, 3)),
    "attention": (lambda m, q, k, v: m.nn.functional.scaled_dot_product_attention(
        q, k, v, is_causal=True), (2, 3, 4), (2, 3, 4), (2, 3, 4)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_op_on_gpu_matches_torch(name):
    fn, *shapes = CASES[name]
    check_cuda(fn, *(arr(*s) for s in shapes))


def test_double_backward_on_gpu():
    def fn(m, x):
        (g,) = m.autograd.grad((x ** 3).sum(), x, create_graph=True)
        return g * x
    check_cuda(fn, arr(5))


@pytest.mark.parametrize("k", range(9))
def test_device_answers_match_torch(k):
    cases = [
        lambda m: m.ones(2, device="cuda"), lambda m: m.ones(2).cuda().device,
        lambda m: (m.ones(2).to("cuda").is_cuda, m.ones(2).cuda().get_device()),
        lambda m: m.zeros_like(m.ones(2).cuda()).device,
        lambda m: m.ones(2).cuda().numpy(),  # TypeError: copy to host first
        lambda m: m.ones(2).cuda() + m.ones(2),  # two devices
        lambda m: m.ones(2).cuda() * m.tensor(3.0),  # a 0-d CPU tensor may join
        lambda m: m.ones(2, requires_grad=True).cuda(),  # ToCopyBackward0
        lambda m: (m.cuda.is_available(), m.cuda.device_count(), m.cuda.current_device()),
    ]
    same(cases[k])


def test_copy_between_devices_is_differentiable():
    for m in (ember, torch):
        x = m.ones(3, requires_grad=True)
        y = (x.cuda() * 2).cpu()
        assert type(y.grad_fn).__name__ == "ToCopyBackward0"
        y.sum().backward()
        assert x.grad.device.type == "cpu" and x.grad.tolist() == [2.0, 2.0, 2.0]


def _mlp(m):
    m.manual_seed(0)
    return m.nn.Sequential(m.nn.Flatten(), m.nn.Linear(784, 64), m.nn.ReLU(),
                           m.nn.Dropout(0.2), m.nn.Linear(64, 10))


def _cnn(m):
    m.manual_seed(0)
    nn = m.nn
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8 * 14 * 14, 10))


def _losses(m, build, device, opt_name, x):
    model = build(m).to(device)
    opt = (m.optim.SGD(model.parameters(), lr=0.1, momentum=0.9) if opt_name == "sgd"
           else m.optim.Adam(model.parameters(), lr=1e-3))
    x = m.tensor(x).to(device)
    y = m.tensor(np.arange(16) % 10).to(device)
    out = []
    for _ in range(4):
        opt.zero_grad()
        loss = m.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        out.append(loss.item())
    assert all(p.device.type == device for p in model.parameters())
    return out


@pytest.mark.parametrize("build,opt", [(_mlp, "sgd"), (_cnn, "adam")])
def test_training_on_gpu_follows_the_cpu_run(build, opt):
    # Same seed, same parameters and dropout masks (drawn on the CPU): the GPU run follows
    # ember's CPU run, which the rest of the suite pins to torch's.
    x = arr(16, 1, 28, 28)
    cpu = _losses(ember, build, "cpu", opt, x)
    gpu = _losses(ember, build, "cuda", opt, x)
    np.testing.assert_allclose(gpu, cpu, rtol=1e-4)


def test_optimizer_state_and_clipping_on_gpu():
    model = _mlp(ember).cuda()
    opt = ember.optim.Adam(model.parameters(), lr=1e-3)
    x, y = ember.randn(4, 1, 28, 28, device="cuda"), ember.tensor([1, 2, 3, 4], device="cuda")
    ember.nn.functional.cross_entropy(model(x), y).backward()
    norm = ember.nn.utils.clip_grad_norm_(model.parameters(), 0.01)
    assert norm.device.type == "cuda"
    total = sum(float((p.grad.cpu() ** 2).sum()) for p in model.parameters()) ** 0.5
    assert float(norm) > 0.01 and total == pytest.approx(0.01, rel=1e-4)
    opt.step()
    state = opt.state_dict()
    assert state["state"][0]["exp_avg"].device.type == "cuda"
    assert state["state"][0]["step"].device.type == "cpu"  # as torch keeps it
    # A state dict loaded from the CPU follows the parameters to the GPU, as in torch.
    cpu_state = {**state, "state": {k: {n: v.cpu() for n, v in st.items()}
                                    for k, st in state["state"].items()}}
    opt2 = ember.optim.Adam(model.parameters(), lr=1e-3)
    opt2.load_state_dict(cpu_state)
    assert opt2.state[model[1].weight]["exp_avg"].device.type == "cuda"
    opt2.step()


def test_checkpoint_locations_match_torch(tmp_path):
    model = _mlp(ember).cuda()
    path = tmp_path / "m.pth"
    ember.save(model.state_dict(), path)
    theirs = torch.load(path, weights_only=True)
    assert {v.device.type for v in theirs.values()} == {"cuda"}
    mine = ember.load(path, weights_only=True)
    assert {v.device.type for v in mine.values()} == {"cuda"}
    on_cpu = ember.load(path, map_location="cpu")
    assert {v.device.type for v in on_cpu.values()} == {"cpu"}
    fresh = _mlp(ember)
    fresh.load_state_dict(mine)  # copy_ from the GPU into CPU parameters
    for k, v in fresh.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), on_cpu[k].numpy())
    buf = io.BytesIO()
    torch.save(_mlp(torch).cuda().state_dict(), buf)
    buf.seek(0)
    assert {v.device.type for v in ember.load(buf).values()} == {"cuda"}


def test_graph_is_freed_after_backward_on_gpu():
    x = ember.randn(8, 8, device="cuda", requires_grad=True)
    y = (x @ x).relu().sum()
    node = weakref.ref(y.grad_fn)
    y.backward()
    del y
    gc.collect()
    assert node() is None
    assert x.grad.device.type == "cuda"


UNARY = ["exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "sigmoid", "abs", "neg", "floor",
         "ceil", "round", "trunc", "frac", "sign", "reciprocal", "rsqrt", "erf", "erfc",
         "erfinv", "lgamma", "digamma", "expm1", "log1p", "log2", "log10", "exp2", "square",
         "asin", "acos", "atan", "sinh", "cosh", "asinh", "atanh", "logit", "sum", "mean",
         "prod", "std", "var", "norm", "amax", "argmax", "median", "logsumexp:1", "cumsum:1",
         "cumprod:1", "logcumsumexp:1", "cummax:1", "cummin:1", "sort:1", "argsort:1",
         "softmax:1", "quantile:0.3", "nanquantile:0.3", "diag_embed", "diff", "count_nonzero",
         "unique_consecutive", "remainder:0.25", "pow:3", "clamp:0.4"]


@pytest.mark.parametrize("spec", UNARY)
def test_function_on_gpu_matches_torch(spec):
    name, _, arg = spec.partition(":")
    args = () if not arg else ((float(arg),) if "." in arg else (int(arg),))

    def fn(m, x):
        if name == "unique_consecutive":  # not differentiable (torch: its backward raises)
            x = x.detach()
        out = getattr(m, name)(x, *args)
        out = out[0] if isinstance(out, tuple) else out
        return out if out.dtype.is_floating_point else out.float()
    # Inputs in (0.1, 0.9): inside the domain of every function above.
    check_cuda(fn, arr(3, 4, low=0.1, high=0.9), atol=1e-5, rtol=2e-4)


class _HostOnly(ember.autograd.function.Op):
    node_name = "HostOnlyBackward0"

    @staticmethod
    def forward(ctx, x):
        return np.asarray(x) * 2  # NumPy-only array code


def test_an_op_without_a_gpu_path_says_so():
    x = ember.randn(4, 4, device="cuda")
    with pytest.raises(NotImplementedError, match="HostOnly is not implemented for cuda"):
        _HostOnly.apply(x)
    assert _HostOnly.apply(x.cpu()).device.type == "cpu"
