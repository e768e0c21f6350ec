"""A custom autograd Function (the notes' MyReLU), checked with gradcheck, and a Function whose
backward supports double backward. Run: python examples/custom_function.py"""

import ember as torch


class MyReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x ** 2  # written in ember ops, so it is differentiable again


x = torch.randn(5, dtype=torch.double, requires_grad=True)
y = MyReLU.apply(x)
print("grad_fn:", y.grad_fn.name())
print("gradcheck MyReLU:", torch.autograd.gradcheck(MyReLU.apply, (x,)))
print("gradcheck Cube:", torch.autograd.gradcheck(Cube.apply, (x,)))
print("gradgradcheck Cube:", torch.autograd.gradgradcheck(Cube.apply, (x,)))


class WrongCube(Cube):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2 * x ** 2  # deliberately wrong


try:
    torch.autograd.gradcheck(WrongCube.apply, (x,))
except RuntimeError as err:
    print("gradcheck caught the wrong backward:", type(err).__name__)
