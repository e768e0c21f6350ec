"""The profiler: what it records (ember's ops, backward nodes as torch's rows, record_function
ranges, shapes, memory, stacks), the table (built from the same events, character for
character torch's), key_averages, the Chrome trace (parsed), schedules and on_trace_ready as
torch's, and that nothing is recorded when it is off."""

import json
import warnings

import numpy as np
import pytest
import torch
import torch.autograd.profiler_util as tpu

import ember
import ember.autograd.profiler_util as epu
from ember.autograd.function import PROFILER


def _events(mod, spec, memory=False):
    """FunctionEvents of the same spec in ember's and torch's classes, nested by spec."""
    evts = {}
    for i, (name, start, end, parent, shapes, mem) in enumerate(spec, 1):
        if mod is tpu:
            e = tpu.FunctionEvent(i, name, 1, start, end, input_shapes=shapes, stack=[],
                                  cpu_memory_usage=mem)
        else:
            e = epu.FunctionEvent(i, name, 1, start, end, input_shapes=shapes,
                                  cpu_memory_usage=mem)
        if parent:
            evts[parent].append_cpu_child(e)
            e.set_cpu_parent(evts[parent])
        evts[i] = e
    out = mod.EventList(list(evts.values()), profile_memory=memory)
    out._tree_built = True  # torch's list says its parent links are set
    return out


SPEC = [("model_inference", 0.0, 1500.0, 0, [], 64),
        ("aten::linear", 10.0, 900.5, 1, [[2, 4], [3, 4], [3]], 24),
        ("aten::addmm", 20.0, 850.25, 2, [[3], [2, 4], [4, 3]], 24),
        ("aten::relu", 901.0, 1200.0, 1, [[2, 3]], 24),
        ("aten::addmm", 1210.0, 1400.0, 1, [[3], [2, 4], [4, 3]], 16),
        ("autograd::engine::evaluate_function: AddmmBackward0", 2000.0, 2600.0, 0, [], -8),
        ("AddmmBackward0", 2010.0, 2590.0, 6, [[2, 3]], 40),
        ("a_very_long_operator_name_that_will_be_cut_in_the_table_column", 3000, 3000.5, 0,
         [], 0)]


@pytest.mark.parametrize("memory", [False, True])
@pytest.mark.parametrize("kw", [{}, {"sort_by": "self_cpu_time_total"},
                                {"sort_by": "cpu_time_total", "row_limit": 3},
                                {"sort_by": "count", "top_level_events_only": True},
                                {"header": "HEAD", "time_unit": "ms"},
                                {"max_name_column_width": 20}])
@pytest.mark.parametrize("shapes", [False, True])
def test_table_is_torchs(memory, kw, shapes):
    e = _events(epu, SPEC, memory)
    t = _events(tpu, SPEC, memory)
    assert e.table(**kw) == t.table(**kw)
    ek = e.key_averages(group_by_input_shapes=shapes)
    tk = t.key_averages(group_by_input_shapes=shapes)
    assert ek.table(**kw) == tk.table(**kw)
    assert [x.key for x in ek] == [x.key for x in tk]
    assert [x.count for x in ek] == [x.count for x in tk]
    for a, b in zip(ek, tk):
        assert a.self_cpu_time_total == pytest.approx(b.self_cpu_time_total)
        assert a.cpu_time_total == pytest.approx(b.cpu_time_total)
        assert a.cpu_memory_usage == b.cpu_memory_usage
        assert a.self_cpu_memory_usage == b.self_cpu_memory_usage
    assert e.self_cpu_time_total == pytest.approx(t.self_cpu_time_total)
    assert e.total_average().cpu_time_total == pytest.approx(t.total_average().cpu_time_total)


def _train_step(lib):
    lib.manual_seed(0)
    m = lib.nn.Linear(4, 3)
    x = lib.ones(2, 4)
    with lib.autograd.profiler.record_function("model_inference"):
        y = m(x).relu().sum()
    y.backward()
    return m


def test_records_ops_and_backward_nodes():
    with ember.profiler.profile(record_shapes=True, profile_memory=True) as prof:
        _train_step(ember)
    names = [e.name for e in prof.events()]
    for expected in ("model_inference", "aten::addmm", "aten::relu", "aten::sum",
                     "autograd::engine::evaluate_function: AddmmBackward0", "AddmmBackward0",
                     "autograd::engine::evaluate_function: ReluBackward0", "ReluBackward0",
                     "autograd::engine::evaluate_function: SumBackward0",
                     "torch::autograd::AccumulateGrad", "aten::mm"):
        assert expected in names, expected
    with torch.profiler.profile() as tprof:
        _train_step(torch)
    tnames = {e.name for e in tprof.events()}
    for n in names:  # the rows that are not ops carry torch's names
        if not n.startswith("aten::"):
            assert n in tnames, n
    evts = {e.name: e for e in prof.events()}
    top = evts["model_inference"]
    assert {c.name for c in top.cpu_children} >= {"aten::addmm", "aten::relu"}
    assert evts["aten::addmm"].cpu_parent is top
    assert evts["aten::addmm"].input_shapes == [[3], [2, 4], [4, 3]]
    node = evts["AddmmBackward0"]
    assert node.cpu_parent.name == "autograd::engine::evaluate_function: AddmmBackward0"
    assert "aten::mm" in {c.name for c in node.cpu_children}  # the gradient formula's ops
    assert evts["aten::relu"].cpu_memory_usage == 24  # 2 x 3 float32 allocated
    for e in prof.events():
        assert 0 <= e.self_cpu_time_total <= e.cpu_time_total + 1e-6
    table = prof.key_averages().table(sort_by="self_cpu_time_total")
    assert "Self CPU time total:" in table and "aten::addmm" in table
    assert "CPU Mem" in table and "Input Shapes" not in table
    assert "Input Shapes" in prof.key_averages(group_by_input_shape=True).table()


def test_chrome_trace(tmp_path):
    with ember.autograd.profiler.profile() as prof:
        _train_step(ember)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    data = json.loads(path.read_text())
    xs = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert len(xs) == len(prof.events())
    assert {"name", "cat", "ts", "dur", "pid", "tid", "args"} <= set(xs[0])
    assert any(e["name"] == "model_inference" and e["cat"] == "user_annotation" for e in xs)
    assert all(e["dur"] >= 0 for e in xs)
    starts = [e["ts"] for e in xs]
    assert starts == sorted(starts)
    outer = next(e for e in xs if e["name"] == "model_inference")
    inner = next(e for e in xs if e["name"] == "aten::addmm")
    assert outer["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= \
        outer["ts"] + outer["dur"] + 1e-3


def test_with_stack_and_decorator():
    @ember.profiler.record_function("my_block")
    def block():
        return ember.ones(3) * 2

    with ember.profiler.profile(with_stack=True) as prof:
        block()
    evts = {e.name: e for e in prof.events()}
    assert "my_block" in evts and evts["aten::mul"].cpu_parent is evts["my_block"]
    assert any("test_profiler.py" in s for s in evts["aten::mul"].stack)
    table = prof.key_averages(group_by_stack_n=2).table()
    assert "Source Location" in table


def test_nothing_recorded_when_off():
    assert PROFILER[0] is None
    with ember.autograd.profiler.profile(enabled=False) as prof:
        ember.ones(2) + 1
    assert prof.function_events is None and PROFILER[0] is None
    with ember.autograd.profiler.record_function("idle"):
        ember.ones(2) + 1  # no profile: nothing happens
    with pytest.raises(RuntimeError, match="didn't finish"):
        ember.autograd.profiler.profile().key_averages()
    with ember.autograd.profiler.profile():
        with pytest.raises(RuntimeError, match="already enabled"):
            with ember.autograd.profiler.profile():
                pass
    assert PROFILER[0] is None


def _scheduled(lib, sched_kw, steps):
    traces = []
    P = lib.profiler  # noqa: N806
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sched = P.schedule(**sched_kw)
    with P.profile(activities=[P.ProfilerActivity.CPU], schedule=sched,
                   on_trace_ready=lambda p: traces.append(
                       [e.name for e in p.events() if e.name.startswith("Profiler")])
                   ) as prof:
        for _ in range(steps):
            lib.ones(2) * 3
            prof.step()
    return traces


@pytest.mark.parametrize("kw,steps", [
    (dict(wait=1, warmup=1, active=2), 9),
    (dict(wait=0, warmup=0, active=1, repeat=2), 5),
    (dict(wait=2, warmup=1, active=3, skip_first=1), 12),
    (dict(wait=1, warmup=1, active=2, repeat=1), 3),
])
def test_schedule_like_torch(kw, steps):
    assert _scheduled(ember, kw, steps) == _scheduled(torch, kw, steps)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        es, ts = ember.profiler.schedule(**kw), torch.profiler.schedule(**kw)
    assert [es(i).name for i in range(20)] == [ts(i).name for i in range(20)]


def test_schedule_errors_and_handler(tmp_path):
    with pytest.raises(AssertionError, match="Invalid profiler schedule"):
        ember.profiler.schedule(wait=0, warmup=0, active=0)
    with pytest.warns(UserWarning, match="warmup"):
        ember.profiler.schedule(wait=0, warmup=0, active=1)
    handler = ember.profiler.tensorboard_trace_handler(str(tmp_path / "tb"), "worker0")
    with ember.profiler.profile(on_trace_ready=handler):
        ember.ones(2) + 1
    files = list((tmp_path / "tb").iterdir())
    assert len(files) == 1 and files[0].name.startswith("worker0.")
    assert json.loads(files[0].read_text())["traceEvents"]
    assert ember.profiler.supported_activities() == {ember.profiler.ProfilerActivity.CPU}


def test_profiled_training_gives_the_same_numbers():
    with ember.profiler.profile():
        m = _train_step(ember)
    m2 = _train_step(ember)
    np.testing.assert_array_equal(m.weight.grad.numpy(), m2.weight.grad.numpy())
