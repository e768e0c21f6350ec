"""A tour of autograd: the graph, leaves, retain_grad, backward with a gradient argument,
higher-order gradients, no_grad and detach. Run: python examples/autograd_tour.py"""

import ember as torch

# The graph: every result of an op on a tensor that requires grad records its grad_fn.
a = torch.tensor(2.0, requires_grad=True)
b = torch.tensor(3.0, requires_grad=True)
c = a + b
e = c * (b * 2)
print("e =", e)
print("e.grad_fn:", e.grad_fn.name(), "->", [n.name() for n, _ in e.grad_fn.next_functions])
print("leaves:", a.is_leaf, b.is_leaf, "| non-leaf:", c.is_leaf)

# retain_grad keeps .grad on a non-leaf; leaves get .grad automatically.
c.retain_grad()
e.backward()
print("de/da =", a.grad.item(), "de/db =", b.grad.item(), "de/dc =", c.grad.item())

# backward on a non-scalar output needs the vector of a vector-Jacobian product.
x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = x * x
y.backward(gradient=torch.tensor([1.0, 0.1, 0.01]))
print("x.grad with gradient=[1, 0.1, 0.01]:", x.grad.tolist())

# Higher-order gradients: build the graph of the gradient itself with create_graph=True.
x = torch.tensor(3.0, requires_grad=True)
(dy,) = torch.autograd.grad(x ** 3, x, create_graph=True)
(d2y,) = torch.autograd.grad(dy, x)
print("d/dx x^3 at 3 =", dy.item(), "| d2/dx2 =", d2y.item())

# no_grad builds no graph; detach shares storage but forgets history.
with torch.no_grad():
    z = x * 2
print("under no_grad: requires_grad =", z.requires_grad, "grad_fn =", z.grad_fn)
w = (x * 2).detach()
print("detached: requires_grad =", w.requires_grad, "is_leaf =", w.is_leaf)
