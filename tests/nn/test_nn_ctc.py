"""nn.CTCLoss / F.ctc_loss vs torch: losses and gradients (random upstream gradients) for
padded and concatenated targets, repeated labels, empty targets, impossible alignments with
and without zero_infinity, every reduction, any blank index, unbatched input, float64, the
grad_fn names, the module, and torch's errors."""

import numpy as np
import pytest
import torch
from oracle import assert_same, same

import ember

R = np.random.default_rng(21)


def _case(t_max=12, n=4, c=6, s=5, blank=0, repeats=False, normalized=True, dtype="float32"):
    x = R.standard_normal((t_max, n, c)).astype(dtype)
    if normalized:
        x = x - np.log(np.exp(x).sum(-1, keepdims=True))
    labels = [i for i in range(c) if i != blank]
    targets = R.choice(labels, size=(n, s))
    if repeats:
        targets[:, 1] = targets[:, 0]
    il = R.integers(t_max // 2, t_max + 1, n)
    il[0] = t_max
    tl = R.integers(0, s + 1, n)
    tl[0] = s
    return x, targets, il, tl


def _run(lib, x, targets, il, tl, as_tensor=False, concat=False, **kw):
    lp = lib.tensor(x, requires_grad=True)
    tg = lib.tensor(targets)
    if concat:
        tg = lib.cat([tg[i, :tl[i]] for i in range(len(tl))])
    lens = (lib.tensor(il), lib.tensor(tl)) if as_tensor else (list(il), list(tl))
    return lp, lib.nn.functional.ctc_loss(lp, tg, *lens, **kw)


CASES = [
    dict(),
    dict(blank=3),
    dict(repeats=True),
    dict(normalized=False),
    dict(dtype="float64"),
    dict(t_max=30, n=3, c=10, s=12),
    dict(t_max=5, n=3, s=4),  # some alignments impossible (inf)
]


@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("zero_infinity", [False, True])
@pytest.mark.parametrize("form", ["padded", "concat", "tensor-lengths"])
def test_ctc_matches_torch(case, reduction, zero_infinity, form):
    blank = case.get("blank", 0)
    x, targets, il, tl = _case(**case)
    kw = dict(blank=blank, reduction=reduction, zero_infinity=zero_infinity,
              as_tensor=form == "tensor-lengths", concat=form == "concat")
    elp, el = _run(ember, x, targets, il, tl, **kw)
    tlp, tloss = _run(torch, x, targets, il, tl, **kw)
    tol = 1e-9 if case.get("dtype") == "float64" else 1e-4
    assert_same(el, tloss, atol=tol, rtol=tol)
    assert type(el.grad_fn).__name__ == type(tloss.grad_fn).__name__
    u = R.standard_normal(tuple(tloss.shape)).astype(x.dtype)
    el.backward(ember.tensor(u))
    tloss.backward(torch.tensor(u))
    assert_same(elp.grad, tlp.grad, atol=tol, rtol=tol)  # NaN where torch's is NaN


def test_ctc_edge_lengths():
    x, targets, _, _ = _case(t_max=6, n=4)
    for il, tl in (([0, 6, 6, 1], [0, 0, 5, 1]), ([6, 6, 6, 6], [0, 0, 0, 0]),
                   ([0, 3, 2, 1], [1, 0, 3, 2])):
        def fn(lib, il=il, tl=tl):
            lp, loss = _run(lib, x, targets, np.array(il), np.array(tl), reduction="none")
            loss.backward(lib.ones(4))
            return loss, lp.grad

        same(fn)


def test_ctc_unbatched_and_module():
    x, targets, il, tl = _case(n=1)

    def fn(lib):
        lp = lib.tensor(x[:, 0], requires_grad=True)
        loss = lib.nn.functional.ctc_loss(lp, lib.tensor(targets[0, :tl[0]]), [il[0]], [tl[0]],
                                          reduction="none")
        loss.backward()
        return loss, lp.grad

    same(fn)

    def module(lib):
        crit = lib.nn.CTCLoss(blank=2, reduction="sum", zero_infinity=True)
        x2, tg, il2, tl2 = _case(blank=2)
        return repr(crit), crit(lib.tensor(x2), lib.tensor(tg), lib.tensor(il2),
                                lib.tensor(tl2))

    state = R.bit_generator.state
    e = module(ember)
    R.bit_generator.state = state
    t = module(torch)
    assert e[0] == t[0]
    assert_same(e[1], t[1], atol=1e-4)


def test_ctc_errors():
    x, targets, il, tl = _case(t_max=6, n=2, s=3)

    def call(lib, **kw):
        args = dict(targets=lib.tensor(targets), il=[6, 5], tl=[3, 2])
        args.update(kw)
        return lib.nn.functional.ctc_loss(lib.tensor(x), args["targets"], args["il"],
                                          args["tl"], blank=args.get("blank", 0),
                                          reduction=args.get("reduction", "mean"))

    same(lambda lib: call(lib, blank=6), match="blank must be in label range")
    same(lambda lib: call(lib, il=[6, 5, 4]), match="input_lengths must be of size batch_size")
    same(lambda lib: call(lib, tl=[3]), match="target_lengths must be of size batch_size")
    same(lambda lib: call(lib, il=[7, 5]), match="Expected input_lengths to have value at most")
    same(lambda lib: call(lib, tl=[4, 2]), match="Expected tensor to have size at least 4")
    same(lambda lib: call(lib, il=[-1, 5]), match="at least 0")
    same(lambda lib: call(lib, tl=[3, -1]), match="at least 0")
    same(lambda lib: call(lib, targets=lib.tensor(targets).view(-1)[:4]),
         match="Expected tensor to have size 5 at dimension 0")
    same(lambda lib: call(lib, reduction="foo"), match="is not a valid value for reduction")
    same(lambda lib: lib.nn.functional.ctc_loss(lib.tensor(x).long(), lib.tensor(targets),
                                                [6, 5], [3, 2]))


def test_ctc_is_once_differentiable():
    x, targets, il, tl = _case()
    lp, loss = _run(ember, x, targets, il, tl)
    g = ember.autograd.grad(loss, lp, create_graph=True)[0]
    with pytest.raises(RuntimeError):
        g.sum().backward()
