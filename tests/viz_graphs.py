"""Graphs the explorer tests open, each buildable twice alike (one to explore, one to compare)."""

from __future__ import annotations

import numpy as np

import ember
from ember import nn
from ember.examples.quickstart import NeuralNetwork


def mlp(seed: int = 0):
    """The quickstart's MLP on a batch of 4 Fashion-MNIST-sized images: (model, X, y, loss_fn)."""
    ember.manual_seed(seed)
    model = NeuralNetwork()
    rng = np.random.default_rng(seed)
    X = ember.from_numpy(rng.random((4, 1, 28, 28), dtype=np.float32))
    y = ember.tensor(rng.integers(0, 10, 4))
    return model, X, y, nn.CrossEntropyLoss()


def torch_mlp(model):
    """The same MLP in torch, with ``model``'s weights."""
    import torch

    t = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Sequential(
        torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(),
        torch.nn.Linear(512, 10)))
    state = {"1." + k[len("linear_relu_stack."):]: torch.from_numpy(v.numpy().copy())
             for k, v in model.state_dict().items()}
    t.load_state_dict(state)
    return t


def fanout_hooks():
    """x -> y = x * 2 feeds both sin and cos (fan-out), with every kind of hook: (x, y, z)."""
    x = ember.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = x * 2
    z = (y.sin() * y.cos() + y).sum()
    x.register_hook(lambda g: g * 1.5)  # tensor hook on the leaf
    x.register_post_accumulate_grad_hook(lambda t: None)
    y.register_hook(lambda g: g + 1)  # tensor hook on y's node, output 0
    y.retain_grad()
    y.grad_fn.register_prehook(lambda gout: None)
    y.grad_fn.register_hook(lambda gin, gout: None)
    return x, y, z


def chain(n: int):
    """A chain of ``n`` ops (a mul or a sin, each followed by an add) ending in a sum."""
    x = ember.ones(4, requires_grad=True)
    y = x
    for i in range((n - 1) // 2):
        y = y.sin() if i % 2 else y * 1.0001
        y = y + 0.5
    return x, y.sum()
