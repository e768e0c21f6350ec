"""Per-sample gradients of the quickstart MLP with ``vmap(grad(...))``.

One gradient per example (for DP-SGD, influence functions, gradient-noise statistics):
``grad`` differentiates the loss of ONE sample with respect to the parameters, ``vmap`` maps
that over the batch. The result is checked against a Python loop of ordinary ``backward``
calls, one per sample. Run: python examples/func_per_sample_grads.py
"""

import time

import ember as torch
from ember.examples.quickstart import NeuralNetwork
from ember.func import functional_call, grad, vmap
from ember.nn import functional as F

torch.manual_seed(0)
model = NeuralNetwork()
x = torch.randn(64, 1, 28, 28)
y = torch.randint(0, 10, (64,))
params = {k: v.detach() for k, v in model.named_parameters()}


def loss_of_one(p, xi, yi):
    """The loss of one sample: the model sees a batch of one."""
    logits = functional_call(model, p, (xi.unsqueeze(0),))
    return F.cross_entropy(logits, yi.unsqueeze(0))


# vmap runs loss_of_one ONCE, on tensors that carry the batch (see ember/func/_batched.py).
per_sample_grads = vmap(grad(loss_of_one), in_dims=(None, 0, 0))
per_sample = per_sample_grads(params, x, y)
t0 = time.perf_counter()
per_sample_grads(params, x, y)
took = time.perf_counter() - t0
for name, g in per_sample.items():
    print(f"{name:30s} per-sample grad shape {tuple(g.shape)}")

# The plain computation: one forward and backward per sample.
worst = 0.0
t0 = time.perf_counter()
for i in range(x.shape[0]):
    model.zero_grad()
    F.cross_entropy(model(x[i:i + 1]), y[i:i + 1]).backward()
    for name, p in model.named_parameters():
        worst = max(worst, (per_sample[name][i] - p.grad).abs().max().item())
loop_took = time.perf_counter() - t0
print(f"max |vmap(grad) - loop of backward| = {worst:.2e}")
print("per-sample grads match the loop:", worst < 1e-5)

# The mean of the per-sample gradients is the ordinary batch gradient.
model.zero_grad()
F.cross_entropy(model(x), y).backward()
mean_err = max((per_sample[n].mean(0) - p.grad).abs().max().item()
               for n, p in model.named_parameters())
print("mean of per-sample grads = batch grad:", mean_err < 1e-6)
print(f"vmap(grad) over 64 samples: {took * 1e3:.0f} ms; the loop (with its checks): "
      f"{loop_took * 1e3:.0f} ms")
