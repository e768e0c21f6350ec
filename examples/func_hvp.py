"""A Hessian-vector product three ways: double backward, forward-over-reverse, ``hessian``.

``H v`` for f(x) = sum(tanh(x) * x^2) + (A x) . x, without (or with) building H:
1. double backward: the gradient of <grad f(x), v> with respect to x (reverse-over-reverse);
2. forward-over-reverse: ``jvp`` of ``grad(f)`` along v (forward mode on top of reverse);
3. ``hessian(f)(x) @ v``: the full matrix, then a matrix-vector product.
Run: python examples/func_hvp.py
"""

import ember as torch
from ember.func import grad, hessian, jvp

torch.manual_seed(0)
n = 6
A = torch.randn(n, n, dtype=torch.float64)
x = torch.randn(n, dtype=torch.float64)
v = torch.randn(n, dtype=torch.float64)


def f(x):
    return (torch.tanh(x) * x ** 2).sum() + (A @ x) @ x


# 1. Double backward with autograd.grad.
xr = x.clone().requires_grad_()
(g,) = torch.autograd.grad(f(xr), xr, create_graph=True)
(hvp_double,) = torch.autograd.grad(g @ v, xr)

# 2. Forward-over-reverse: the directional derivative of the gradient.
_, hvp_fwd = jvp(grad(f), (x,), (v,))

# 3. The full Hessian.
H = hessian(f)(x)
hvp_full = H @ v

# The plain computation: the analytic Hessian.
t = torch.tanh(x)
d2 = 2 * t + 4 * x * (1 - t ** 2) - 2 * x ** 2 * t * (1 - t ** 2)
H_exact = torch.diag(d2) + A + A.T
exact = H_exact @ v

for name, hv in (("double backward", hvp_double), ("forward-over-reverse", hvp_fwd),
                 ("hessian(f) @ v", hvp_full)):
    print(f"{name:22s} {[round(a, 6) for a in hv.tolist()]} "
          f"max err {(hv - exact).abs().max().item():.1e}")
print("all three agree with the analytic H v:",
      all(torch.allclose(h, exact, atol=1e-10)
          for h in (hvp_double, hvp_fwd, hvp_full)))
print("Hessian is symmetric:", torch.allclose(H, H.T, atol=1e-12))
