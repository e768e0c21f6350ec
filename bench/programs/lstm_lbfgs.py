"""Sine-wave prediction with two stacked LSTM cells, trained with L-BFGS in float64.

The model steps through time in Python (``nn.LSTMCell`` twice and a linear read-out per time
step), predicts the next sample of each wave, then keeps generating from its own output for a
few steps, as sequence-prediction demos do. One training step is one ``opt.step(closure)``:
``MAX_ITER`` L-BFGS iterations, each a forward and backward over the whole batch.
"""

from __future__ import annotations

import numpy as np

WAVES, LENGTH, FUTURE, HIDDEN, MAX_ITER = 16, 60, 5, 32, 8


def waves(n: int, length: int, seed: int = 0) -> np.ndarray:
    """``n`` noisy sines with random phase and period, sampled ``length`` times."""
    rng = np.random.default_rng(seed)
    t = np.arange(length)
    phase = rng.uniform(0, 2 * np.pi, (n, 1))
    period = rng.uniform(12, 30, (n, 1))
    return np.sin(2 * np.pi * t / period + phase) + 0.02 * rng.standard_normal((n, length))


def build(lib):
    """Model, optimizer and data in ``lib`` (ember or torch); returns ``step() -> loss``."""
    nn = lib.nn

    class Predictor(nn.Module):
        def __init__(self):
            super().__init__()
            self.cell1 = nn.LSTMCell(1, HIDDEN)
            self.cell2 = nn.LSTMCell(HIDDEN, HIDDEN)
            self.out = nn.Linear(HIDDEN, 1)

        def forward(self, x, future=0):
            n = x.size(0)
            h1 = c1 = lib.zeros(n, HIDDEN, dtype=lib.double)
            h2 = c2 = lib.zeros(n, HIDDEN, dtype=lib.double)
            outputs = []
            for x_t in x.split(1, dim=1):
                h1, c1 = self.cell1(x_t, (h1, c1))
                h2, c2 = self.cell2(h1, (h2, c2))
                outputs.append(self.out(h2))
            for _ in range(future):
                h1, c1 = self.cell1(outputs[-1], (h1, c1))
                h2, c2 = self.cell2(h1, (h2, c2))
                outputs.append(self.out(h2))
            return lib.cat(outputs, dim=1)

    data = lib.from_numpy(waves(WAVES, LENGTH + 1))
    x, y = data[:, :-1], data[:, 1:]
    lib.manual_seed(0)
    model = Predictor().double()
    opt = lib.optim.LBFGS(model.parameters(), lr=0.5, max_iter=MAX_ITER, history_size=20)
    loss_fn = nn.MSELoss()

    def closure():
        opt.zero_grad()
        pred = model(x[:, :-FUTURE], future=FUTURE)
        loss = loss_fn(pred, y)
        loss.backward()
        return loss

    def step():
        return opt.step(closure).item()

    return step
