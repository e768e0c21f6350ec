"""torch.func's helpers against torch: rearrange, functionalize, debug_unwrap and
replace_all_batch_norm_modules_."""

import numpy as np
import pytest
import torch

import ember

X = np.random.default_rng(0).uniform(-2, 2, (2, 3, 4)).astype(np.float32)
I64 = np.arange(24).reshape(2, 3, 4)


def _rearranged(m, x, pattern, grad, **axes):
    t = m.tensor(x, requires_grad=grad)
    out = m.func.rearrange(t, pattern, **axes)
    res = [out.detach().numpy(), str(out.dtype).split(".")[1], out.is_contiguous(),
           out._base is not None, type(out.grad_fn).__name__.startswith("Sum")]
    if grad:
        g = np.random.default_rng(1).standard_normal(tuple(out.shape)).astype(np.float32)
        out.backward(m.tensor(g))
        res.append(t.grad.numpy())
    return res


@pytest.mark.parametrize("pattern, axes", [
    ("a b c -> c a b", {}), ("a b c -> (a b) c", {}), ("a b c -> a 1 b c", {}),
    ("a b (c d) -> a b c d", {"c": 2}), ("a b (c d) -> (d a) b c", {"c": 2, "d": 2}),
    ("... c -> c ...", {}), ("a ... -> ... a", {}), ("b ... -> (...) b", {}),
    ("(a 1) b c -> (1 a) c b", {}), ("a b c -> (a b c 1)", {}), ("a b c -> a b c 1 1", {}),
    ("a b c -> a b c", {"a": 2}), ("a b (h w) -> a (w b) h", {"h": 2}),
    ("a b c d ... -> ... a b c d", {}),
])
@pytest.mark.parametrize("grad", [False, True])
def test_rearrange_matches_torch(pattern, axes, grad):
    x = X if grad else I64
    if pattern.startswith("a b c d"):
        x = x.reshape(2, 3, 2, 2)
    e, t = _rearranged(ember, x, pattern, grad, **axes), _rearranged(torch, x, pattern, grad,
                                                                      **axes)
    for a, b in zip(e, t):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("shape, pattern", [((2, 1, 12), "a 1 b -> a b"),
                                            ((2, 3, 12), "a 1 b -> a b")])
@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
def test_rearrange_anonymous_left_axes_are_summed_as_in_torch(shape, pattern, dtype):
    x = np.random.default_rng(2).integers(0, 3, shape).astype(dtype)
    e, t = _rearranged(ember, x, pattern, False), _rearranged(torch, x, pattern, False)
    for a, b in zip(e, t):
        np.testing.assert_array_equal(a, b)


def test_rearrange_of_a_list_and_a_0d_tensor():
    for m in (ember, torch):
        xs = [m.tensor(X[0]), m.tensor(X[1])]
        out = m.func.rearrange(xs, "s a b -> a (s b)")
        if m is ember:
            e = out.numpy()
        s = m.tensor(3.0)
        assert m.func.rearrange(s, " -> ") is s
        assert tuple(m.func.rearrange(s, " -> 1").shape) == ()
    np.testing.assert_array_equal(e, out.numpy())


@pytest.mark.parametrize("pattern, axes", [
    ("a b (c d) -> a b c d", {"c": 3}), ("a b (c d) -> a b c d", {"c": 2, "d": 3}),
    ("a b c -> a b c", {"a": 3}), ("a b (c d) -> a b c d", {}),
    ("a b c d ... -> a", {}), ("a b -> a b", {}), ("a b c -> a b", {}), ("a b c", {}),
    ("a b c -> a b c e", {}), ("a b c -> a b c", {"e": 2}), ("a b (c 2) -> a b c", {}),
    ("a b ((c)) -> a b c", {}), ("a b (c -> a b c", {}), ("a b c) -> a b c", {}),
    ("a a c -> a c", {}), ("a b c -> a b c ...", {}), ("a b (c ...) -> a b c ...", {}),
    ("a b c! -> a b c", {}), ("a b _c -> a b _c", {}), ("a b c -> a b c", {"c": 2.0}),
    ("a b c.. -> a b c", {}), ("a b c -> a b c 0", {}), ("a b (c d) -> a b c d", {"c": 0}),
    ("a ... -> a ....", {}), ("a b c -> a b c", {"\u2026": 2}), ("a b c -> a b c -> a", {}),
])
def test_rearrange_errors_match_torch(pattern, axes):
    def run(m):
        try:
            m.func.rearrange(m.tensor(X), pattern, **axes)
        except Exception as exc:  # noqa: BLE001 - the exception is what we compare
            return type(exc).__name__, str(exc)
        return None
    e, t = run(ember), run(torch)
    assert t is not None and e is not None
    assert e[0] == t[0]
    if "Identifiers" not in t[1]:  # those print a set, in hash order
        assert e[1] == t[1]


def _mutating(x, y):
    v = x.view(-1)
    v.add_(1)
    y[0] = 5.0
    return {"v": v, "t": [x.t(), x * 2], "y": y, "n": 3}


@pytest.mark.parametrize("remove", ["mutations", "mutations_and_views"])
def test_functionalize_outputs_and_input_mutations_match_torch(remove):
    res = {}
    for m in (ember, torch):
        x, y = m.tensor(X[0]), m.tensor(X[1, 0])
        out = m.func.functionalize(_mutating, remove=remove)(x, y)
        assert out["y"] is not y and out["n"] == 3  # a mutated input comes back as a copy
        assert m.func.functionalize(lambda a: a)(y) is y  # an unchanged one as itself
        v, (t, d) = out["v"], out["t"]
        res[m] = [x.numpy().copy(), y.numpy().copy(), v.numpy().copy(), t.numpy(), d.numpy(),
                  t.is_contiguous(), out["y"].numpy()]
        v.add_(100)  # the outputs do not alias the mutated input (and, with views, each other)
        res[m] += [x.numpy().copy(), t.numpy().copy()]
        w = m.func.functionalize(lambda a: (a.view(-1), a.t(), a[0], a * 2), remove=remove)(y)
        w[0].add_(1)  # an unmutated input's views stay its views without mutations removed
        res[m] += [r.numpy().copy() for r in w] + [y.numpy().copy()]
    for a, b in zip(res[ember], res[torch]):
        np.testing.assert_array_equal(a, b)


def test_functionalize_keeps_gradients_and_the_function_name():
    grads = []
    for m in (ember, torch):
        x = m.tensor(X[0], requires_grad=True)

        def f(a):
            b = a.clone()
            b.mul_(a)
            return b.sum()
        g = m.func.functionalize(f)
        assert g.__name__ == "f" and g.__wrapped__ is f
        g(x).backward()
        grads.append(x.grad.numpy())
        grads.append(m.func.grad(m.func.functionalize(f))(x.detach()).numpy())
    np.testing.assert_allclose(grads[0], grads[2], rtol=1e-6)
    np.testing.assert_allclose(grads[1], grads[3], rtol=1e-6)


def test_functionalize_bad_remove_raises_like_torch():
    msgs = []
    for m in (ember, torch):
        with pytest.raises(RuntimeError) as info:
            m.func.functionalize(_mutating, remove="views")
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]


def test_debug_unwrap_inside_vmap_and_grad():
    x = ember.tensor(X)
    seen = []

    def f(a):
        seen.append((ember.func.debug_unwrap(a), ember.func.debug_unwrap(a, recurse=False)))
        return a * 2
    ember.func.vmap(ember.func.vmap(f))(x)
    deep, one = seen[0]
    assert type(deep) is ember.Tensor and tuple(deep.shape) == (2, 3, 4)
    assert type(one) is not ember.Tensor and tuple(one.shape) == (3, 4)  # the outer level
    np.testing.assert_array_equal(deep.numpy(), X)
    ember.func.grad(lambda a: seen.append(ember.func.debug_unwrap(a)) or a.sum())(x)
    assert type(seen[-1]) is ember.Tensor and tuple(seen[-1].shape) == (2, 3, 4)
    assert ember.func.debug_unwrap(x) is x
    for m in (ember, torch):
        with pytest.raises(TypeError):
            m.func.debug_unwrap(3)


def _net(m):
    m.manual_seed(0)
    return m.nn.Sequential(m.nn.Conv2d(2, 3, 3), m.nn.BatchNorm2d(3),
                           m.nn.Sequential(m.nn.Flatten(), m.nn.BatchNorm1d(12)),
                           m.nn.InstanceNorm1d(12, track_running_stats=True),
                           m.nn.BatchNorm1d(4, track_running_stats=False))


def test_replace_all_batch_norm_modules_matches_torch():
    x = np.random.default_rng(3).standard_normal((5, 2, 4, 4)).astype(np.float32)
    res = {}
    for m in (ember, torch):
        net = _net(m)
        assert m.func.replace_all_batch_norm_modules_(net) is net
        mods = list(net.modules())
        res[m] = [str(net), sorted(net.state_dict()),
                  [(getattr(b, "running_mean", 0) is None, getattr(b, "num_batches_tracked", 0)
                    is None) for b in mods]]
        net.eval()  # batch statistics in eval mode too
        res[m].append(net[:3](m.tensor(x)).detach().numpy())
        bn = m.nn.BatchNorm1d(3)
        assert m.func.replace_all_batch_norm_modules_(bn) is bn
        res[m].append(str(bn))
    np.testing.assert_allclose(res[ember].pop(3), res[torch].pop(3), rtol=1e-4, atol=1e-5)
    assert res[ember] == res[torch]
