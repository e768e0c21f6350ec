"""SummaryWriter event files, read back with TensorBoard's own event reader."""

import numpy as np
import pytest

import ember

pytest.importorskip("tensorboardX")
event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")

from ember.utils.tensorboard import SummaryWriter  # noqa: E402


def _read(logdir):
    ea = event_accumulator.EventAccumulator(str(logdir), size_guidance={"tensors": 0})
    ea.Reload()
    return ea


def test_scalars_histograms_images_text(tmp_path):
    with SummaryWriter(tmp_path) as w:
        for step in range(3):
            w.add_scalar("loss", ember.tensor(1.0 / (step + 1)), step)
        w.add_scalars("run", {"a": 1.0, "b": ember.tensor(2.0)}, 0)
        w.add_histogram("grad/w", ember.tensor(np.arange(100, dtype=np.float32)), 5)
        w.add_image("img", ember.rand(3, 8, 8), 0)
        w.add_text("note", "hello", 0)
    ea = _read(tmp_path)
    assert [round(e.value, 6) for e in ea.Scalars("loss")] == [1.0, 0.5, 0.333333]
    assert [e.step for e in ea.Scalars("loss")] == [0, 1, 2]
    h = ea.Histograms("grad/w")[0]
    assert h.step == 5 and h.histogram_value.num == 100 and h.histogram_value.max == 99
    img = ea.Images("img")[0]
    assert (img.width, img.height) == (8, 8)
    assert "note/text_summary" in ea.Tags()["tensors"]


def test_graph_matches_autograd_graph(tmp_path):
    x = ember.randn(3, requires_grad=True)
    y = (x * 2).exp().sum()
    with SummaryWriter(tmp_path) as w:
        w.add_graph(y)
    g = _read(tmp_path).Graph()
    ops = {n.op for n in g.node}
    assert {"SumBackward0", "ExpBackward0", "MulBackward0", "AccumulateGrad"} <= ops
    by_name = {n.name: n for n in g.node}
    out = by_name["output0"]
    assert by_name[out.input[0]].op == "SumBackward0"
    exp = by_name[by_name[out.input[0]].input[0]]
    assert exp.op == "ExpBackward0"


def test_model_graph_names_parameters(tmp_path):
    nn = ember.nn
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    with SummaryWriter(tmp_path) as w:
        w.add_graph(model, ember.randn(5, 4))
    names = {n.name for n in _read(tmp_path).Graph().node}
    assert {"0.weight", "0.bias", "2.weight", "2.bias"} <= names
