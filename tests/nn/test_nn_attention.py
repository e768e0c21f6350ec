"""scaled_dot_product_attention, MultiheadAttention and the Transformer encoder vs torch."""

import warnings

import numpy as np
import pytest
import torch
from layer_oracle import assert_same_structure, compare_layer
from oracle import arr, check, check_error

import ember


def F(m):
    return m.nn.functional


CAUSAL = np.tril(np.ones((4, 5), dtype=bool))


@pytest.mark.parametrize("kw", [{}, {"is_causal": True}, {"scale": 0.3},
                                {"attn_mask": CAUSAL}, {"attn_mask": arr(4, 5)},
                                {"attn_mask": arr(2, 1, 4, 5)}])
def test_sdpa(kw):
    kw = dict(kw)
    mask = kw.pop("attn_mask", None)
    args = [arr(2, 3, 4, 6), arr(2, 3, 5, 6), arr(2, 3, 5, 7)]
    if mask is not None:
        check(lambda m, q, k, v, a: F(m).scaled_dot_product_attention(q, k, v, attn_mask=a, **kw),
              *args, mask, grad_inputs=(0, 1, 2), atol=1e-5)
    else:
        check(lambda m, q, k, v: F(m).scaled_dot_product_attention(q, k, v, **kw), *args)


def test_sdpa_errors_and_dropout():
    check_error(lambda m, q: F(m).scaled_dot_product_attention(
        q, q, q, attn_mask=m.ones(3, 3, dtype=m.bool), is_causal=True), arr(2, 3, 4),
        match="Explicit attn_mask should not be set when is_causal=True")
    q = ember.tensor(arr(2, 8, 4))
    a = F(ember).scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    b = F(ember).scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    assert a.shape == (2, 8, 4) and not np.allclose(a.numpy(), b.numpy())


MHA = [
    ({}, "self"),
    ({"batch_first": True}, "self"),
    ({"bias": False}, "kv"),
    ({"kdim": 3, "vdim": 5}, "cross"),
    ({"add_bias_kv": True, "add_zero_attn": True}, "cross"),
]


def _mha_inputs(kw, kind, batched=True):
    b = (2,) if batched else ()
    if kw.get("batch_first") and batched:
        q = arr(2, 4, 8)
        return q, q, q
    q = arr(4, *b, 8)
    if kind == "self":
        return q, q, q
    k = arr(6, *b, kw.get("kdim", 8))
    if kind == "kv":
        return q, k, k
    return q, k, arr(6, *b, kw.get("vdim", 8))


def _call(inputs, **call_kw):
    """Forward that keeps q/k/v identities (self-attention takes the packed path)."""
    same = [inputs[1] is inputs[0], inputs[2] is inputs[1]]

    def forward(m, *ts):
        q = ts[0]
        k = q if same[0] else ts[1]
        v = k if same[1] else ts[2]
        return m(q, k, v, **call_kw)

    uniq = [inputs[0]] + ([] if same[0] else [inputs[1]]) + ([] if same[1] else [inputs[2]])
    return forward, uniq


@pytest.mark.parametrize("kw,kind", MHA)
@pytest.mark.parametrize("need_weights", [True, False])
def test_multihead_attention(kw, kind, need_weights):
    e, t = ember.nn.MultiheadAttention(8, 2, **kw), torch.nn.MultiheadAttention(8, 2, **kw)
    assert_same_structure(e, t)
    fwd, xs = _call(_mha_inputs(kw, kind), need_weights=need_weights)
    compare_layer(e, t, *xs, forward=fwd, train=False)
    fwd, xs = _call(_mha_inputs(kw, kind, batched=False), need_weights=need_weights,
                    average_attn_weights=False)
    compare_layer(e, t, *xs, forward=fwd, train=False, copy=False)


def test_multihead_attention_masks():
    e, t = ember.nn.MultiheadAttention(8, 2), torch.nn.MultiheadAttention(8, 2)
    q, k = arr(4, 2, 8), arr(6, 2, 8)
    kpm = np.zeros((2, 6), dtype=bool)
    kpm[0, 4:] = True
    bool_mask = ~np.tril(np.ones((4, 6), dtype=bool), 2)
    for mask in (bool_mask, arr(4, 6), arr(4, 4, 6)):
        def fwd(m, q, k, mask=mask):
            lib = ember if m is e else torch
            return m(q, k, k, key_padding_mask=lib.tensor(kpm), attn_mask=lib.tensor(mask))

        compare_layer(e, t, q, k, forward=fwd, train=False)


@pytest.mark.parametrize("kw", [{}, {"norm_first": True, "activation": "gelu"},
                                {"batch_first": True, "bias": False}])
def test_transformer_encoder_layer(kw):
    e = ember.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, **kw)
    t = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, **kw)
    assert_same_structure(e, t)
    x = arr(2, 5, 8) if kw.get("batch_first") else arr(5, 2, 8)
    compare_layer(e, t, x, atol=1e-4)
    mask = ~np.tril(np.ones((5, 5), dtype=bool))
    compare_layer(e, t, x, atol=1e-4, copy=False,
                  forward=lambda m, x: m(x, src_mask=(ember if m is e else torch).tensor(mask)))


def test_transformer_encoder():
    def build(nn):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
            enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8))
        return enc, [str(x.message) for x in w]

    (e, ew), (t, tw) = build(ember.nn), build(torch.nn)
    assert ew == tw
    assert_same_structure(e, t)
    compare_layer(e, t, arr(5, 2, 8), atol=1e-4)
    compare_layer(e, t, arr(5, 2, 8), atol=1e-4, train=False, copy=False)


def test_mha_default_init_and_errors():
    ember.manual_seed(0)
    m = ember.nn.MultiheadAttention(64, 4)
    w = m.in_proj_weight.detach().numpy()
    bound = np.sqrt(6 / (64 + 192))  # xavier_uniform on (192, 64)
    assert np.abs(w).max() <= bound and abs(w.std() - bound / np.sqrt(3)) < 0.05 * bound
    assert not m.in_proj_bias.detach().numpy().any()
    assert not m.out_proj.bias.detach().numpy().any()
    for lib in (torch, ember):
        with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
            lib.nn.MultiheadAttention(8, 3)


def test_sdpa_fused_node_masked_rows_broadcast_and_gradgrad():
    from oracle import fd_check, gradgrad_check

    mask = np.ones((3, 3), dtype=bool)
    mask[1] = False  # a fully masked row attends to nothing: zeros, as torch's CPU kernel
    check(lambda m, q, k, v: F(m).scaled_dot_product_attention(q, k, v, attn_mask=m.tensor(mask)),
          arr(1, 2, 3, 4), arr(1, 2, 3, 4), arr(1, 2, 3, 4))
    check(lambda m, q, k, v: F(m).scaled_dot_product_attention(q, k, v),
          arr(2, 3, 4, 5), arr(2, 1, 6, 5), arr(1, 6, 3))  # broadcast batch dims
    for shape in ((1, 3, 4), (1, 1, 3, 4), (1, 2, 3, 4)):  # torch's fused kernel: 4-D only
        x = arr(*shape)
        names = [type(F(lib).scaled_dot_product_attention(
            *[lib.tensor(x, requires_grad=True)] * 3).grad_fn).__name__ for lib in (ember, torch)]
        assert names[0] == names[1], (shape, names)
    bias = ember.tensor(arr(3, 4, dtype="float64"))
    fn = lambda q, k, v: F(ember).scaled_dot_product_attention(  # noqa: E731
        q, k, v, attn_mask=bias)
    for args in ((arr(2, 3, 2), arr(2, 4, 2), arr(2, 4, 3)),  # the composite
                 (arr(1, 2, 3, 2), arr(1, 2, 4, 2), arr(1, 2, 4, 2))):  # the fused node
        fd_check(fn, *args)
        gradgrad_check(fn, *args)
    # A float mask that requires grad takes the composite path and gets its gradient.
    check(lambda m, q, a: F(m).scaled_dot_product_attention(q, q, q, attn_mask=a),
          arr(2, 3, 4), arr(3, 3))


@pytest.mark.parametrize("kw", [{}, {"norm_first": True, "batch_first": True}])
def test_transformer_decoder_and_full_model(kw):
    def build(nn):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, **kw),
                                        2, norm=nn.LayerNorm(8))
            full = nn.Transformer(8, 2, 1, 1, 16, dropout=0.0, **kw)
        return dec, full, [str(x.message) for x in w]

    ed, ef, ew = build(ember.nn)
    td, tf, tw = build(torch.nn)
    assert ew == tw
    assert_same_structure(ed, td)
    assert_same_structure(ef, tf)
    bf = kw.get("batch_first")
    tgt, mem = (arr(2, 4, 8), arr(2, 5, 8)) if bf else (arr(4, 2, 8), arr(5, 2, 8))
    causal = ember.nn.Transformer.generate_square_subsequent_mask(4)
    t_causal = torch.nn.Transformer.generate_square_subsequent_mask(4)
    np.testing.assert_array_equal(causal.numpy(), t_causal.numpy())

    def fwd(m, a, b):
        return m(a, b, tgt_mask=causal if m in (ed, ef) else t_causal)

    compare_layer(ed, td, tgt, mem, atol=1e-4, forward=fwd)
    compare_layer(ef, tf, mem, tgt, atol=1e-4, forward=lambda m, s, t: m(
        s, t, tgt_mask=causal if m is ef else t_causal))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal"):
        ef(ember.zeros(3, 3, 8), ember.zeros(3, 3, 7))


def test_transformer_default_init():
    ember.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ember.nn.Transformer(16, 2, 1, 1, 32)
    w = model.encoder.layers[0].linear1.weight.detach().numpy()  # (32, 16): xavier_uniform
    bound = np.sqrt(6 / (16 + 32))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
