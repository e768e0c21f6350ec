"""An ensemble of models run as one with ``stack_module_state`` + ``vmap``.

``stack_module_state`` stacks the parameters of N models of the same architecture along a
new first dimension; ``vmap(functional_call)`` runs the architecture once per set of
parameters. Checked against calling each model in a loop. Run: python examples/func_ensemble.py
"""

import copy

import ember as torch
from ember import nn
from ember.func import functional_call, stack_module_state, vmap

torch.manual_seed(0)
models = [nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 3)) for _ in range(5)]
params, buffers = stack_module_state(models)
print("stacked parameters:", {k: tuple(v.shape) for k, v in params.items()})

# A copy gives the architecture; functional_call swaps the stacked weights in for each call.
base = copy.deepcopy(models[0])


def run(p, b, x):
    return functional_call(base, (p, b), (x,))


# Every model on the same minibatch ...
x = torch.randn(4, 8)
same = vmap(run, in_dims=(0, 0, None))(params, buffers, x)
loop = torch.stack([m(x) for m in models])
print("same minibatch: output", tuple(same.shape), "matches the loop:",
      torch.allclose(same, loop, atol=1e-6))

# ... or each model on its own minibatch.
xs = torch.randn(5, 4, 8)
own = vmap(run)(params, buffers, xs)
loop = torch.stack([m(xi) for m, xi in zip(models, xs)])
print("own minibatch:  output", tuple(own.shape), "matches the loop:",
      torch.allclose(own, loop, atol=1e-6))

# The stacked parameters are leaves: one backward trains all five models at once.
own.pow(2).mean().backward()
ref = [torch.autograd.grad(m(xi).pow(2).mean() / 5, m[0].weight)[0]
       for m, xi in zip(models, xs)]
print("gradients flow to the stacked weights:",
      torch.allclose(params["0.weight"].grad, torch.stack(ref), atol=1e-6))
