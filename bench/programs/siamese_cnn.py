"""A siamese CNN that learns whether two 28x28 images show the same class (BCE on a head).

Synthetic images: each of ten classes is a fixed pattern of Gaussian blobs; a sample is its
class pattern shifted by up to two pixels, scaled, and noised. A ``DataLoader`` shuffles
pairs (half same-class, half not); both images go through one shared convolutional tower, and
a linear head on ``|e1 - e2|`` gives the logit. Adam with a step learning-rate schedule.
"""

from __future__ import annotations

import numpy as np

PAIRS, BATCH, EMBED = 1024, 32, 64


def images(labels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One noisy, shifted 28x28 float32 image per label (the class patterns use seed 0)."""
    yy, xx = np.mgrid[0:28, 0:28]
    proto_rng = np.random.default_rng(0)
    protos = np.zeros((10, 28, 28))
    for c in range(10):
        for cy, cx, s in zip(proto_rng.uniform(6, 22, 3), proto_rng.uniform(6, 22, 3),
                             proto_rng.uniform(1.5, 4, 3)):
            protos[c] += np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * s * s))
    shifts = rng.integers(-2, 3, (len(labels), 2))
    out = np.stack([np.roll(protos[c], tuple(s), axis=(0, 1)) for c, s in zip(labels, shifts)])
    out *= rng.uniform(0.7, 1.3, (len(labels), 1, 1))
    out += 0.3 * rng.standard_normal(out.shape)
    return out[:, None].astype(np.float32)


def pairs(n: int, seed: int = 0):
    """``n`` pairs of images and a float target: 1 for the same class, 0 for different."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 10, n)
    same = rng.random(n) < 0.5
    b = np.where(same, a, (a + rng.integers(1, 10, n)) % 10)
    return images(a, rng), images(b, rng), same.astype(np.float32)


def build(lib):
    """Model, optimizer and data in ``lib`` (ember or torch); returns ``step() -> loss``."""
    nn, F = lib.nn, lib.nn.functional

    class Siamese(nn.Module):
        def __init__(self):
            super().__init__()
            self.tower = nn.Sequential(
                nn.Conv2d(1, 16, 5, padding=2), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32 * 7 * 7, 128), nn.ReLU(),
                nn.Dropout(0.2), nn.Linear(128, EMBED))
            self.head = nn.Linear(EMBED, 1)

        def embed(self, x):
            return self.tower(x)

        def forward(self, a, b):
            return self.head((self.embed(a) - self.embed(b)).abs()).squeeze(1)

    a, b, target = (lib.from_numpy(t) for t in pairs(PAIRS))
    lib.manual_seed(0)
    loader = lib.utils.data.DataLoader(lib.utils.data.TensorDataset(a, b, target),
                                       batch_size=BATCH, shuffle=True, drop_last=True)
    model = Siamese()
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    sched = lib.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.7)
    batches = iter(())
    model.train()

    def step():
        nonlocal batches
        batch = next(batches, None)
        if batch is None:  # a new epoch
            batches = iter(loader)
            batch = next(batches)
        x1, x2, y = batch
        opt.zero_grad()
        loss = F.binary_cross_entropy_with_logits(model(x1, x2), y)
        loss.backward()
        opt.step()
        sched.step()
        return loss.item()

    return step
