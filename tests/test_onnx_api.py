"""ember.onnx.export's API: dynamic axes (the graph runs for other sizes), names, files,
export_params, training modes, opsets, and the errors for what cannot be exported."""

import io
import sys

import numpy as np
import pytest

import ember
import ember.nn as nn

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


class Lambda(nn.Module):
    def __init__(self, fn, *mods):
        super().__init__()
        self.fn = fn
        self.mods = nn.ModuleList(mods)

    def forward(self, *args):
        return self.fn(*args)


def export(model, args, **kw) -> bytes:
    buf = io.BytesIO()
    ember.onnx.export(model, args, buf, **kw)
    return buf.getvalue()


def run(data: bytes, *arrays):
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return sess.run(None, {i.name: a for i, a in zip(sess.get_inputs(), arrays)})


def outputs(model, *args):
    from ember.onnx._record import flatten

    with ember.no_grad():
        return [t.numpy() for t in flatten(model(*args))]


def assert_runs_like_ember(data, model, *args):
    got = run(data, *[a.numpy() for a in args])
    for g, e in zip(got, outputs(model, *args)):
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)


@pytest.fixture(autouse=True)
def _seed():
    ember.manual_seed(0)


def _cnn():
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 4 * 4, 5)).eval()


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(20, 6)
        self.lstm = nn.LSTM(6, 8, num_layers=2, bidirectional=True)
        self.gru = nn.GRU(16, 4, batch_first=True)
        self.out = nn.Linear(4, 3)

    def forward(self, tokens):
        h, _ = self.lstm(self.embed(tokens))
        g, _ = self.gru(h.transpose(0, 1))
        return self.out(g).log_softmax(-1)


@pytest.mark.parametrize("case", ["mlp", "cnn", "tagger", "encoder", "mha_weights"])
def test_dynamic_batch(case):
    """Exported with one batch size, run with others: the shapes follow the input."""
    if case == "mlp":
        model, dims = nn.Sequential(nn.Linear(5, 7), nn.GELU(), nn.Linear(7, 2)), {0: "batch"}
        make = lambda n: ember.randn(n, 5)  # noqa: E731
    elif case == "cnn":
        model, dims, make = _cnn(), {0: "batch"}, lambda n: ember.randn(n, 3, 8, 8)
    elif case == "tagger":
        model, dims, make = Tagger().eval(), {1: "batch"}, \
            lambda n: ember.randint(0, 20, (7, n))
    elif case == "encoder":
        model = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True),
                                      2, enable_nested_tensor=False).eval()
        dims, make = {0: "batch"}, lambda n: ember.randn(n, 5, 8)
    else:
        mha = nn.MultiheadAttention(8, 2).eval()
        model = Lambda(lambda q: mha(q, q, q), mha)
        dims, make = {1: "batch"}, lambda n: ember.randn(4, n, 8)
    out_dims = {0: "batch"} if case in ("mlp", "cnn", "encoder") else {1: "batch"}
    data = export(model, make(2), input_names=["x"], output_names=["y"],
                  dynamic_axes={"x": dims, "y": out_dims})
    proto = onnx.load_from_string(data)
    assert proto.graph.input[0].type.tensor_type.shape.dim[list(dims)[0]].dim_param == "batch"
    for n in (1, 2, 5):
        assert_runs_like_ember(data, model, make(n))


def test_dynamic_axes_list_names_and_sequence_length():
    lstm = nn.LSTM(3, 4).eval()
    data = export(lstm, ember.randn(5, 2, 3), input_names=["seq"],
                  output_names=["out", "h", "c"], dynamic_axes={"seq": [0, 1], "out": [0, 1]})
    proto = onnx.load_from_string(data)
    dims = proto.graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_param for d in dims[:2]] == ["seq_dynamic_axes_1", "seq_dynamic_axes_2"]
    assert [o.name for o in proto.graph.output] == ["out", "h", "c"]
    for shape in ((9, 3, 3), (1, 1, 3)):
        assert_runs_like_ember(data, lstm, ember.randn(*shape))


def test_shapes_that_cannot_follow_the_dynamic_axes():
    # a size-1 dim expanded to the batch size: ONNX's Expand would need the size as a value
    with pytest.raises(ember.onnx.UnsupportedOperatorError, match="'Expand'.*expanding"):
        export(Lambda(lambda x: x[:1].expand(x.shape[0], 3) + x), ember.randn(4, 3),
               input_names=["x"], dynamic_axes={"x": [0]})
    with pytest.raises(RuntimeError, match="'Split' depends on the input sizes"):
        export(Lambda(lambda x: x.chunk(2)[0]), ember.randn(4, 3), input_names=["x"],
               dynamic_axes={"x": [0]})


def test_file_path_and_initializer_names(tmp_path):
    model = _cnn()
    path = tmp_path / "cnn.onnx"
    assert ember.onnx.export(model, ember.randn(1, 3, 8, 8), str(path)) is None
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto)
    used = {"0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var",
            "5.weight", "5.bias"}
    assert {i.name for i in proto.graph.initializer} >= used
    assert "1.num_batches_tracked" not in {i.name for i in proto.graph.initializer}
    saved = {i.name: onnx.numpy_helper.to_array(i) for i in proto.graph.initializer}
    for k in used:
        np.testing.assert_array_equal(saved[k], model.state_dict()[k].numpy())
    ember.onnx.export(model, (ember.randn(1, 3, 8, 8),), tmp_path / "p.onnx")  # a PathLike
    assert (tmp_path / "p.onnx").stat().st_size == path.stat().st_size


def test_input_names_default_to_forward_parameters():
    proto = onnx.load_from_string(export(Lambda(lambda a, b: a * b), (ember.randn(2),
                                                                       ember.randn(2))))
    assert [i.name for i in proto.graph.input] == ["args", "input_1"]

    class Two(nn.Module):
        def forward(self, query, key, scale=2.0):
            return query * key * scale

    proto = onnx.load_from_string(export(Two(), (ember.randn(2), ember.randn(2), 3.0)))
    assert [i.name for i in proto.graph.input] == ["query", "key"]
    assert [o.name for o in proto.graph.output] == ["output"]
    proto = onnx.load_from_string(export(Two(), (ember.randn(2), ember.randn(2),
                                                 {"scale": 4.0}), input_names=["q"]))
    assert [i.name for i in proto.graph.input] == ["q", "key"]


def test_export_params_false_makes_parameters_inputs():
    lin = nn.Linear(3, 2)
    data = export(lin, ember.randn(4, 3), export_params=False, input_names=["x"])
    proto = onnx.load_from_string(data)
    assert [i.name for i in proto.graph.input] == ["x", "weight", "bias"]
    assert not proto.graph.initializer or all(i.name not in ("weight", "bias")
                                              for i in proto.graph.initializer)
    x = ember.randn(4, 3)
    got = run(data, x.numpy(), lin.weight.detach().numpy(), lin.bias.detach().numpy())
    np.testing.assert_allclose(got[0], outputs(lin, x)[0], rtol=1e-5, atol=1e-5)


def test_training_mode_and_is_in_onnx_export():
    seen = []
    net = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5), nn.BatchNorm1d(3))
    net.train()
    net.register_forward_hook(lambda m, i, o: seen.append((ember.onnx.is_in_onnx_export(),
                                                           m.training)))
    data = export(net, ember.randn(4, 3))
    assert seen[0] == (True, False) and net.training and not ember.onnx.is_in_onnx_export()
    net.eval()
    assert_runs_like_ember(data, net, ember.randn(4, 3))
    net.train()
    # batch norm in training mode: normalized by the batch's statistics
    x = ember.randn(4, 3)
    data = export(net[2:], x, training=ember.onnx.TrainingMode.TRAINING)
    assert net.training
    assert_runs_like_ember(data, net[2:], x)
    with pytest.raises(RuntimeError, match="random draw"):  # dropout in training mode
        export(net[:2], ember.randn(4, 3), training=ember.onnx.TrainingMode.PRESERVE)


@pytest.mark.parametrize("opset", [17, 18, 20, 21])
def test_opsets(opset):
    net = Lambda(lambda x: x.mean(1) + x.amax(1) + x.sum(1) + nn.functional.glu(x, 1).sum(1))
    data = export(net, ember.randn(2, 4, 3), opset_version=opset)
    assert onnx.load_from_string(data).opset_import[0].version == opset
    assert_runs_like_ember(data, net, ember.randn(2, 4, 3))


def test_bad_opset():
    with pytest.raises(ValueError, match="opset"):
        export(nn.ReLU(), ember.randn(2), opset_version=9)


def test_unsupported_op_names_the_op():
    with pytest.raises(ember.onnx.UnsupportedOperatorError, match="'Erfinv'"):
        export(Lambda(lambda x: x.erfinv()), ember.rand(3))
    with pytest.raises(RuntimeError, match="not supported"):
        export(nn.AvgPool2d(2, divisor_override=3), ember.randn(1, 1, 4, 4))
    with pytest.raises(ember.onnx.UnsupportedOperatorError, match="indices"):
        export(nn.MaxPool2d(2, return_indices=True), ember.randn(1, 1, 4, 4))


def test_values_computed_outside_ops_are_caught():
    # ``x > 0`` is not an ember op: its result would be frozen into the graph
    with pytest.raises(RuntimeError, match="outside ember's differentiable ops"):
        export(Lambda(lambda x: x.masked_fill(x > 0, 0.0)), ember.randn(3, 4))
    with pytest.raises(RuntimeError, match="reaches no output"):
        export(Lambda(lambda x, m: x * 2), (ember.randn(3), ember.ones(3)))
    with pytest.raises(RuntimeError, match="control flow"):
        export(Lambda(lambda x: x.exp() if float(x.sum()) > 0 else x.neg()),
               ember.ones(3))


def test_verbose_prints_the_graph(capsys):
    export(nn.Linear(2, 2), ember.randn(1, 2), verbose=True)
    assert "Gemm" in capsys.readouterr().out


def test_missing_onnx_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ImportError, match=r"ember\[onnx\]"):
        ember.onnx.export(nn.ReLU(), ember.randn(2), io.BytesIO())


def test_import_ember_does_not_import_onnx():
    import subprocess

    code = "import sys, ember, ember.nn; assert 'onnx' not in sys.modules; import ember.onnx; " \
           "assert 'onnx' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("batch_first", [False, True])
def test_dynamic_sequence_and_batch(batch_first):
    """Two symbols: attention's reshapes compute their shapes from both at run time."""
    layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=batch_first).eval()
    dims = {0: "batch", 1: "seq"} if batch_first else {0: "seq", 1: "batch"}
    make = (lambda s, b: ember.randn(b, s, 8)) if batch_first else \
        (lambda s, b: ember.randn(s, b, 8))
    data = export(layer, make(3, 2), input_names=["src"], output_names=["out"],
                  dynamic_axes={"src": dims, "out": dims})
    for s, b in ((3, 2), (7, 1), (1, 4), (5, 3)):
        assert_runs_like_ember(data, layer, make(s, b))


def test_slice_of_a_buffer_by_the_sequence_length():
    """word_language_model's positional encoding: ``pe[:x.size(0)]`` follows the input."""
    from test_onnx import PositionalEncoding

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(30, 8)
            self.pos = PositionalEncoding(8)
            self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 2,
                                             enable_nested_tensor=False)

        def forward(self, src):
            return self.enc(self.pos(self.embed(src)), is_causal=False)

    model = Encoder().eval()
    data = export(model, ember.randint(0, 30, (5, 2)), input_names=["src"],
                  dynamic_axes={"src": {0: "seq", 1: "batch"}})
    for s, b in ((5, 2), (9, 1), (2, 3)):
        assert_runs_like_ember(data, model, ember.randint(0, 30, (s, b)))
    with pytest.raises(ember.onnx.UnsupportedOperatorError, match="strided slice"):
        w = nn.Linear(20, 1)
        export(Lambda(lambda x: x + w.weight[0, :2 * x.shape[0]:2], w), ember.randn(3),
               input_names=["x"], dynamic_axes={"x": [0]})


def test_dynamic_image_size():
    net = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                        nn.AvgPool2d(3, stride=1, padding=1), nn.AdaptiveAvgPool2d(1),
                        nn.Flatten(), nn.Linear(4, 2)).eval()
    data = export(net, ember.randn(2, 3, 8, 8), input_names=["img"],
                  dynamic_axes={"img": {0: "batch", 2: "height", 3: "width"}})
    for shape in ((1, 3, 8, 8), (3, 3, 12, 6), (2, 3, 16, 10)):
        assert_runs_like_ember(data, net, ember.randn(*shape))


def test_torch_2_13_call_forms():
    """Options after ``f`` are keyword-only; ``kwargs=``; ``f=None`` returns the ModelProto;
    torch's options that do not change the graph are accepted, unknown ones are not."""
    class Scaled(nn.Module):
        def forward(self, x, *, scale):
            return x * scale

    x, s = ember.randn(3), ember.randn(3)
    proto = ember.onnx.export(Scaled(), (x,), kwargs={"scale": s}, dynamo=False,
                              external_data=False, optimize=True)
    assert isinstance(proto, onnx.ModelProto)
    assert [i.name for i in proto.graph.input] == ["x", "scale"]
    got = run(proto.SerializeToString(), x.numpy(), s.numpy())
    np.testing.assert_allclose(got[0], (x * s).numpy(), rtol=1e-6)
    with pytest.raises(TypeError):
        ember.onnx.export(nn.ReLU(), (x,), io.BytesIO(), True)
    with pytest.raises(TypeError, match="dynamic_axes"):
        ember.onnx.export(nn.ReLU(), (x,), io.BytesIO(), dynamic_shapes={"x": {0: "n"}})
