"""One converter per ember op: ``fn(call) -> output name(s)``, emitting ONNX nodes.

A converter reads the op's keyword arguments and the arrays of the recording (``call.ins``,
``call.outs``) for static facts (shapes, dtypes); ``call.dyn_in`` / ``call.dyn_out`` name the
dims that follow ``dynamic_axes``, which a shape it writes must leave free.
"""

from __future__ import annotations

import math

import numpy as np
from onnx import helper

from ember.onnx._graph import CONVERTERS, Call, converts


def _same(onnx_op: str):
    return lambda c: c.node(onnx_op, c.x[:1])


for _name, _onnx in {"Relu": "Relu", "Sigmoid": "Sigmoid", "Tanh": "Tanh", "Exp": "Exp",
                     "Log": "Log", "Neg": "Neg", "Abs": "Abs", "Sqrt": "Sqrt", "Sin": "Sin",
                     "Cos": "Cos", "Tan": "Tan", "Asin": "Asin", "Acos": "Acos",
                     "Atan": "Atan", "Sinh": "Sinh", "Cosh": "Cosh", "Asinh": "Asinh",
                     "Acosh": "Acosh", "Atanh": "Atanh", "Ceil": "Ceil", "Floor": "Floor",
                     "Erf": "Erf", "Reciprocal": "Reciprocal", "Sign": "Sign", "Round": "Round",
                     "Clone": "Identity", "Alias": "Identity", "Hardswish": "HardSwish",
                     "Softsign": "Softsign"}.items():
    CONVERTERS[_name] = _same(_onnx)


def _scalar(c: Call, v) -> str:
    """A Python number as a 0-d constant of the op's output dtype."""
    return c.const(v, c.outs[0].dtype)


# --- arithmetic ------------------------------------------------------------------------------

def _alpha(c: Call, b: str) -> str:
    alpha = c.kw.get("alpha", 1)
    return b if alpha == 1 else c.node("Mul", [b, _scalar(c, alpha)])


@converts("Add")
def _add(c):
    return c.node("Add", [c.x[0], _alpha(c, c.x[1])])


@converts("Sub")
def _sub(c):
    return c.node("Sub", [c.x[0], _alpha(c, c.x[1])])


@converts("Rsub")
def _rsub(c):
    return c.node("Sub", [c.x[1], _alpha(c, c.x[0])])


@converts("RsubScalar")
def _rsub_scalar(c):
    return c.node("Sub", [_scalar(c, c.kw.get("other", 0)), _alpha(c, c.x[0])])


@converts("DivScalar")
def _div_scalar(c):
    return c.node("Div", [c.x[0], _scalar(c, c.kw["other"])])


for _name, _onnx in {"Mul": "Mul", "Div": "Div", "Maximum": "Max", "Minimum": "Min",
                     "Pow": "Pow"}.items():
    CONVERTERS[_name] = (lambda op: lambda c: c.node(op, c.x[:2]))(_onnx)


@converts("PowScalar")
def _pow_scalar(c):
    return c.node("Pow", [c.x[0], _scalar(c, c.kw["exponent"])])


@converts("Rsqrt")
def _rsqrt(c):
    return c.node("Reciprocal", [c.node("Sqrt", c.x[:1])])


@converts("ToCopy")
def _to_copy(c):
    return c.node("Cast", c.x[:1], to=helper.np_dtype_to_tensor_dtype(c.outs[0].dtype))


@converts("Clamp")
def _clamp(c):
    lo, hi = c.kw.get("lo"), c.kw.get("hi")
    return c.node("Clip", [c.x[0], "" if lo is None else _scalar(c, lo),
                           "" if hi is None else _scalar(c, hi)])


@converts("Where")
def _where(c):
    return c.node("Where", [c.g.value(c.kw["cond"]), c.x[0], c.x[1]])


@converts("MaskedFill")
def _masked_fill(c):
    return c.node("Where", [c.g.value(c.kw["mask"]), _scalar(c, c.kw["value"]), c.x[0]])


# --- activations ------------------------------------------------------------------------------

@converts("LeakyRelu")
def _leaky_relu(c):
    return c.node("LeakyRelu", c.x[:1], alpha=float(c.kw.get("negative_slope", 0.01)))


@converts("Elu")
def _elu(c):
    alpha, scale, input_scale = (c.kw.get(k, 1.0) for k in ("alpha", "scale", "input_scale"))
    x = c.x[0] if input_scale == 1 else c.node("Mul", [c.x[0], _scalar(c, input_scale)])
    if input_scale != 1:  # celu: alpha * (exp(x / alpha) - 1) for x < 0, x above
        neg = c.node("Elu", [x], alpha=float(alpha))
        return c.node("Where", [c.node("Greater", [c.x[0], _scalar(c, 0)]), c.x[0], neg])
    y = c.node("Elu", [x], alpha=float(alpha))
    return y if scale == 1 else c.node("Mul", [y, _scalar(c, scale)])


@converts("Hardtanh")
def _hardtanh(c):
    return c.node("Clip", [c.x[0], _scalar(c, c.kw.get("min_val", -1.0)),
                           _scalar(c, c.kw.get("max_val", 1.0))])


@converts("Hardsigmoid")
def _hardsigmoid(c):
    return c.node("HardSigmoid", c.x[:1], alpha=1 / 6, beta=0.5)


@converts("Silu")
def _silu(c):
    return c.node("Mul", [c.x[0], c.node("Sigmoid", c.x[:1])])


@converts("Mish")
def _mish(c):
    return c.node("Mul", [c.x[0], c.node("Tanh", [c.node("Softplus", c.x[:1])])])


@converts("Softplus")
def _softplus(c):
    beta, threshold = c.kw.get("beta", 1.0), c.kw.get("threshold", 20.0)
    bx = c.x[0] if beta == 1 else c.node("Mul", [c.x[0], _scalar(c, beta)])
    soft = c.node("Softplus", [bx])
    soft = soft if beta == 1 else c.node("Div", [soft, _scalar(c, beta)])
    # above the threshold torch returns x itself
    return c.node("Where", [c.node("Greater", [bx, _scalar(c, threshold)]), c.x[0], soft])


@converts("LogSigmoid")
def _logsigmoid(c):
    return c.node("Neg", [c.node("Softplus", [c.node("Neg", c.x[:1])])])


@converts("Gelu")
def _gelu(c):
    x = c.x[0]
    if c.kw.get("approximate", "none") == "tanh":
        inner = c.node("Mul", [c.node("Add", [x, c.node("Mul", [
            _scalar(c, 0.044715), c.node("Pow", [x, _scalar(c, 3.0)])])]),
            _scalar(c, math.sqrt(2 / math.pi))])
        half = c.node("Add", [c.node("Tanh", [inner]), _scalar(c, 1.0)])
    else:
        half = c.node("Add", [c.node("Erf", [c.node("Mul", [x, _scalar(c, 1 / math.sqrt(2))])]),
                              _scalar(c, 1.0)])
    return c.node("Mul", [c.node("Mul", [x, half]), _scalar(c, 0.5)])


@converts("Softmax")
def _softmax(c):
    return c.node("Softmax", c.x[:1], axis=c.kw.get("dim", -1))


@converts("LogSoftmax")
def _log_softmax(c):
    return c.node("LogSoftmax", c.x[:1], axis=c.kw.get("dim", -1))


@converts("PreluKernel")
def _prelu(c):
    x, w = c.ins
    slope = c.x[1]
    if w.size > 1 and x.ndim > 2:  # torch's weight runs along dim 1
        slope = c.node("Reshape", [slope, c.ints([w.size] + [1] * (x.ndim - 2))])
    return c.node("PRelu", [c.x[0], slope])


@converts("Glu")
def _glu(c):
    a, b = c.node("Split", c.x[:1], 2, axis=c.kw.get("dim", -1), num_outputs=2) \
        if c.g.opset >= 18 else c.node("Split", c.x[:1], 2, axis=c.kw.get("dim", -1))
    return c.node("Mul", [a, c.node("Sigmoid", [b])])


# --- linear algebra, convolution, normalization ----------------------------------------------

@converts("Addmm")
def _addmm(c):
    bias, a, b = c.x
    return c.node("Gemm", [a, b, bias], alpha=float(c.kw.get("alpha", 1)),
                  beta=float(c.kw.get("beta", 1)))


for _name in ("Mm", "Bmm", "Mv", "Dot"):
    CONVERTERS[_name] = lambda c: c.node("MatMul", c.x[:2])


@converts("Convolution")
def _conv(c):
    pads = c.kw["pads"]
    return c.node("Conv", [n for n in c.x if n is not None],
                  strides=list(c.kw["stride"]), dilations=list(c.kw["dil"]),
                  pads=[p[0] for p in pads] + [p[1] for p in pads], group=c.kw["groups"],
                  kernel_shape=list(c.ins[1].shape[2:]))


@converts("ConvTranspose")
def _conv_transpose(c):
    x, w = c.ins[:2]
    stride, dil, pads = c.kw["stride"], c.kw["dil"], c.kw["pads"]
    natural = [(n - 1) * s - p[0] - p[1] + d * (k - 1) + 1
               for n, s, p, d, k in zip(x.shape[2:], stride, pads, dil, w.shape[2:])]
    return c.node("ConvTranspose", [n for n in c.x if n is not None], strides=list(stride),
                  dilations=list(dil), pads=[p[0] for p in pads] + [p[1] for p in pads],
                  group=c.kw["groups"], kernel_shape=list(w.shape[2:]),
                  output_padding=[o - n for o, n in zip(c.outs[0].shape[2:], natural)])


@converts("NativeBatchNorm")
def _batch_norm(c):
    gshape, sdims, _, cdims = c.kw["geom"]
    if c.kw.get("stats") is None or gshape is not None or sdims != cdims:
        return _normalize(c)
    mean, var = c.kw["running"] if c.kw.get("running") is not None else \
        (s.reshape(-1) for s in c.kw["stats"])
    return c.node("BatchNormalization", [c.x[0], c.x[1], c.x[2], c.g.value(mean),
                                         c.g.value(var)], epsilon=float(c.kw["eps"]))


@converts("NativeGroupNorm")
def _normalize(c):
    """Normalization with the statistics of this batch (group norm, instance norm, batch
    norm in training mode; the running statistics are not updated): over the dims ``sdims``
    of ``x`` viewed as ``gshape``, then the affine parameters viewed as ``ashape``."""
    gshape, sdims, ashape, _ = c.kw["geom"]
    x = c.x[0]
    if gshape is not None:
        shape = [0 if d in c.dyn_in[0] and d < c.ins[0].ndim and n == c.ins[0].shape[d]
                 else n for d, n in enumerate(gshape)]
        if any(d in c.dyn_in[0] for d, n in enumerate(shape) if n):
            c.fail("grouping a dynamic dim")
        x = c.node("Reshape", [x, c.ints(shape)])
    mean = _reduce(c, "ReduceMean", sdims, True, x)
    d = c.node("Sub", [x, mean])
    var = _reduce(c, "ReduceMean", sdims, True, c.node("Mul", [d, d]))
    y = c.node("Div", [d, c.node("Sqrt", [c.node("Add", [var, _scalar(c, c.kw["eps"])])])])
    if gshape is not None:
        y = c.node("Reshape", [y, c.node("Shape", c.x[:1])])
    ashape = c.ints(ashape)
    w, b = (c.node("Reshape", [n, ashape]) for n in c.x[1:3])
    return c.node("Add", [c.node("Mul", [y, w]), b])


@converts("NativeLayerNorm")
def _layer_norm(c):
    gshape, sdims = c.kw["geom"][:2]
    if gshape is not None:
        return _normalize(c)
    x = c.ins[0]
    w = c.x[1] if len(c.x) > 1 else c.const(np.ones(x.shape[sdims[0]:], x.dtype))
    b = c.x[2] if len(c.x) > 2 else c.const(np.zeros(x.shape[sdims[0]:], x.dtype))
    return c.node("LayerNormalization", [c.x[0], w, b], axis=sdims[0],
                  epsilon=float(c.kw["eps"]))


@converts("ScaledDotProductAttention")
def _sdpa(c):
    q, k, v = c.x
    nd = c.ins[1].ndim
    kt = c.node("Transpose", [k], perm=list(range(nd - 2)) + [nd - 1, nd - 2])
    s = c.node("Mul", [c.node("MatMul", [q, kt]), _scalar(c, c.kw.get("scale", 1.0))])
    if c.kw.get("bias") is not None:
        s = c.node("Add", [s, c.g.value(c.kw["bias"])])
    return c.node("MatMul", [c.node("Softmax", [s], axis=-1), v])


@converts("Embedding")
def _embedding(c):
    return c.node("Gather", [c.x[0], c.g.value(c.kw["indices"])], axis=0)


# --- pooling and padding -----------------------------------------------------------------------

def _ceil_mode(x, osize, ksize, stride, pad, dil) -> int:
    floor = [(n + 2 * p - d * (k - 1) - 1) // s + 1
             for n, k, s, p, d in zip(x.shape[2:], ksize, stride, pad, dil)]
    return int(list(floor) != list(osize))


@converts("MaxPool")
def _max_pool(c):
    k, s, p, d, o = (c.kw[n] for n in ("ksize", "stride", "pad", "dil", "osize"))
    return c.node("MaxPool", c.x[:1], kernel_shape=list(k), strides=list(s),
                  pads=list(p) * 2, dilations=list(d),
                  ceil_mode=_ceil_mode(c.ins[0], o, k, s, p, d)), None


@converts("AvgPool")
def _avg_pool(c):
    k, s, p, o, include_pad, divisor = c.kw["geom"]
    if divisor:
        c.fail("divisor_override does not export")
    ceil = _ceil_mode(c.ins[0], o, k, s, p, (1,) * len(k))
    return c.node("AveragePool", c.x[:1], kernel_shape=list(k), strides=list(s),
                  pads=list(p) * 2, count_include_pad=int(bool(include_pad)), ceil_mode=ceil)


@converts("AdaptiveAvgPool", "AdaptiveMaxPool")
def _adaptive_pool(c):
    x, osize = c.ins[0], c.kw["osize"]
    size = x.shape[2:]
    avg = c.entry.name.startswith("AdaptiveAvg")
    if all(o == 1 for o in osize):
        y = c.node("GlobalAveragePool" if avg else "GlobalMaxPool", c.x[:1])
    elif all(n % o == 0 for n, o in zip(size, osize)):
        k = [n // o for n, o in zip(size, osize)]
        y = c.node("AveragePool" if avg else "MaxPool", c.x[:1], kernel_shape=k, strides=k)
    else:
        c.fail("adaptive pooling exports only when the output size divides the input size")
    return y if avg else (y, None)


@converts("ConstantPadNd")
def _pad(c):
    pads = c.kw["pads"]
    return c.node("Pad", [c.x[0], c.ints([p[0] for p in pads] + [p[1] for p in pads]),
                          _scalar(c, c.kw.get("value", 0))], mode="constant")


# --- reductions --------------------------------------------------------------------------------

def _reduce(c: Call, op: str, dims, keepdim: bool, x: str | None = None) -> str:
    """``op`` over ``dims`` (None: all) of ``x`` (the op's input by default). ONNX's
    reductions took their axes as an attribute up to opset 17 (ReduceSum: up to 12)."""
    x = c.x[0] if x is None else x
    axes = None if dims is None else [int(d) for d in dims]
    if op == "ReduceSum" or c.g.opset >= 18:
        return c.node(op, [x] + ([] if axes is None else [c.ints(axes)]),
                      keepdims=int(keepdim))
    return c.node(op, [x], axes=axes, keepdims=int(keepdim))


for _name, _onnx in {"MeanDim": "ReduceMean", "Mean": "ReduceMean", "SumDim": "ReduceSum",
                     "Sum": "ReduceSum", "Amax": "ReduceMax", "Amin": "ReduceMin",
                     "ProdDim": "ReduceProd", "Prod": "ReduceProd",
                     "Logsumexp": "ReduceLogSumExp"}.items():
    CONVERTERS[_name] = (lambda op: lambda c: _reduce(
        c, op, c.kw.get("dims"), c.kw.get("keepdim", False)))(_onnx)


@converts("MaxDim", "MinDim")
def _max_dim(c):
    dim, keep = c.kw["dim"], int(c.kw.get("keepdim", False))
    is_max = c.entry.name.startswith("Max")
    vals = _reduce(c, "ReduceMax" if is_max else "ReduceMin", [dim], keep)
    idx = c.node("ArgMax" if is_max else "ArgMin", c.x[:1], axis=dim, keepdims=keep,
                 select_last_index=0)
    return vals, idx


@converts("Var")
def _var(c):
    dims, keep, corr = c.kw.get("dims"), c.kw.get("keepdim", False), c.kw.get("correction", 1)
    x = c.ins[0]
    axes = range(x.ndim) if dims is None else dims
    n = int(np.prod([x.shape[d] for d in axes]))
    if any(d in c.dyn_in[0] for d in axes):
        c.fail("a variance over a dynamic dim does not export")
    mean = _reduce(c, "ReduceMean", dims, True)
    sq = c.node("Mul", [c.node("Sub", [c.x[0], mean])] * 2)
    total = c.node("ReduceSum", [sq] + ([] if dims is None else [c.ints(dims)]),
                   keepdims=int(keep))
    return c.node("Div", [total, _scalar(c, max(n - corr, 0))])


@converts("Resample")  # interpolation, reflection / replication padding
def _resample(c):
    """ember resamples by one (out, in) matrix per trailing dim: a MatMul each (exact)."""
    x, nd = c.x[0], c.ins[0].ndim
    mats = c.kw["mats"]
    for i, m in enumerate(mats):
        d = nd - len(mats) + i
        if m is None:
            continue
        if d in c.dyn_in[0]:
            c.fail("resampling a dynamic dim")
        m = m.astype(c.outs[0].dtype)
        if d == nd - 1:
            x = c.node("MatMul", [x, c.const(np.ascontiguousarray(m.T))])
            continue
        perm = list(range(nd))
        perm[d], perm[nd - 2] = perm[nd - 2], perm[d]
        if d != nd - 2:
            x = c.node("Transpose", [x], perm=perm)
        x = c.node("MatMul", [c.const(m), x])
        if d != nd - 2:
            x = c.node("Transpose", [x], perm=perm)
    return x
