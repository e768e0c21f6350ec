"""Small namespaces added for API coverage: nn.attention (SDPBackend, sdpa_kernel) and the
attention flags of backends.cuda, ember.cpu, nn.utils fusion / skip_init / weight memory
formats, utils.data.StackDataset, against torch."""

import pickle
import warnings

import numpy as np
import pytest
import torch
from oracle import same

import ember


def test_sdp_backend_enum():
    same(lambda m: list(m.nn.attention.SDPBackend.__members__.items()))
    same(lambda m: (repr(m.nn.attention.SDPBackend.MATH), int(m.nn.attention.SDPBackend.ERROR),
                    m.nn.attention.WARN_FOR_UNFUSED_KERNELS))
    same(lambda m: (m.nn.attention.SDPBackend.__module__, m.nn.attention.SDPBackend.__qualname__,
                    m.nn.attention.SDPBackend.__name__))
    # found again under that qualified name (torch's pybind enum cannot be pickled)
    member = ember.nn.attention.SDPBackend.FLASH_ATTENTION
    assert pickle.loads(pickle.dumps(member)) is member


FLAGS = ["flash_sdp_enabled", "mem_efficient_sdp_enabled", "math_sdp_enabled",
         "cudnn_sdp_enabled"]


def _flags(lib):
    return [getattr(lib.backends.cuda, f)() for f in FLAGS]


def test_sdpa_kernel_sets_and_restores_flags():
    for lib in (ember, torch):
        A = lib.nn.attention
        before = _flags(lib)
        with A.sdpa_kernel(A.SDPBackend.MATH):
            inside = _flags(lib)
        with A.sdpa_kernel([A.SDPBackend.FLASH_ATTENTION, A.SDPBackend.CUDNN_ATTENTION]):
            both = _flags(lib)
        assert _flags(lib) == before
        if lib is ember:
            expected = (before, inside, both)
    assert expected == (before, inside, both)


def test_sdp_flag_switches():
    for lib in (ember, torch):
        cuda = lib.backends.cuda
        try:
            cuda.enable_flash_sdp(False)
            cuda.enable_math_sdp(False)
            assert not cuda.flash_sdp_enabled() and not cuda.math_sdp_enabled()
            assert cuda.mem_efficient_sdp_enabled()
        finally:
            cuda.enable_flash_sdp(True)
            cuda.enable_math_sdp(True)
        assert cuda.is_flash_attention_available() is False
        assert cuda.fp16_bf16_reduction_math_sdp_allowed() is False
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with cuda.sdp_kernel(enable_flash=False):
                assert not cuda.flash_sdp_enabled() and cuda.math_sdp_enabled()
    with pytest.warns(FutureWarning, match="sdp_kernel\\(\\)` is deprecated"):
        with ember.backends.cuda.sdp_kernel():
            pass


def test_sdpa_kernel_error():
    same(lambda m: m.nn.attention.sdpa_kernel("math").__enter__())


def test_attention_still_computes_inside_sdpa_kernel():
    q = ember.randn(1, 2, 3, 4)
    ref = ember.nn.functional.scaled_dot_product_attention(q, q, q)
    with ember.nn.attention.sdpa_kernel(ember.nn.attention.SDPBackend.MATH):
        out = ember.nn.functional.scaled_dot_product_attention(q, q, q)
    assert ember.equal(out, ref)


def test_cpu_module():
    same(lambda m: (m.cpu.is_available(), m.cpu.is_initialized(), m.cpu.current_device(),
                    m.cpu.device_count(), m.cpu.synchronize(), m.cpu.set_device("cpu")))


def _bn(lib, n):
    bn = lib.nn.BatchNorm2d(n) if n > 1 else lib.nn.BatchNorm1d(n)
    with lib.no_grad():
        bn.running_mean.copy_(lib.linspace(-1, 1, n))
        bn.running_var.copy_(lib.linspace(0.5, 2, n))
        bn.weight.copy_(lib.linspace(0.3, 1.3, n))
        bn.bias.copy_(lib.linspace(-0.2, 0.4, n))
    return bn.eval()


@pytest.mark.parametrize("bias", [True, False])
def test_fuse_conv_bn(bias):
    outs = []
    for lib in (ember, torch):
        lib.manual_seed(0)
        conv = lib.nn.Conv2d(3, 4, 3, bias=bias).eval()
        bn = _bn(lib, 4)
        x = lib.tensor(np.random.default_rng(0).standard_normal((2, 3, 5, 5)).astype("float32"))
        fused = lib.nn.utils.fuse_conv_bn_eval(conv, bn)
        assert type(fused.weight).__name__ == "Parameter" and fused is not conv
        np.testing.assert_allclose(fused(x).detach().numpy(), bn(conv(x)).detach().numpy(),
                                   atol=1e-5)
        outs.append(fused.bias.detach().numpy())
    np.testing.assert_allclose(outs[0], outs[1], atol=1e-6)


def test_fuse_linear_bn_and_errors():
    outs = []
    for lib in (ember, torch):
        lib.manual_seed(0)
        lin = lib.nn.Linear(3, 4).eval()
        bn = lib.nn.BatchNorm1d(4).eval()
        fused = lib.nn.utils.fuse_linear_bn_eval(lin, bn)
        w, b = lib.nn.utils.fuse_linear_bn_weights(lin.weight, lin.bias, bn.running_mean,
                                                   bn.running_var, bn.eps, bn.weight, bn.bias)
        outs.append((fused.weight.detach().numpy(), b.detach().numpy()))
    np.testing.assert_allclose(outs[0][0], outs[1][0], atol=1e-6)
    same(lambda m: m.nn.utils.fuse_conv_bn_eval(m.nn.Conv2d(1, 1, 1), m.nn.BatchNorm2d(1)))
    same(lambda m: m.nn.utils.fuse_linear_bn_eval(m.nn.Linear(1, 3).eval(),
                                                  m.nn.BatchNorm1d(2).eval()))


def test_skip_init():
    for lib in (ember, torch):
        lib.manual_seed(3)
        m = lib.nn.utils.skip_init(lib.nn.Linear, 4, 2)
        after = lib.rand(3)
        lib.manual_seed(3)
        assert lib.equal(after, lib.rand(3))  # no random draws were spent
        assert tuple(m.weight.shape) == (2, 4)
    same(lambda m: m.nn.utils.skip_init(m.nn.ReLU))


def test_convert_conv_weight_memory_format():
    for lib in (ember, torch):
        net = lib.nn.Sequential(lib.nn.Conv2d(3, 4, 2), lib.nn.ReLU(), lib.nn.Linear(2, 2))
        out = lib.nn.utils.convert_conv2d_weight_memory_format(net, lib.channels_last)
        assert out is net and net[0].weight.is_contiguous(memory_format=lib.channels_last)
        assert net[0].weight.stride() == (12, 1, 6, 3)


def test_stack_dataset():
    same(lambda m: (lambda d: (len(d), d[1]))(m.utils.data.StackDataset(
        m.utils.data.TensorDataset(m.arange(3)), [10, 11, 12])))
    same(lambda m: m.utils.data.StackDataset(a=[1, 2], b=[3, 4])[0])
    for fn in (lambda m: m.utils.data.StackDataset([1], b=[2]),
               lambda m: m.utils.data.StackDataset(),
               lambda m: m.utils.data.StackDataset([1, 2], [3])):
        same(fn)
    loader = ember.utils.data.DataLoader(ember.utils.data.StackDataset(
        x=ember.arange(4.0), y=ember.arange(4)), batch_size=2)
    batch = next(iter(loader))
    assert set(batch) == {"x", "y"} and batch["y"].tolist() == [0, 1]
