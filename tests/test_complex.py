"""Complex tensors against torch: dtypes and promotion, creation, printing, save/load, the
complex views and functions, and autograd in torch's convention (random complex upstream
gradients), plus float64 finite differences through view_as_real / view_as_complex."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
import torch
from oracle import check_error, same

import ember

RNG = np.random.default_rng(7)


def carr(*shape, dtype=np.complex64) -> np.ndarray:
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def rarr(*shape, dtype=np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def _numpy(t):
    return t.detach().resolve_conj().numpy()


def ccheck(fn, *arrays, atol=1e-5, rtol=1e-4, seed=1, names=True):
    """``fn(lib, *tensors)`` in ember and torch: same dtype, shape, values, grad_fn name, and
    the same gradients for every float or complex input under a random (complex where the
    output is complex) upstream gradient. ``names=False``: ember composes the op (another
    grad_fn), only values and gradients are compared."""
    results = []
    for lib in (ember, torch):
        ts = [lib.tensor(a, requires_grad=a.dtype.kind in "fc") if isinstance(a, np.ndarray)
              else a for a in arrays]
        out = fn(lib, *ts)
        o = _numpy(out)
        rng = np.random.default_rng(seed)
        u = rng.standard_normal(o.shape)
        if o.dtype.kind == "c":
            u = u + 1j * rng.standard_normal(o.shape)
        name = type(out.grad_fn).__name__ if out.grad_fn is not None else None
        if out.requires_grad:
            out.backward(lib.tensor(u.astype(o.dtype)))
        grads = [_numpy(t.grad) if isinstance(t, lib.Tensor) and t.grad is not None else None
                 for t in ts]
        results.append((o, str(out.dtype).split(".")[-1], name, grads))
    (eo, edt, ename, eg), (to, tdt, tname, tg) = results
    assert edt == tdt
    assert eo.shape == to.shape
    np.testing.assert_allclose(eo, to, atol=atol, rtol=rtol)
    assert ename == tname or not names, (ename, tname)
    for i, (a, b) in enumerate(zip(eg, tg)):
        assert (a is None) == (b is None), f"grad of input {i}"
        if a is not None:
            assert a.dtype == b.dtype, f"grad of input {i}: {a.dtype} != {b.dtype}"
            np.testing.assert_allclose(a, b, atol=atol * 10, rtol=rtol * 10,
                                       err_msg=f"grad of input {i}")


# --- dtypes, promotion, creation ----------------------------------------------------------

def test_dtype_names_and_flags():
    assert ember.cfloat is ember.complex64 and ember.cdouble is ember.complex128
    for e, t in ((ember.complex64, torch.complex64), (ember.complex128, torch.complex128)):
        assert repr(e) == repr(t).replace("torch", "ember")
        assert (e.is_complex, e.is_floating_point, e.is_signed, e.itemsize) == \
            (t.is_complex, t.is_floating_point, t.is_signed, t.itemsize)
    z = ember.zeros(2, dtype=ember.complex64)
    assert z.is_complex() and ember.is_complex(z) and not z.is_floating_point()
    assert not ember.ones(2).is_complex()


PAIRS = ["float32", "float64", "int64", "int32", "bool", "complex64", "complex128"]


@pytest.mark.parametrize("a", PAIRS)
@pytest.mark.parametrize("b", ["complex64", "complex128"])
def test_promote_types(a, b):
    got = ember.promote_types(getattr(ember, a if a != "bool" else "bool"), getattr(ember, b))
    want = torch.promote_types(getattr(torch, a), getattr(torch, b))
    assert got.name == str(want).split(".")[-1]


@pytest.mark.parametrize("fn", [
    lambda m: m.ones(2) + m.ones(2, dtype=m.complex64),
    lambda m: m.ones(2, dtype=m.float64) + m.ones(2, dtype=m.complex64),
    lambda m: m.ones(2) + 1j,
    lambda m: m.ones(2, dtype=m.float64) * 1j,
    lambda m: m.ones(2, dtype=m.int64) * (2 - 1j),
    lambda m: m.ones(2, dtype=m.complex64) * m.tensor(2.0, dtype=m.float64),
    lambda m: m.ones(2, dtype=m.float64) * m.tensor(2.0, dtype=m.complex64),
    lambda m: m.ones(2, dtype=m.complex64) + 2.5,
    lambda m: m.ones(2, dtype=m.complex128) / 3,
    lambda m: m.ones(2, dtype=m.int32) / m.tensor(1j),
    lambda m: m.result_type(m.ones(2), 1j),
])
def test_promotion(fn):
    same(fn)


@pytest.mark.parametrize("fn", [
    lambda m: m.tensor([1 + 2j, 3]),
    lambda m: m.tensor(1 + 2j),
    lambda m: m.tensor([[1, 2.5], [1j, 0]]),
    lambda m: m.tensor([1 + 2j], dtype=m.complex128),
    lambda m: m.tensor([1.5, 2], dtype=m.cfloat),
    lambda m: m.tensor(np.array([1 + 1j], dtype=np.complex128)),
    lambda m: m.from_numpy(np.array([1 - 1j], dtype=np.complex64)),
    lambda m: m.zeros(2, 2, dtype=m.complex64),
    lambda m: m.full((2,), 1 - 1j),
    lambda m: m.ones(2).to(m.complex64),
    lambda m: m.ones(2).cfloat(),
    lambda m: m.tensor([1 + 2j], requires_grad=True),
])
def test_creation(fn):
    same(fn)


def test_default_dtype_float64_gives_complex128():
    try:
        ember.set_default_dtype(ember.float64)
        torch.set_default_dtype(torch.float64)
        same(lambda m: m.tensor([1j, 2]))
        same(lambda m: m.ones(2, dtype=m.float32) + 1j)
    finally:
        ember.set_default_dtype(ember.float32)
        torch.set_default_dtype(torch.float32)


# --- printing -----------------------------------------------------------------------------

@pytest.mark.parametrize("data", [
    [1 + 2j], [1 + 2j, 3.5 - 1j, 0j], [[1.123456 + 2j, -3e5 - 1j], [0.5j, 1]],
    [1e-10 + 1j, 1j], 1 + 2j, -0.5 - 0.25j, [float("nan") + 1j, complex(0, float("inf"))],
    [1e8 + 1j, 2], [[1, -1j], [2, 3]], [complex(1, -0.0), complex(-0.0, 0.0)],
])
def test_repr(data):
    same(lambda m: m.tensor(data))
    same(lambda m: m.tensor(data, dtype=m.complex128))


def test_repr_summarized_and_random():
    a = carr(40, 40)
    same(lambda m: m.from_numpy(a.copy()) if m is ember else m.from_numpy(a.copy()))
    b = carr(7) * 1000
    same(lambda m: m.from_numpy(b.copy()))
    same(lambda m: m.zeros(0, dtype=m.complex64))
    same(lambda m: m.zeros(2, 0, dtype=m.complex128))


def test_save_load_both_ways():
    z = carr(3)
    buf = io.BytesIO()
    ember.save({"z": ember.from_numpy(z), "d": ember.from_numpy(z.astype(np.complex128))}, buf)
    buf.seek(0)
    back = torch.load(buf)
    assert back["z"].dtype == torch.complex64 and back["d"].dtype == torch.complex128
    np.testing.assert_array_equal(back["z"].numpy(), z)
    buf = io.BytesIO()
    torch.save({"z": torch.from_numpy(z)}, buf)
    buf.seek(0)
    got = ember.load(buf)["z"]
    assert got.dtype is ember.complex64
    np.testing.assert_array_equal(got.numpy(), z)


def test_item_tolist_complex():
    same(lambda m: m.tensor([1 + 2j])[0].item())
    same(lambda m: m.tensor([1 + 2j, 3j]).tolist())
    same(lambda m: complex(m.tensor(1 - 1j)))


def test_cast_to_real_warns_and_drops_imag():
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        out = ember.tensor([1 + 2j]).to(ember.float32)
    assert out.tolist() == [1.0]


# --- views and complex functions ------------------------------------------------------------

def test_view_as_real_shares_memory():
    z = ember.tensor([1 + 2j, 3 - 4j])
    r = ember.view_as_real(z)
    assert r.shape == (2, 2) and r.dtype is ember.float32
    r[0, 1] = 9
    assert z[0].item() == 1 + 9j
    c = ember.view_as_complex(r)
    c[1] = 5j
    assert r[1].tolist() == [0.0, 5.0]
    assert r._base is z and c._base is z


def test_real_imag_are_views():
    z = ember.tensor([1 + 2j, 3 - 4j])
    z.real[0] = 7
    z.imag[1] = 8
    assert z.tolist() == [7 + 2j, 3 + 8j]
    x = ember.ones(2)
    assert x.real is x
    z.real = ember.tensor([0.5, 0.25])
    assert z.tolist() == [0.5 + 2j, 0.25 + 8j]


@pytest.mark.parametrize("fn", [
    lambda m: m.view_as_real(m.tensor([[1 + 2j, 3j]]).t()),
    lambda m: m.view_as_complex(m.ones(3, 2, dtype=m.float64)),
    lambda m: m.view_as_complex(m.ones(3, 2).t().t()[::2]),
    lambda m: m.view_as_real(m.tensor(1 + 2j)),
    lambda m: m.view_as_complex(m.tensor([1.0, 2.0])),
])
def test_views_values(fn):
    same(fn)


@pytest.mark.parametrize("fn", [
    lambda m: m.view_as_complex(m.ones(3)),
    lambda m: m.view_as_complex(m.ones(3, 2, dtype=m.int64)),
    lambda m: m.view_as_complex(m.ones(2, 3)[:, :2]),
    lambda m: m.view_as_complex(m.ones(2, 3).t()),
    lambda m: m.view_as_complex(m.ones(5, 2).reshape(-1)[1:9].reshape(4, 2)),
    lambda m: m.view_as_real(m.ones(3)),
    lambda m: m.ones(3).imag,
    lambda m: m.complex(m.ones(2, dtype=m.int64), m.ones(2, dtype=m.int64)),
    lambda m: m.complex(m.ones(2), m.ones(2, dtype=m.float64)),
    lambda m: m.complex(m.ones(2), m.ones(3)),
    lambda m: m.polar(m.ones(2, dtype=m.int64), m.ones(2)),
])
def test_errors(fn):
    check_error(lambda m: fn(m))


@pytest.mark.parametrize("fn", [
    lambda m: m.tensor([1 + 2j, 3 - 1j]).sign(),
    lambda m: m.tensor([1 + 2j]) > 0,
    lambda m: m.tensor([1 + 2j]).max(),
    lambda m: m.tensor([1 + 2j]).clamp(0, 1),
    lambda m: m.tensor([1 + 2j]).floor(),
    lambda m: m.relu(m.tensor([1 + 2j])),
    lambda m: m.tensor([1 + 2j]).sort(),
    lambda m: m.tensor([1 + 2j]).atan2(m.tensor([1j])),
    lambda m: m.tensor([1 + 2j]) // 2,
    lambda m: m.tensor([1 + 2j]).fmod(2),
    lambda m: m.tensor([1 + 2j]).maximum(m.tensor([1j])),
    lambda m: m.softmax(m.tensor([1 + 2j]), 0),
    lambda m: float(m.tensor([1 + 2j])),
    lambda m: m.ones(2, 2, dtype=m.complex64) @ m.ones(2, 2),
    lambda m: m.tensor([1 + 2j]).argmax(),
    lambda m: m.tensor([1 + 2j]).argmin(0),
])
def test_unsupported_ops_raise_torch_errors(fn):
    check_error(lambda m: fn(m))


def test_conj_family():
    z = ember.tensor([1 + 2j])
    assert z.conj().tolist() == [1 - 2j] and z.conj_physical().tolist() == [1 - 2j]
    assert not z.conj().is_conj() and z.resolve_conj() is z
    x = ember.ones(2)
    assert x.conj() is x and x.conj_physical() is x
    same(lambda m: m.tensor([1 + 2j, -3j]).conj())


# --- values and gradients -----------------------------------------------------------------

Z, W, X = carr(3, 4), carr(3, 4), rarr(3, 4)

UNARY = {
    "neg": lambda m, a: -a, "exp": lambda m, a: a.exp(), "log": lambda m, a: a.log(),
    "pow_real": lambda m, a: a ** 2.5, "square": lambda m, a: a ** 2, "sqrt": lambda m, a: a.sqrt(),
    "rsqrt": lambda m, a: a.rsqrt(), "reciprocal": lambda m, a: a.reciprocal(),
    "sin": lambda m, a: a.sin(), "cos": lambda m, a: a.cos(), "tanh": lambda m, a: a.tanh(),
    "sigmoid": lambda m, a: a.sigmoid(), "sinh": lambda m, a: a.sinh(),
    "sum": lambda m, a: a.sum(), "sum_dim": lambda m, a: a.sum(1), "mean": lambda m, a: a.mean(),
    "mean_dim": lambda m, a: a.mean(0, keepdim=True), "abs": lambda m, a: a.abs(),
    "angle": lambda m, a: a.angle(), "real": lambda m, a: a.real * 2,
    "imag": lambda m, a: a.imag * 3, "conj": lambda m, a: a.conj() * 1,
    "conj_physical": lambda m, a: a.conj_physical(), "sgn": lambda m, a: a.sgn(),
    "view_as_real": lambda m, a: m.view_as_real(a) * 1,
    "round_trip": lambda m, a: m.view_as_complex(m.view_as_real(a) * 2),
    "abs_loss": lambda m, a: a.abs().sum(), "abs_sq": lambda m, a: (a * a.conj()).real.sum(),
    "reshape_t": lambda m, a: a.reshape(4, 3).t()[1:], "index": lambda m, a: a[[0, 2], 1:],
    "scalar_ops": lambda m, a: (a * (2 - 1j) + 1j) / (0.5 + 1j) - 3,
    "rsub": lambda m, a: 1j - a, "rdiv": lambda m, a: 2 / a, "rpow": lambda m, a: 2 ** a,
    "expand": lambda m, a: a[:, :1].expand(3, 4), "roll": lambda m, a: a.roll(1, 0),
    "to_cdouble": lambda m, a: a.to(m.complex128), "clone": lambda m, a: a.clone(),
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary(name):
    ccheck(UNARY[name], Z)


BINARY = {
    "add": lambda m, a, b: a + b, "sub": lambda m, a, b: a - b, "mul": lambda m, a, b: a * b,
    "div": lambda m, a, b: a / b, "pow": lambda m, a, b: a ** b, "mm": lambda m, a, b: a @ b.T,
    "matmul_batched": lambda m, a, b: (a.reshape(3, 2, 2) @ b.reshape(3, 2, 2)),
    "mv": lambda m, a, b: a.mT @ b[:, 0], "cat": lambda m, a, b: m.cat([a, b]).sum(0),
    "stack": lambda m, a, b: m.stack([a, b], 1), "where": lambda m, a, b: m.where(
        a.real > 0, a, b),
    "add_alpha": lambda m, a, b: m.add(a, b, alpha=2),
}


@pytest.mark.parametrize("name", list(BINARY))
def test_binary(name):
    ccheck(BINARY[name], Z, W)


MIXED = {
    "mul": lambda m, a, b: a * b, "add": lambda m, a, b: b + a, "div": lambda m, a, b: b / a,
    "complex": lambda m, a, b: m.complex(b, b * 2) * a,
    "polar": lambda m, a, b: m.polar(b.abs(), b) * a, "angle_real": lambda m, a, b: b.angle(),
    "to_complex": lambda m, a, b: b.to(m.complex64) * a,
    "view_as_complex": lambda m, a, b: m.view_as_complex(b.reshape(3, 2, 2)) * a[:, :2],
    "fp64_promote": lambda m, a, b: b.double() * a,
}


@pytest.mark.parametrize("name", list(MIXED))
def test_mixed_real_complex(name):
    ccheck(MIXED[name], Z, X)


def test_complex128_and_broadcast():
    ccheck(lambda m, a, b: (a * b).exp().sum(0), carr(3, 1, dtype=np.complex128),
           carr(4, dtype=np.complex128))


def test_real_loss_backward_gradient_is_torchs():
    z = carr(5)
    for lib in (ember, torch):
        t = lib.tensor(z, requires_grad=True)
        (t.abs() ** 2).sum().backward()
        np.testing.assert_allclose(_numpy(t.grad), 2 * z, rtol=1e-5)


def test_backward_of_complex_scalar_needs_gradient():
    check_error(lambda m: m.tensor([1 + 2j], requires_grad=True).sum().backward())


def test_grad_fn_names():
    for name in ("abs", "angle", "real", "imag", "conj", "view_as_real", "sgn", "exp"):
        ccheck(UNARY[name], Z)  # ccheck compares grad_fn names


def test_second_order_through_abs():
    z = carr(4, dtype=np.complex128)
    grads = []
    for lib in (ember, torch):
        t = lib.tensor(z, requires_grad=True)
        g, = lib.autograd.grad((t * t).abs().sum(), t, create_graph=True)
        g2, = lib.autograd.grad((g.abs() ** 2).sum(), t)
        grads.append(_numpy(g2))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)


# --- float64 finite differences through view_as_real / view_as_complex ----------------------

FD = {
    "mul_exp": lambda z: (z * z.exp()),
    "div_log": lambda z: z.log() / (z + 3),
    "abs_angle": lambda z: ember.complex(z.abs(), z.angle()),
    "sgn": lambda z: z.sgn(),
    "conj_mm": lambda z: z.conj() @ z.t(),
    "pow": lambda z: z ** 1.5,
    "real_imag": lambda z: ember.complex(z.real * z.imag, z.imag),
}


@pytest.mark.parametrize("name", list(FD))
def test_gradcheck_float64(name):
    x = ember.tensor(RNG.uniform(0.5, 2.0, (3, 3, 2)), dtype=ember.float64, requires_grad=True)

    def f(r):
        return ember.view_as_real(FD[name](ember.view_as_complex(r)))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert ember.autograd.gradcheck(f, (x,))


LINEAR_AND_COMPOSED = {
    "H": lambda m, a: a.H, "mH": lambda m, a: a.mH @ a, "vdot": lambda m, a: m.vdot(a[0], a[1]),
    "dot": lambda m, a: m.dot(a[0], a[1]), "outer": lambda m, a: m.outer(a[0], a[1]),
    "norm": lambda m, a: a.norm(), "vector_norm": lambda m, a: m.linalg.vector_norm(a, dim=1),
    "vector_norm_ord1": lambda m, a: m.linalg.vector_norm(a, ord=1),
    "cumsum": lambda m, a: a.cumsum(0), "flip": lambda m, a: a.flip(0),
    "linear": lambda m, a: m.nn.functional.linear(a, a), "split": lambda m, a: a.split(2, 1)[1],
    "trace": lambda m, a: a[:, :3].trace(), "diagonal": lambda m, a: a.diagonal(),
    "tril": lambda m, a: a.tril(), "masked_fill": lambda m, a: a.masked_fill(a.real > 0, 0),
    "index_select": lambda m, a: a.index_select(0, m.tensor([2, 0])),
    "gather": lambda m, a: a.gather(1, m.tensor([[0], [1], [2]])),
    "repeat": lambda m, a: a.repeat(2, 1), "pow_complex_exponent": lambda m, a: a ** (1 + 1j),
    "mul_": lambda m, a: a.clone().mul_(2j), "add_": lambda m, a: a.clone().add_(a),
    "where_scalar": lambda m, a: m.where(a.real > 0, a, 0), "flatten": lambda m, a: a.flatten(),
    "unfold": lambda m, a: a.unfold(1, 2, 1), "isfinite": lambda m, a: m.isfinite(a),
    "tan": lambda m, a: a.tan(), "log10": lambda m, a: a.log10(), "asin": lambda m, a: a.asin(),
    "atanh": lambda m, a: a.atanh(), "expm1": lambda m, a: a.expm1(),
}


@pytest.mark.parametrize("name", list(LINEAR_AND_COMPOSED))
def test_linear_and_composed(name):
    ccheck(LINEAR_AND_COMPOSED[name], Z, atol=1e-4)


@pytest.mark.parametrize("name", ["var", "std", "var_dim", "einsum"])
def test_composed_with_other_nodes(name):
    """Values and gradients as torch (ember composes these, so the grad_fn differs)."""
    fn = {"var": lambda m, a: a.var(), "std": lambda m, a: a.std(0),
          "var_dim": lambda m, a: a.var(1, keepdim=True, correction=0),
          "einsum": lambda m, a: m.einsum("ij,kj->ik", a, a)}[name]
    ccheck(fn, Z, atol=1e-4, names=False)
