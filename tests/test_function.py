"""Custom autograd.Function: the ctx API, errors and double backward, side by side with torch."""

import numpy as np
import pytest
import torch
from oracle import arr, assert_same

import ember


def _fns(lib):
    """The same user Functions, defined against ``lib``."""
    F = lib.autograd.Function

    class MyReLU(F):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.clamp(min=0) if hasattr(x, "clamp") else x * (x > 0)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * (x > 0)

    class Cube(F):
        """Backward written with lib ops, so it is differentiable again."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x ** 2

    class ScaleBy(F):
        """Non-tensor args get None; arbitrary ctx attributes; needs_input_grad."""

        @staticmethod
        def forward(ctx, x, k, w):
            ctx.k = k
            ctx.flags = ctx.needs_input_grad
            ctx.save_for_backward(w)
            return x * k * w

        @staticmethod
        def backward(ctx, g):
            (w,) = ctx.saved_tensors
            gx = g * ctx.k * w if ctx.needs_input_grad[0] else None
            return gx, None, None

    class MulSetup(F):
        """The setup_context form: forward takes no ctx."""

        @staticmethod
        def forward(x, y):
            return x * y

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * y, g * x

    class TwoOut(F):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x + y, x * y

        @staticmethod
        def backward(ctx, ga, gb):
            x, y = ctx.saved_tensors
            return ga + gb * y, ga + gb * x

    class DoubleInplace(F):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class SortLike(F):
        """Index output marked non-differentiable."""

        @staticmethod
        def forward(ctx, x):
            idx = (x * 0).long() if hasattr(x, "long") else x
            ctx.mark_non_differentiable(idx)
            return x * 1, idx

        @staticmethod
        def backward(ctx, g, gidx):
            return g

    class SeesNone(F):
        """set_materialize_grads(False): unused outputs' grads arrive as None."""

        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 1, x * 2

        @staticmethod
        def backward(ctx, ga, gb):
            ctx.seen = (ga is None, gb is None)
            SEEN.append(ctx.seen)
            return ga if gb is None else ga + gb * 2

    class TooMany(F):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g, g

    class BadShape(F):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g.sum()[None].expand(3) if g.shape[0] != 3 else g[:2]

    return dict(MyReLU=MyReLU, Cube=Cube, ScaleBy=ScaleBy, MulSetup=MulSetup, TwoOut=TwoOut,
                DoubleInplace=DoubleInplace, SortLike=SortLike, SeesNone=SeesNone,
                TooMany=TooMany, BadShape=BadShape)


SEEN: list = []
FNS = {"ember": _fns(ember), "torch": _fns(torch)}


def both(body):
    """Run ``body(lib, fns)`` in ember and torch and compare every returned value."""
    e = body(ember, FNS["ember"])
    t = body(torch, FNS["torch"])
    for a, b in zip(e, t, strict=True):
        assert_same(a, b)
    return e, t


def test_node_name_and_edges():
    def body(lib, f):
        x = lib.tensor([1.0, -2.0], requires_grad=True)
        y = f["MyReLU"].apply(x)
        return (type(y.grad_fn).__name__, type(y.grad_fn.next_functions[0][0]).__name__,
                y.requires_grad, y.is_leaf)
    both(body)


def test_myrelu_gradient():
    def body(lib, f):
        x = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
        f["MyReLU"].apply(x * 2).sum().backward()
        return (x.grad,)
    both(body)


def test_non_tensor_args_and_needs_input_grad():
    def body(lib, f):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        w = lib.tensor([3.0, 4.0])
        y = f["ScaleBy"].apply(x, 2.5, w)
        y.sum().backward()
        return x.grad, y.grad_fn.flags, len(y.grad_fn.next_functions)
    both(body)


def test_setup_context_and_two_outputs():
    def body(lib, f):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = lib.tensor([3.0, -1.0], requires_grad=True)
        a = f["MulSetup"].apply(x, y)
        s, p = f["TwoOut"].apply(x, a)
        (s * 2 + p * 3).sum().backward()
        return x.grad, y.grad, s.grad_fn is p.grad_fn, s.output_nr, p.output_nr
    both(body)


def test_double_backward_through_custom_backward():
    def body(lib, f):
        x = lib.tensor([1.0, -2.0], requires_grad=True)
        y = f["Cube"].apply(x).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (g2,) = lib.autograd.grad(g.sum(), x)
        return g, g2
    both(body)


def test_mark_dirty_inplace_forward():
    def body(lib, f):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        h = x * 1
        v0 = h._version
        out = f["DoubleInplace"].apply(h)
        out.sum().backward()
        return out is h, h._version - v0, x.grad, type(out.grad_fn).__name__
    both(body)


def test_mark_dirty_on_leaf_errors():
    for lib in (ember, torch):
        x = lib.tensor([1.0], requires_grad=True)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            FNS[lib.__name__]["DoubleInplace"].apply(x)


def test_mark_non_differentiable():
    def body(lib, f):
        x = lib.tensor([1.5, 2.0], requires_grad=True)
        v, idx = f["SortLike"].apply(x)
        v.sum().backward()
        return idx.requires_grad, v.requires_grad, x.grad
    both(body)


def test_set_materialize_grads_false():
    def body(lib, f):
        SEEN.clear()
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        a, _ = f["SeesNone"].apply(x)
        a.sum().backward()
        return SEEN[0], x.grad
    both(body)


def test_saved_tensors_freed_error():
    for lib in (ember, torch):
        x = lib.tensor([1.0], requires_grad=True)
        y = FNS[lib.__name__]["MyReLU"].apply(x)
        y.sum().backward()
        with pytest.raises(RuntimeError, match="Trying to backward through the graph a second "
                                               "time"):
            y.grad_fn.saved_tensors  # noqa: B018


def test_wrong_number_of_grads():
    for lib in (ember, torch):
        x = lib.tensor([1.0], requires_grad=True)
        y = FNS[lib.__name__]["TooMany"].apply(x)
        with pytest.raises(RuntimeError, match=r"function TooManyBackward returned an incorrect "
                                               r"number of gradients \(expected 1, got 2\)"):
            y.sum().backward()


def test_wrong_grad_shape():
    for lib in (ember, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = FNS[lib.__name__]["BadShape"].apply(x)
        with pytest.raises(RuntimeError, match=r"Function BadShapeBackward returned an invalid "
                                               r"gradient at index 0 - got \[3\] but expected "
                                               r"shape compatible with \[2\]"):
            y.sum().backward()


def test_once_differentiable_blocks_double_backward():
    for lib in (ember, torch):
        class Sq(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            @lib.autograd.function.once_differentiable
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 2 * x * g

        x = lib.tensor([3.0], requires_grad=True)
        y = Sq.apply(x)
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        assert g.item() == 6.0 and g.grad_fn is None  # grad_output needs no grad
        (g,) = lib.autograd.grad((y * y).sum(), x, create_graph=True)
        assert g.item() == 108.0 and type(g.grad_fn).__name__ == "Error"
        with pytest.raises(RuntimeError, match="trying to differentiate twice a function that "
                                               "was marked with @once_differentiable"):
            g.sum().backward()


def test_no_grad_apply_gives_plain_tensor():
    def body(lib, f):
        x = lib.tensor([1.0, -1.0], requires_grad=True)
        with lib.no_grad():
            y = f["MyReLU"].apply(x)
        return y.requires_grad, y.grad_fn is None
    both(body)


def test_forward_output_is_input_gets_aliased():
    for lib in (ember, torch):
        class Ident(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 3

        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = Ident.apply(x)
        assert y is not x and y.grad_fn is not None
        y.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


def test_float64_random_against_torch():
    a = arr(5).astype(np.float64)

    def body(lib, f):
        x = lib.tensor(a, requires_grad=True)
        y = f["Cube"].apply(f["MyReLU"].apply(x)) * 2
        y.backward(lib.ones(5, dtype=lib.float64) * 0.5)
        return y, x.grad
    both(body)


def test_bad_gradient_values_match_torch():
    msgs = []
    for lib in (ember, torch):
        class NonTensorGrad(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, k):
                return x * k

            @staticmethod
            def backward(ctx, g):
                return g * 2, g

        class IntGrad(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return 5

        class DoubleGrad(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g.double()

        x = lib.ones(2, requires_grad=True)
        out = []
        for fn in (lambda x=x: NonTensorGrad.apply(x, 3.0), lambda x=x: IntGrad.apply(x)):
            try:
                fn().sum().backward()
            except RuntimeError as e:
                out.append(str(e))
        DoubleGrad.apply(x).sum().backward()
        out.append(str(x.grad.dtype).split(".")[-1])
        msgs.append(out)
    assert msgs[0] == msgs[1]


def test_saved_tensor_modified_inplace_and_bad_save_match_torch():
    outs = []
    for lib in (ember, torch):
        out = []
        x = lib.ones(2, requires_grad=True)
        h = x * 1
        y = FNS[lib.__name__]["MyReLU"].apply(h)
        h.mul_(2)
        try:
            y.sum().backward()
        except RuntimeError as e:
            out.append(str(e).replace("torch.", "ember."))

        class Bad(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                ctx.save_for_backward(3)
                return a * 1

            @staticmethod
            def backward(ctx, g):
                return g
        try:
            Bad.apply(x)
        except TypeError as e:
            out.append(str(e))
        node = FNS[lib.__name__]["MyReLU"].apply(x).grad_fn
        out.append(repr(node).split(" object")[0].replace("torch.", "ember."))
        out.append(isinstance(node, lib.autograd.graph.Node))
        outs.append(out)
    assert outs[0] == outs[1]
