"""Activation layers; each calls its ``F`` function and prints as torch prints it. And
MultiheadAttention, which torch keeps here too (so checkpoints name
``torch.nn.modules.activation.MultiheadAttention``).

Most are a ``FunctionalLayer``: ``__init__`` stores the options named in ``_args``, and the
base class passes them to ``_fn`` and prints them.
"""

from __future__ import annotations

from ember import _creation
from ember._creation import empty
from ember._tensor import Tensor
from ember.nn import init
from ember.nn._functional import activation as F
from ember.nn._functional.attention import multi_head_attention_forward
from ember.nn.modules._functional_layer import FunctionalLayer
from ember.nn.modules.linear import NonDynamicallyQuantizableLinear
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter


class _Inplace(FunctionalLayer):
    """An activation whose only option is ``inplace``."""

    _args = ("inplace",)

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace


class ReLU(_Inplace):
    _fn = staticmethod(F.relu)


class SELU(_Inplace):
    _fn = staticmethod(F.selu)


class SiLU(_Inplace):
    _fn = staticmethod(F.silu)


class Mish(_Inplace):
    _fn = staticmethod(F.mish)


class Hardsigmoid(_Inplace):
    _fn = staticmethod(F.hardsigmoid)

    def extra_repr(self) -> str:
        return ""  # torch prints no ``inplace`` for Hardsigmoid and Hardswish


class Hardswish(Hardsigmoid):
    _fn = staticmethod(F.hardswish)


class Hardtanh(FunctionalLayer):
    _fn = staticmethod(F.hardtanh)
    _args = ("min_val", "max_val", "inplace")

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False,
                 min_value: float | None = None, max_value: float | None = None) -> None:
        super().__init__()
        if min_value is not None or max_value is not None:
            import warnings

            warnings.warn("keyword argument `min_value`/`max_value` is deprecated and will be "
                          "removed in future releases, use `min_val`/`max_val` instead.",
                          FutureWarning, stacklevel=2)
            min_val = min_value if min_value is not None else min_val
            max_val = max_value if max_value is not None else max_val
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace
        if self.max_val <= self.min_val:
            raise AssertionError


class ReLU6(Hardtanh):
    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""  # the bounds are fixed: not printed


class LeakyReLU(FunctionalLayer):
    _fn = staticmethod(F.leaky_relu)
    _args = ("negative_slope", "inplace")

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace


class ELU(FunctionalLayer):
    _fn = staticmethod(F.elu)
    _args = ("alpha", "inplace")

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace


class CELU(ELU):
    _fn = staticmethod(F.celu)


class RReLU(FunctionalLayer):
    """Randomized leaky ReLU: slopes ~ U(lower, upper) in training, their mean in eval."""

    _fn = staticmethod(F.rrelu)
    _args = ("lower", "upper", "training", "inplace")

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
                 inplace: bool = False) -> None:
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace


class PReLU(Module):
    """``max(0, x) + weight * min(0, x)`` with a learnable slope (one, or one per channel)."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None,
                 dtype=None) -> None:
        self.num_parameters = num_parameters
        super().__init__()
        self.init = init
        self.weight = Parameter(empty(num_parameters, dtype=dtype, device=device))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class GELU(FunctionalLayer):
    _fn = staticmethod(F.gelu)
    _args = ("approximate",)

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"  # quoted, as torch prints it


class Sigmoid(FunctionalLayer):
    _fn = staticmethod(F.sigmoid)


class Tanh(FunctionalLayer):
    _fn = staticmethod(F.tanh)


class LogSigmoid(FunctionalLayer):
    _fn = staticmethod(F.logsigmoid)


class Softsign(FunctionalLayer):
    _fn = staticmethod(F.softsign)


class Tanhshrink(FunctionalLayer):
    _fn = staticmethod(F.tanhshrink)


class Softplus(FunctionalLayer):
    _fn = staticmethod(F.softplus)
    _args = ("beta", "threshold")

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold


class Threshold(FunctionalLayer):
    _fn = staticmethod(F.threshold)
    _args = ("threshold", "value", "inplace")

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace


class Hardshrink(FunctionalLayer):
    _fn = staticmethod(F.hardshrink)
    _args = ("lambd",)

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def extra_repr(self) -> str:
        return f"{self.lambd}"  # torch prints the bare value


class Softshrink(Hardshrink):
    _fn = staticmethod(F.softshrink)


class GLU(FunctionalLayer):
    _fn = staticmethod(F.glu)
    _args = ("dim",)

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim


class Softmax2d(Module):
    """Softmax over the channel dim of (N, C, H, W) or (C, H, W) input."""

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D "
                             "instead")
        return F.softmax(input, -3, _stacklevel=5)


class _SoftmaxBase(FunctionalLayer):
    _args = ("dim",)

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        if not hasattr(self, "dim"):
            self.dim = None

    def forward(self, input: Tensor) -> Tensor:
        # _stacklevel=5, as torch's layers pass: the frame the implicit-dim warning names
        return self._fn(input, self.dim, _stacklevel=5)


class Softmax(_SoftmaxBase):
    _fn = staticmethod(F.softmax)


class LogSoftmax(_SoftmaxBase):
    _fn = staticmethod(F.log_softmax)


class Softmin(_SoftmaxBase):
    _fn = staticmethod(F.softmin)


class MultiheadAttention(Module):
    """Attention over ``num_heads`` subspaces: ``softmax(q k^T / sqrt(d)) v``, projected."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim=None, vdim=None,
                 batch_first: bool = False, device=None, dtype=None) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads, self.dropout, self.batch_first = num_heads, dropout, batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")

        def empty(*shape):
            return Parameter(_creation.empty(*shape, dtype=dtype))

        if not self._qkv_same_embed_dim:
            self.q_proj_weight = empty(embed_dim, embed_dim)
            self.k_proj_weight = empty(embed_dim, self.kdim)
            self.v_proj_weight = empty(embed_dim, self.vdim)
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = empty(3 * embed_dim, embed_dim)
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = empty(3 * embed_dim)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias,
                                                        dtype=dtype)
        if add_bias_kv:
            self.bias_k = empty(1, 1, embed_dim)
            self.bias_v = empty(1, 1, embed_dim)
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        """xavier_uniform_ projections, zero biases, xavier_normal_ bias_k/v (as torch)."""
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask=None,
                need_weights: bool = True, attn_mask=None, average_attn_weights: bool = True,
                is_causal: bool = False):
        """Returns ``(attn_output, attn_weights or None)``; masks: True means "masked out"."""
        batched = query.ndim == 3
        if self.batch_first and batched:
            # Transposes keep the identities (q is k is v) that select the packed projection.
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = query.transpose(1, 0), key.transpose(1, 0)
                    value = key
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        out, weights = multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
            self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
            self.out_proj.weight, self.out_proj.bias, training=self.training,
            key_padding_mask=key_padding_mask, need_weights=need_weights, attn_mask=attn_mask,
            use_separate_proj_weight=not self._qkv_same_embed_dim,
            q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight,
            v_proj_weight=self.v_proj_weight, average_attn_weights=average_attn_weights,
            is_causal=is_causal)
        if self.batch_first and batched:
            return out.transpose(1, 0), weights
        return out, weights


__all__ = [
    "ReLU", "ReLU6", "SELU", "SiLU", "Mish", "Hardsigmoid", "Hardswish", "Hardtanh",
    "LeakyReLU", "ELU", "CELU", "PReLU", "GELU", "Sigmoid", "Tanh", "LogSigmoid", "Softsign",
    "Tanhshrink", "Softplus", "Threshold", "Softmax", "LogSoftmax", "Softmin", "Hardshrink",
    "Softshrink", "GLU", "Softmax2d", "RReLU", "MultiheadAttention",
]
