"""The benchmark workloads, each written once against the torch API (``lib`` is ember or torch).

Each factory builds its model and data on ``device`` and returns a zero-argument ``step``
to time. ``wrap`` (``lib.compile``, or nothing for eager runs) wraps what a compiled run
compiles: the forward pass with its loss, and the optimizer step.
"""

from __future__ import annotations

import numpy as np


def _data(lib, *shape, seed=0, device="cpu"):
    return lib.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32),
                      device=device)


def _labels(lib, n, classes=10, device="cpu"):
    return lib.tensor(np.random.default_rng(1).integers(0, classes, n), device=device)


def _same(fn):
    return fn


def _train_step(lib, model, opt, x, y, wrap):
    loss_fn = lib.nn.CrossEntropyLoss()
    forward = wrap(lambda x, y: loss_fn(model(x), y))
    update = wrap(opt.step)

    def step():
        loss = forward(x, y)
        loss.backward()
        update()
        opt.zero_grad()
    return step


def mlp_train(lib, device="cpu", wrap=_same):
    """The quickstart MLP: one SGD training step on a batch of 64 28x28 images."""
    nn = lib.nn
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512),
                          nn.ReLU(), nn.Linear(512, 10)).to(device)
    opt = lib.optim.SGD(model.parameters(), lr=1e-3)
    x, y = _data(lib, 64, 1, 28, 28, device=device), _labels(lib, 64, device=device)
    return _train_step(lib, model, opt, x, y, wrap)


def cnn_train(lib, device="cpu", wrap=_same):
    """The modules note's CNN: one Adam training step on a batch of 64."""
    nn = lib.nn
    model = nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(3136, 512), nn.ReLU(), nn.Dropout(0.25), nn.Linear(512, 10)
    ).to(device)
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    x, y = _data(lib, 64, 1, 28, 28, device=device), _labels(lib, 64, device=device)
    return _train_step(lib, model, opt, x, y, wrap)


def _chain(x):
    y = x
    for _ in range(50):
        y = (y * 1.01 + 0.5).tanh() - x
    return y.sum()


def op_chain(lib, device="cpu", wrap=_same):
    """200 elementwise ops on 16-element tensors plus backward: per-op overhead."""
    x = _data(lib, 16, device=device).requires_grad_()
    chain = wrap(_chain)

    def step():
        chain(x).backward()
    return step


def matmul_train(lib, device="cpu", wrap=_same):
    """A two-layer 256x1024x1024 matmul training step: time should be spent in BLAS."""
    w1 = (_data(lib, 1024, 1024, seed=2, device=device) * 0.03).requires_grad_()
    w2 = (_data(lib, 1024, 1024, seed=3, device=device) * 0.03).requires_grad_()
    x = _data(lib, 256, 1024, device=device)
    forward = wrap(lambda x: (x.mm(w1).relu().mm(w2) ** 2).mean())

    def step():
        loss = forward(x)
        loss.backward()
        with lib.no_grad():
            for w in (w1, w2):
                w -= 1e-3 * w.grad
                w.grad = None
    return step


def mlp_inference(lib, device="cpu", wrap=_same):
    """The quickstart MLP forward pass on a batch of 1024, under no_grad."""
    nn = lib.nn
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512),
                          nn.ReLU(), nn.Linear(512, 10)).eval().to(device)
    x = _data(lib, 1024, 1, 28, 28, device=device)
    run = wrap(model)

    def step():
        with lib.no_grad():
            run(x)
    return step


# name, factory, per-op divisor (op_chain reports time per op), target ratio: eager ember
# against eager torch (issue #6), then ember.compile against eager torch (issue #13)
WORKLOADS = [
    ("MLP train step (batch 64)", mlp_train, 1, 1.5),
    ("CNN train step, Adam (batch 64)", cnn_train, 1, 2.5),
    ("op chain, per op (16 elems)", op_chain, 200, 4.0),
    ("matmul 256x1024x1024 train step", matmul_train, 1, 1.2),
    ("MLP inference (batch 1024)", mlp_inference, 1, 1.5),
]
COMPILED = [
    ("compiled MLP train step", mlp_train, 1, 0.95),
    ("compiled CNN train step, Adam", cnn_train, 1, 0.9),
    ("compiled op chain, per op", op_chain, 200, 0.5),
    ("compiled MLP inference", mlp_inference, 1, 0.95),
]
