"""nn.Module vs torch: registration, iteration, state_dict round trips and errors, repr, modes."""

import copy
import pickle

import numpy as np
import pytest
import torch

import ember


def quickstart(lib):
    nn = lib.nn

    class NeuralNetwork(nn.Module):
        def __init__(self):
            super().__init__()
            self.flatten = nn.Flatten()
            self.linear_relu_stack = nn.Sequential(
                nn.Linear(28 * 28, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                nn.Linear(512, 10))

        def forward(self, x):
            return self.linear_relu_stack(self.flatten(x))

    return NeuralNetwork()


def net(lib):
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 4)
            self.act = nn.ReLU()
            self.head = nn.Sequential(nn.Linear(4, 2, bias=False), nn.Tanh())
            self.scale = nn.Parameter(lib.ones(2))
            self.register_buffer("count", lib.zeros(1))
            self.register_buffer("tmp", lib.zeros(2), persistent=False)

        def forward(self, x):
            return self.head(self.act(self.fc(x))) * self.scale

    return Net()


def both(fn):
    return fn(ember), fn(torch)


def test_quickstart_model_prints_like_torch():
    e, t = both(quickstart)
    assert repr(e) == repr(t)
    assert str(e) == str(t)
    assert list(e.state_dict()) == list(t.state_dict())
    assert [tuple(p.shape) for p in e.parameters()] == [tuple(p.shape) for p in t.parameters()]


def test_quickstart_forward_backward_matches_torch():
    e, t = both(quickstart)
    e.load_state_dict({k: ember.tensor(v.numpy()) for k, v in t.state_dict().items()})
    x = np.random.default_rng(0).random((4, 28, 28), dtype=np.float32)
    eo, to = e(ember.tensor(x)), t(torch.tensor(x))
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), atol=1e-5)
    y = np.array([1, 2, 3, 4])
    ember.nn.functional.cross_entropy(eo, ember.tensor(y)).backward()
    torch.nn.functional.cross_entropy(to, torch.tensor(y)).backward()
    for (n, ep), (_, tp) in zip(e.named_parameters(), t.named_parameters()):
        np.testing.assert_allclose(ep.grad.numpy(), tp.grad.numpy(), atol=1e-5, err_msg=n)


def test_names_and_iteration_match_torch():
    def names(lib):
        m = net(lib)
        return ([n for n, _ in m.named_parameters()], [n for n, _ in m.named_buffers()],
                [n for n, _ in m.named_children()], [n for n, _ in m.named_modules()],
                [n for n, _ in m.named_parameters(prefix="p", recurse=False)],
                [n for n, _ in m.named_modules(prefix="root")], list(m.state_dict()),
                list(m.state_dict(prefix="x.")), len(list(m.modules())),
                len(list(m.buffers(recurse=False))), type(m.state_dict()).__name__)
    e, t = both(names)
    assert e == t


def test_shared_parameters_and_remove_duplicate():
    def run(lib):
        m = lib.nn.Module()
        lin = lib.nn.Linear(2, 2)
        m.a, m.b = lin, lin
        m.c = lib.nn.Linear(2, 2)
        m.c.weight = lin.weight
        return ([n for n, _ in m.named_parameters()],
                [n for n, _ in m.named_parameters(remove_duplicate=False)],
                [n for n, _ in m.named_modules(remove_duplicate=False)], list(m.state_dict()))
    assert both(run)[0] == both(run)[1]


def test_setattr_routing_and_delattr():
    m = net(ember)
    assert "fc" in m._modules and "scale" in m._parameters and "count" in m._buffers
    assert "tmp" in m._non_persistent_buffers_set
    m.fc = None
    assert m._modules["fc"] is None
    m.scale = None
    assert m._parameters["scale"] is None
    m.count = ember.ones(1)
    assert m._buffers["count"] is not None
    m.extra = ember.nn.Buffer(ember.ones(3), persistent=False)
    assert "extra" in m._buffers and "extra" in m._non_persistent_buffers_set
    del m.extra, m.head, m.scale
    assert "extra" not in m._buffers and "head" not in m._modules
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'nothing'"):
        m.nothing


def _errors(fn):
    out = []
    for lib in (ember, torch):
        try:
            fn(lib)
        except Exception as exc:  # noqa: BLE001
            out.append((type(exc).__name__, str(exc).replace("torch.", "ember.")))
        else:
            out.append(None)
    return out


@pytest.mark.parametrize("fn", [
    lambda lib: setattr(lib.nn.Linear(2, 2), "weight", lib.ones(2, 2)),
    lambda lib: setattr(lib.nn.Sequential(lib.nn.ReLU()), "0", 3),
    lambda lib: lib.nn.Linear(2, 2).register_buffer("weight", lib.ones(1)),
    lambda lib: lib.nn.Module().register_buffer("a.b", lib.ones(1)),
    lambda lib: lib.nn.Module().register_buffer("", lib.ones(1)),
    lambda lib: lib.nn.Module().register_buffer("x", 3),
    lambda lib: lib.nn.Module().register_parameter("x", lib.ones(1)),
    lambda lib: lib.nn.Module().register_parameter("x", lib.nn.Parameter(lib.ones(1)) * 2),
    lambda lib: lib.nn.Module().add_module("x", 3),
    lambda lib: lib.nn.Module().add_module("a.b", lib.nn.ReLU()),
    lambda lib: lib.nn.Module()(lib.ones(1)),
    lambda lib: lib.nn.Module().get_submodule("a.b"),
    lambda lib: net(lib).get_submodule("fc.weight"),
    lambda lib: net(lib).get_parameter("head.0.nothing"),
    lambda lib: net(lib).get_parameter("act"),
    lambda lib: net(lib).get_buffer("fc.weight"),
    lambda lib: net(lib).train("yes"),
    lambda lib: net(lib).to(lib.int64),
    lambda lib: net(lib).load_state_dict([1, 2]),
    lambda lib: lib.nn.Linear(2, 2, foo=1),
])
def test_errors_match_torch(fn):
    e, t = _errors(fn)
    assert t is not None
    assert e == t


def test_lookups():
    m = net(ember)
    assert m.get_submodule("head.0") is m.head[0]
    assert m.get_submodule("") is m
    assert m.get_parameter("head.0.weight") is m.head[0].weight
    assert m.get_buffer("count") is m.count
    m.set_submodule("head.1", ember.nn.Sigmoid())
    assert isinstance(m.head[1], ember.nn.Sigmoid)


def test_load_state_dict_round_trip_and_copies_values():
    e, t = both(net)
    state = {k: ember.tensor(v.numpy()) for k, v in t.state_dict().items()}
    res = e.load_state_dict(state)
    assert repr(res) == "<All keys matched successfully>"
    assert res.missing_keys == [] and res.unexpected_keys == []
    np.testing.assert_array_equal(e.fc.weight.detach().numpy(), t.fc.weight.detach().numpy())
    assert isinstance(e.fc.weight, ember.nn.Parameter)
    sd = e.state_dict()
    assert sd["fc.weight"].grad_fn is None and not sd["fc.weight"].requires_grad
    assert e.state_dict(keep_vars=True)["fc.weight"] is e.fc.weight


def _load_errors(mutate, strict=True):
    out = []
    for lib in (ember, torch):
        m = net(lib)
        sd = dict(net(lib).state_dict())
        mutate(lib, sd)
        try:
            res = m.load_state_dict(sd, strict=strict)
            out.append(("ok", repr(res)))
        except RuntimeError as exc:
            out.append(("err", str(exc).replace("torch.Size", "ember.Size")))
    return out


@pytest.mark.parametrize("mutate", [
    lambda lib, sd: sd.pop("fc.bias"),
    lambda lib, sd: sd.update({"extra.weight": lib.ones(1), "nothing": lib.ones(1)}),
    lambda lib, sd: sd.update({"fc.weight": lib.ones(5, 3)}),
    lambda lib, sd: (sd.pop("count"), sd.update({"fc.bias": lib.ones(3), "zz": lib.ones(1)})),
    lambda lib, sd: sd.update({"head.0.weight": 3}),
])
@pytest.mark.parametrize("strict", [True, False])
def test_load_state_dict_errors_match_torch(mutate, strict):
    e, t = _load_errors(mutate, strict)
    assert e == t


def test_load_state_dict_assign():
    m = ember.nn.Linear(2, 3)
    w = ember.ones(3, 2)
    m.load_state_dict({"weight": w, "bias": ember.zeros(3)}, assign=True)
    assert isinstance(m.weight, ember.nn.Parameter) and m.weight.requires_grad
    assert m.weight.data_ptr() == w.data_ptr()


def test_state_dict_hooks_and_extra_state():
    class WithExtra(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.value = 1

        def get_extra_state(self):
            return {"value": self.value}

        def set_extra_state(self, state):
            self.value = state["value"]

    m = WithExtra()
    sd = m.state_dict()
    assert list(sd) == ["_extra_state"]
    m2 = WithExtra()
    m2.value = 5
    m2.load_state_dict(sd)
    assert m2.value == 1
    seen = []
    m.register_load_state_dict_post_hook(lambda mod, keys: seen.append(keys))
    m.load_state_dict(sd)
    assert seen and seen[0].missing_keys == []


def test_train_eval_requires_grad_zero_grad():
    m = net(ember)
    assert m.training and m.head[0].training
    assert m.eval() is m and not m.head[1].training
    m.train()
    assert m.head[1].training
    m(ember.randn(2, 3)).sum().backward()
    assert m.fc.weight.grad is not None
    m.zero_grad(set_to_none=False)
    assert m.fc.weight.grad is not None and not m.fc.weight.grad.numpy().any()
    m.zero_grad()
    assert m.fc.weight.grad is None
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())


def test_apply_and_dtype_moves_keep_parameter_objects():
    m = net(ember)
    w = m.fc.weight
    assert m.double() is m
    assert m.fc.weight is w and isinstance(w, ember.nn.Parameter)
    assert w.dtype == ember.float64 and m.count.dtype == ember.float64
    m.to(ember.float32)
    assert w.dtype == ember.float32
    m.half().float()
    m.to("cpu").cpu()
    m.type(ember.float64)
    assert w.dtype == ember.float64
    m(ember.randn(2, 3, dtype=ember.float64)).sum().backward()
    m.float()
    assert w.grad.dtype == ember.float32
    seen = []
    m.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen == ["Linear", "ReLU", "Linear", "Tanh", "Sequential", "Net"]


def test_deepcopy_and_pickle():
    m = net(ember)
    c = copy.deepcopy(m)
    assert c.fc.weight is not m.fc.weight and isinstance(c.fc.weight, ember.nn.Parameter)
    np.testing.assert_array_equal(c.fc.weight.detach().numpy(), m.fc.weight.detach().numpy())
    with ember.no_grad():
        c.fc.weight.mul_(0)
    assert m.fc.weight.detach().numpy().any()
    lin = ember.nn.Linear(3, 2)
    p = pickle.loads(pickle.dumps(lin))
    assert repr(p) == repr(lin) and isinstance(p.weight, ember.nn.Parameter)
    assert p.weight.requires_grad
    np.testing.assert_array_equal(p.weight.detach().numpy(), lin.weight.detach().numpy())
    x = ember.randn(4, 3)
    np.testing.assert_allclose(p(x).detach().numpy(), lin(x).detach().numpy())


def test_dir_lists_members():
    def run(lib):
        d = dir(net(lib))
        return [k for k in ("fc", "scale", "count", "tmp", "forward", "training") if k in d]
    e, t = both(run)
    assert e == t


def test_parameter_basics():
    p = ember.nn.Parameter(ember.tensor([1.0, 2.0]))
    tp = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    assert repr(p) == repr(tp)
    assert p.requires_grad and p.is_leaf
    assert type(p * 2) is ember.Tensor
    q = ember.nn.Parameter(ember.ones(2), requires_grad=False)
    assert not q.requires_grad
    assert copy.deepcopy(p).requires_grad
    assert isinstance(pickle.loads(pickle.dumps(p)), ember.nn.Parameter)
    assert repr(ember.nn.Parameter()) == repr(torch.nn.Parameter())
    b = ember.nn.Buffer(ember.ones(2))
    assert isinstance(b, ember.nn.Buffer) and not isinstance(ember.ones(2), ember.nn.Buffer)


def test_custom_extra_repr_and_nested_indent():
    class Block(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = ember.nn.Sequential(ember.nn.Linear(2, 2), ember.nn.ReLU())

        def extra_repr(self):
            return "line1\nline2"

    class TBlock(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU())

        def extra_repr(self):
            return "line1\nline2"

    Block.__name__ = TBlock.__name__ = "Block"
    e = ember.nn.Sequential(Block(), ember.nn.Identity())
    t = torch.nn.Sequential(TBlock(), torch.nn.Identity())
    assert repr(e) == repr(t)
