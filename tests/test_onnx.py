"""ember.onnx.export: every model runs in onnxruntime with ember's outputs (to 1e-5, float32),
and its graph passes onnx.checker. API, dynamic axes and errors: test_onnx_api.py."""

import io

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def run_onnx(model, args, **kw):
    """Export ``model(*args)``, check the graph, run it in onnxruntime on ``args``; returns
    (the ModelProto, onnxruntime's outputs, ember's outputs flattened)."""
    from ember.onnx._record import flatten

    args = args if isinstance(args, tuple) else (args,)
    buf = io.BytesIO()
    ember.onnx.export(model, args, buf, **kw)
    proto = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(proto, full_check=True)
    sess = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    tensors = flatten(args)
    feeds = {i.name: t.numpy() for i, t in zip(sess.get_inputs(), tensors)}
    with ember.no_grad():
        expected = [t.numpy() for t in flatten(model(*args))]
    return proto, sess.run(None, feeds), expected


def check(model, args, **kw):
    if isinstance(model, nn.Module):
        model.eval()
    proto, got, expected = run_onnx(model, args, **kw)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == e.shape and g.dtype == e.dtype
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)
    return proto


class Lambda(nn.Module):
    """``fn`` as a module; ``mods``: the modules it calls (registered, so that eval() and the
    exporter reach them)."""

    def __init__(self, fn, *mods):
        super().__init__()
        self.fn = fn
        self.mods = nn.ModuleList(mods)

    def forward(self, *args):
        return self.fn(*args)


@pytest.fixture(autouse=True)
def _seed():
    ember.manual_seed(0)


def test_mlp():
    net = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 8), nn.Tanh(),
                        nn.Linear(8, 3, bias=False), nn.Softmax(dim=-1))
    proto = check(net, ember.randn(4, 6))
    names = {i.name for i in proto.graph.initializer}
    assert {"0.weight", "0.bias", "2.weight", "2.bias", "4.weight"} <= names


ACTIVATIONS = [nn.ReLU(), nn.Sigmoid(), nn.Tanh(), nn.GELU(), nn.GELU(approximate="tanh"),
               nn.LeakyReLU(0.2), nn.ELU(0.5), nn.SELU(), nn.CELU(0.7), nn.Hardtanh(-0.5, 2.0),
               nn.ReLU6(), nn.Hardsigmoid(), nn.Hardswish(), nn.SiLU(), nn.Mish(),
               nn.Softplus(), nn.Softplus(beta=2.0, threshold=3.0), nn.LogSigmoid(),
               nn.Softmax(dim=1), nn.LogSoftmax(dim=-1), nn.PReLU(5), nn.PReLU(),
               nn.GLU(), nn.Softsign(), nn.Identity()]


@pytest.mark.parametrize("act", ACTIVATIONS, ids=lambda m: repr(m))
def test_activations(act):
    x = ember.randn(3, 5, 4) * 4
    check(nn.Sequential(act), x)


def test_cnn():
    net = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=2, bias=False), nn.BatchNorm2d(8),
        nn.ReLU(), nn.AvgPool2d(2), nn.Flatten(), nn.Linear(8 * 2 * 2, 10), nn.Dropout(0.5))
    for m in net.modules():  # running statistics that are not the initial 0 / 1
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-1, 1)
            m.running_var.uniform_(0.5, 2)
            m.weight.data.uniform_(0.5, 1.5)
    proto = check(net, ember.randn(2, 3, 16, 16))
    names = {i.name for i in proto.graph.initializer}
    assert {"1.running_mean", "1.running_var", "1.weight", "4.weight"} <= names
    assert "Conv" in {n.op_type for n in proto.graph.node}


@pytest.mark.parametrize("layer", [
    nn.MaxPool2d(3, stride=2, padding=1), nn.MaxPool2d(2, ceil_mode=True),
    nn.MaxPool2d(3, dilation=2), nn.AvgPool2d(3, stride=2, padding=1),
    nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False),
    nn.AdaptiveAvgPool2d(1), nn.AdaptiveAvgPool2d((3, 3)), nn.AdaptiveMaxPool2d(3),
    nn.AdaptiveMaxPool2d(1), nn.ZeroPad2d((1, 2, 0, 1)), nn.ConstantPad2d(1, 0.5),
    nn.Conv2d(4, 6, (3, 1), padding=(2, 0), dilation=2),
    nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1),
    nn.ConvTranspose2d(4, 4, 2, stride=2, groups=2), nn.BatchNorm2d(4).eval(),
    nn.BatchNorm2d(4, affine=False).eval(), nn.Upsample(scale_factor=2),
    nn.Upsample(size=(5, 13), mode="bilinear", align_corners=False),
    nn.Upsample(scale_factor=1.5, mode="bilinear", align_corners=True),
    nn.ReflectionPad2d((1, 2, 3, 0)), nn.ReplicationPad2d(2), nn.GroupNorm(2, 4),
    nn.GroupNorm(4, 4, affine=False), nn.InstanceNorm2d(4), nn.InstanceNorm2d(4, affine=True),
    nn.LocalResponseNorm(2),
], ids=lambda m: repr(m))
def test_spatial_layers(layer):
    check(layer, ember.randn(2, 4, 9, 9))


@pytest.mark.parametrize("layer", [
    nn.Conv1d(4, 6, 3, padding=1), nn.MaxPool1d(2), nn.AvgPool1d(3, stride=1),
    nn.BatchNorm1d(4).eval(), nn.ConvTranspose1d(4, 2, 3), nn.AdaptiveAvgPool1d(1),
    nn.Upsample(scale_factor=3, mode="linear"),
], ids=lambda m: repr(m))
def test_1d_layers(layer):
    check(layer, ember.randn(2, 4, 10))


def test_layer_norm_and_embedding():
    emb = nn.Embedding(20, 8, padding_idx=0)
    net = Lambda(lambda idx: nn.functional.layer_norm(emb(idx), (8,), emb.weight[1],
                                                      emb.weight[2]), emb)
    check(net, ember.randint(0, 20, (3, 5)))
    check(nn.LayerNorm((5, 8)), ember.randn(2, 5, 8))
    check(nn.LayerNorm(8, elementwise_affine=False), ember.randn(2, 5, 8))


class EmbedLSTM(nn.Module):
    def __init__(self, **kw):
        super().__init__()
        self.embed = nn.Embedding(30, 6)
        self.rnn = nn.LSTM(6, 5, **kw)
        self.head = nn.Linear(5 * (2 if kw.get("bidirectional") else 1), 4)

    def forward(self, tokens):
        out, (h, c) = self.rnn(self.embed(tokens))
        return self.head(out), h, c


@pytest.mark.parametrize("kw", [{}, {"num_layers": 2}, {"bidirectional": True},
                                {"num_layers": 2, "bidirectional": True, "batch_first": True},
                                {"bias": False}])
def test_embedding_lstm(kw):
    tokens = ember.randint(0, 30, (4, 3) if not kw.get("batch_first") else (3, 4))
    proto = check(EmbedLSTM(**kw), tokens)
    assert "LSTM" in {n.op_type for n in proto.graph.node}
    assert "embed.weight" in {i.name for i in proto.graph.initializer}


@pytest.mark.parametrize("cls", [nn.GRU, nn.RNN])
@pytest.mark.parametrize("kw", [{}, {"num_layers": 2, "bidirectional": True},
                                {"batch_first": True}])
def test_gru_rnn(cls, kw):
    check(cls(6, 5, **kw), ember.randn(4, 3, 6))


def test_rnn_with_initial_state_and_unbatched():
    lstm = nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    h0, c0 = ember.randn(4, 2, 4), ember.randn(4, 2, 4)
    check(Lambda(lambda x, h, c: lstm(x, (h, c)), lstm), (ember.randn(5, 2, 3), h0, c0))
    gru = nn.GRU(3, 4, num_layers=2)
    check(Lambda(lambda x, h: gru(x, h), gru), (ember.randn(5, 2, 3), ember.randn(2, 2, 4)))
    check(nn.RNN(3, 4, nonlinearity="relu"), ember.randn(5, 3))
    check(nn.LSTM(3, 4), ember.randn(5, 3))


@pytest.mark.parametrize("kw", [{}, {"norm_first": True, "activation": "gelu"},
                                {"batch_first": True}])
def test_transformer_encoder_layer(kw):
    layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.1, **kw)
    check(layer, ember.randn(5, 3, 16))


def test_transformer_encoder_with_mask():
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 2,
                                enable_nested_tensor=False)
    mask = nn.Transformer.generate_square_subsequent_mask(6)
    check(Lambda(lambda x: enc(x, mask=mask), enc), ember.randn(6, 2, 8))


def test_transformer_decoder_layer():
    dec = nn.TransformerDecoderLayer(8, 2, 16)
    check(dec, (ember.randn(4, 2, 8), ember.randn(6, 2, 8)))


@pytest.mark.parametrize("kw", [{"need_weights": False}, {"need_weights": True},
                                {"need_weights": True, "average_attn_weights": False}])
def test_multihead_attention(kw):
    mha = nn.MultiheadAttention(8, 2)
    q, k = ember.randn(4, 3, 8), ember.randn(6, 3, 8)
    check(Lambda(lambda q, k: mha(q, k, k, **kw), mha), (q, k))
    kv = nn.MultiheadAttention(8, 2, kdim=5, vdim=3, batch_first=True)
    check(Lambda(lambda q, k, v: kv(q, k, v, **kw), kv),
          (ember.randn(3, 4, 8), ember.randn(3, 6, 5), ember.randn(3, 6, 3)))


def test_scaled_dot_product_attention():
    q, k, v = ember.randn(2, 3, 5, 4), ember.randn(2, 3, 7, 4), ember.randn(2, 3, 7, 4)
    check(Lambda(lambda q, k, v: F.scaled_dot_product_attention(q, k, v)), (q, k, v))
    check(Lambda(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                                scale=0.3)), (q, k, v))


RESHAPES = {
    "view": lambda x: x.view(2, -1) * 2,
    "reshape_flatten": lambda x: x.reshape(2, 3, 20).flatten(1) + 1,
    "permute": lambda x: x.permute(3, 0, 2, 1).contiguous() / 3,
    "transpose": lambda x: x.transpose(1, 2) - 1,
    "t_mm": lambda x: x[0, 0] @ x[0, 0].t(),
    "matmul_bmm": lambda x: x.flatten(0, 1) @ x.flatten(0, 1).transpose(1, 2),
    "unsqueeze_squeeze": lambda x: x.unsqueeze(1).squeeze(1)[:, :1].squeeze(),
    "cat": lambda x: ember.cat([x, x * 2, x[:, :1]], dim=1),
    "stack": lambda x: ember.stack([x, -x], dim=2),
    "split_chunk": lambda x: x.split([1, 2], 1)[1] + x.chunk(3, 1)[2],
    "unbind": lambda x: x.unbind(1)[2],
    "slice_select": lambda x: x[:, 1:, ::2, -1] + x[1, 0, 0, :2],
    "expand_repeat": lambda x: x[:, :1].expand(2, 4, 4, 5) + x.repeat(1, 1, 1, 1)[:, :1],
    "repeat_more_dims": lambda x: x.repeat(2, 1, 1, 1, 1),
    "reductions": lambda x: x.mean(-1) + x.sum(-1) + x.amax(-1) + x.amin((1, 2)).sum() + x.mean(),
    "max_dim": lambda x: x.max(1)[0] + x.min(1, keepdim=True).values.squeeze(1),
    "argmax": lambda x: x.max(1)[1],
    "var": lambda x: x.var(-1) + x.var(-1, unbiased=False, keepdim=True).squeeze(-1),
    "clamp": lambda x: x.clamp(-0.5, 0.5) + x.clamp(min=0) + x.clamp(max=0.1),
    "pointwise": lambda x: (x.abs() + 1).log().sqrt().exp().neg().rsqrt().reciprocal(),
    "pow": lambda x: x ** 2 + x.abs() ** x.abs() - x.pow(3),
    "rsub_alpha": lambda x: 1 - x + ember.add(x, x, alpha=2) - ember.sub(x, x, alpha=0.5),
    "max_min": lambda x: ember.maximum(x, -x) + ember.minimum(x, x * 0.5),
    "pad": lambda x: F.pad(x, (1, 2, 3, 0), value=0.5),
    "trig": lambda x: x.sin() + x.cos() + x.tanh().atan() + x.floor() + x.ceil() + x.sign(),
    "cast": lambda x: x.double().float() + x.to(ember.int64).float(),
    "cumsum_flip_roll": lambda x: x.cumsum(1) + x.flip(2, 3) + x.roll((1, -2), (1, 3)),
    "tril_triu": lambda x: x.tril() + x.triu(1) + x.tril(-1),
    "sort_topk": lambda x: x.sort(-1)[0] + x.sort(1, descending=True).values
    + x.topk(2, 1).values.sum(1, keepdim=True) + x.topk(1, largest=False)[0],
    "einsum": lambda x: ember.einsum("bchw,bcHw->bhH", x, x),
    "norms": lambda x: x.norm(dim=1) + x.norm(p=1, dim=1) + x.norm(p=float("inf"), dim=1)
    + F.normalize(x, dim=1).sum(1),
    "logsumexp_prod": lambda x: x.logsumexp(1) + x.prod(1),
    "index": lambda x: x[:, ember.tensor([2, 0])] + x[ember.tensor([1, 0])][:, :2],
    "clamp_min_max": lambda x: ember.clamp_min(x, 0.1) + ember.clamp_max(x, -0.1),
}


@pytest.mark.parametrize("name", sorted(RESHAPES))
def test_shape_and_pointwise_ops(name):
    check(Lambda(RESHAPES[name]), ember.randn(2, 3, 4, 5))


def test_where_and_masked_fill_with_constant_masks():
    cond = ember.rand(3, 4) > 0.5
    check(Lambda(lambda x, y: ember.where(cond, x, y).masked_fill(cond, 2.0)),
          (ember.randn(3, 4), ember.randn(3, 4)))


def test_constant_folding_keeps_parameters_named():
    lin = nn.Linear(3, 2)
    pos = ember.arange(6.0).view(2, 3)
    net = Lambda(lambda x: lin(x + pos * 2), lin)  # pos * 2: all constant, folded
    proto = check(net, ember.randn(2, 3))
    assert sum(n.op_type == "Mul" for n in proto.graph.node) == 0
    proto = check(net, ember.randn(2, 3), do_constant_folding=False)
    assert sum(n.op_type == "Mul" for n in proto.graph.node) == 1


class WordLM(nn.Module):
    """pytorch/examples' word_language_model RNNModel (which its main.py exports to ONNX)."""

    def __init__(self, rnn_type, ntoken=50, ninp=8, nhid=8, nlayers=2, tie_weights=True):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(0.5)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=0.5)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            self.decoder.weight = self.encoder.weight

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(self.drop(output)).view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=100):
        super().__init__()
        position = ember.arange(0, max_len, dtype=ember.float).unsqueeze(1)
        div_term = ember.exp(ember.arange(0, d_model, 2).float() * (-9.21 / d_model))
        pe = ember.zeros(max_len, d_model)
        pe[:, 0::2] = ember.sin(position * div_term)
        pe[:, 1::2] = ember.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0).transpose(0, 1))

    def forward(self, x):
        return x + self.pe[:x.size(0), :]


class TransformerLM(nn.Module):
    """word_language_model's TransformerModel: embedding, positional encoding, a causal
    encoder, a decoder."""

    def __init__(self, ntoken=50, ninp=8, nhead=2, nhid=16, nlayers=2):
        super().__init__()
        self.pos_encoder = PositionalEncoding(ninp)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.transformer_encoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(ninp, nhead, nhid, 0.2), nlayers,
            enable_nested_tensor=False)
        self.decoder = nn.Linear(ninp, ntoken)
        self.ninp = ninp

    def forward(self, src):
        mask = nn.Transformer.generate_square_subsequent_mask(len(src))
        src = self.pos_encoder(self.encoder(src) * (self.ninp ** 0.5))
        return F.log_softmax(self.decoder(self.transformer_encoder(src, mask)), dim=-1)


@pytest.mark.parametrize("rnn_type", ["LSTM", "GRU"])
def test_word_language_model(rnn_type):
    model = WordLM(rnn_type)
    tokens = ember.randint(0, 50, (6, 3))
    hidden = ember.randn(2, 3, 8)
    hidden = (hidden, ember.randn(2, 3, 8)) if rnn_type == "LSTM" else hidden
    proto = check(model, (tokens, hidden))
    expected = ["input", "hidden.0", "hidden.1"] if rnn_type == "LSTM" else ["input", "hidden"]
    assert [i.name for i in proto.graph.input] == expected
    names = {i.name for i in proto.graph.initializer}
    assert "encoder.weight" in names and "decoder.weight" not in names  # tied: stored once
    check(TransformerLM(), ember.randint(0, 50, (7, 2)))
