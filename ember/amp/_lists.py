"""torch 2.13's autocast op lists, in ember's public names.

torch's lists are the aten ops with an ``AutocastCPU`` kernel (``aten/src/ATen/autocast_mode.cpp``;
``torch._C._dispatch_has_kernel_for_dispatch_key(op, "AutocastCPU")`` lists them). Below are
those ember has, under every public name that reaches them: ``mm`` is ``ember.mm`` (and the
``Tensor.mm`` method, the same function), ``F.`` names are ``ember.nn.functional``'s,
``linalg.`` names ``ember.linalg``'s, and ``nn.RNNBase._run_dir`` is where nn.LSTM runs a layer
(torch's mkldnn_rnn_layer). Functions that only compose these (``hstack`` calls
``cat``, ``einsum`` and ``tensordot`` call ``bmm`` / ``mm`` in torch) are not listed: they are
cast through the listed ops they call, as in torch.

On torch's CPU lists but not in ember: _addmm_activation, _convolution,
_native_multi_head_attention (nn.MultiheadAttention's inference fast path; ember's attention
runs its linear / sdpa ops, which are cast), the fft_* ops, grid_sampler, polar, stft,
view_as_complex, cholesky_inverse, cholesky_solve, pinverse, triangular_solve, linalg_cond,
linalg_eig, linalg_eigvals, linalg_tensorinv, linalg_tensorsolve,
linalg_cholesky_ex, linalg_inv_ex, fractional_max_pool2d/3d, ctc_loss,
fake_quantize_per_tensor_affine.
"""

from __future__ import annotations

_CONV = "conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d"
_CONVS = _CONV + " " + " ".join("F." + n for n in _CONV.split())  # torch.* and F.* names

CPU_LOWER_PRECISION_FP = " ".join([
    _CONVS, "mm bmm matmul addmm addbmm baddbmm linalg.vecdot prelu F.prelu F.linear",
    "F.scaled_dot_product_attention nn.RNNBase._run_dir conv_tbc F.conv_tbc",
])
CPU_FP32 = " ".join([
    "prod quantile nanquantile cdist trace cholesky inverse qr svd",
    "linalg.cholesky linalg.eigh linalg.eigvalsh linalg.inv linalg.matrix_rank linalg.qr",
    "linalg.solve linalg.svd linalg.svdvals",
    # aten's lu_solve, _lu_with_info (torch.lu), geqrf, orgqr, ormqr and their linalg names
    "lu_solve lu geqrf orgqr ormqr linalg.householder_product linalg.lstsq",
    "F.avg_pool3d F.max_pool3d F.max_unpool2d F.max_unpool3d F.adaptive_avg_pool3d",
    "F.adaptive_max_pool3d F.pad",
    "F.binary_cross_entropy F.binary_cross_entropy_with_logits F.cosine_embedding_loss",
    "F.cross_entropy F.hinge_embedding_loss F.huber_loss F.kl_div F.l1_loss",
    "F.margin_ranking_loss F.mse_loss F.multi_margin_loss F.nll_loss F.poisson_nll_loss",
    "F.multilabel_margin_loss",
    "F.smooth_l1_loss F.soft_margin_loss F.triplet_margin_loss",
])
CPU_PROMOTE = "cat stack index_copy Tensor.index_copy"

# torch's CUDA lists (``AutocastCUDA`` kernels). Not in ember: _convolution,
# cudnn_convolution(_transpose), _thnn_fused_lstm_cell/gru_cell and the RNN cells (nn.LSTMCell
# and friends run ember's linear ops, which are cast), _scaled_dot_product_flash_attention,
# nll_loss2d (F.nll_loss covers both), grid_sampler, index_put (the
# out-of-place one; ``x[i] = v`` is index_put_, not listed), norm.Scalar/ScalarOpt_dim (torch's
# Python ``norm`` calls linalg.vector_norm, listed below).
CUDA_LOWER_PRECISION_FP = " ".join([
    _CONVS, "mm bmm matmul addmm addbmm baddbmm addmv addr mv einsum chain_matmul linalg.vecdot",
    "linalg.multi_dot prelu F.prelu F.linear F.scaled_dot_product_attention nn.RNNBase._run_dir",
    "conv_tbc F.conv_tbc",
])
CUDA_FP32 = " ".join([
    "acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh tan pow",
    "F.softplus F.layer_norm F.group_norm F.rms_norm frobenius_norm nuclear_norm",
    "F.cosine_similarity F.pdist cdist dist renorm logsumexp F.interpolate F.upsample",
    "F.poisson_nll_loss F.cosine_embedding_loss F.cross_entropy F.nll_loss",
    "F.hinge_embedding_loss F.kl_div F.l1_loss F.smooth_l1_loss F.huber_loss F.mse_loss",
    "F.margin_ranking_loss F.soft_margin_loss F.triplet_margin_loss F.multi_margin_loss",
    "F.binary_cross_entropy_with_logits F.multilabel_margin_loss",
    # composites whose torch code reaches a listed op first: F.normalize divides by
    # input.norm() (float32), and ``2 ** x`` is pow.Scalar
    "F.normalize Tensor.__rpow__",
])
# Run in float32 by passing ``dtype=float32`` when the first argument is eligible and no dtype
# was given (torch's fp32_set_opt_dtype): the output is float32, the input is not cast.
CUDA_FP32_SET_OPT_DTYPE = ("sum prod cumsum cumprod softmax log_softmax F.softmax F.log_softmax "
                           "linalg.vector_norm linalg.matrix_norm norm")
CUDA_PROMOTE = "addcdiv addcmul atan2 F.bilinear cross dot vdot scatter_add tensordot"
CUDA_BANNED = "F.binary_cross_entropy"


def _pad(input, pad, mode: str = "constant", value=None) -> str | None:
    """F.pad reaches reflection_pad1d/2d and replication_pad1d/2d/3d (listed), or
    reflection_pad3d, the circular and constant pads (not listed)."""
    n = len(pad)
    if mode == "replicate" and n in (2, 4, 6) or mode == "reflect" and n in (2, 4):
        return "fp32"
    return None


def _max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                return_indices=False) -> str | None:
    """F.max_pool3d is aten's max_pool3d (listed), or max_pool3d_with_indices (not)."""
    return None if return_indices else "fp32"


def _lstm_layer(self, w: dict, x, d, h, c) -> str | None:
    """nn.LSTM runs oneDNN's mkldnn_rnn_layer (listed) for each layer and direction on float32
    or bfloat16 input; with projections or float16 input, and for GRU and RNN, torch's default
    implementation (its linear ops are cast)."""
    oned = self.mode == "LSTM" and w["weight_hr"] is None and x.dtype.name in _MKLDNN_RNN
    return "lower_precision_fp" if oned else None


_MKLDNN_RNN = ("float32", "bfloat16")


def _interpolate(input, size=None, scale_factor=None, mode: str = "nearest", *args,
                 **kwargs) -> str | None:
    """F.interpolate reaches the upsample_* ops (listed for CUDA), or for mode "area"
    adaptive_avg_pool (not listed)."""
    return None if mode == "area" else "fp32"


def _table(**lists: str) -> dict:
    return {name: policy for policy, names in lists.items() for name in names.split()}


_CPU = {name: {"F.pad": _pad, "F.max_pool3d": _max_pool3d,
               "nn.RNNBase._run_dir": _lstm_layer}.get(name, policy)
        for name, policy in _table(lower_precision_fp=CPU_LOWER_PRECISION_FP, fp32=CPU_FP32,
                                   promote=CPU_PROMOTE).items()}
_CUDA = {name: {"F.interpolate": _interpolate, "F.upsample": _interpolate}.get(name, policy)
         for name, policy in _table(lower_precision_fp=CUDA_LOWER_PRECISION_FP, fp32=CUDA_FP32,
                                    fp32_set_opt_dtype=CUDA_FP32_SET_OPT_DTYPE,
                                    promote=CUDA_PROMOTE, banned=CUDA_BANNED).items()}
# name -> {device type: policy}; a policy is a string, or a function of the call's arguments
# that returns one (or None: not cast).
POLICIES: dict = {name: {dev: table[name] for dev, table in (("cpu", _CPU), ("cuda", _CUDA))
                         if name in table}
                  for name in {**_CPU, **_CUDA}}
