"""Gradient clipping and gradient accumulation: four micro-batches of 16 give the same update
as one batch of 64. Run: python examples/clipping_accumulation.py"""

import copy

import ember as torch
from ember import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))
twin = copy.deepcopy(model)
x, y = torch.randn(64, 10), torch.randn(64, 1)
loss_fn = nn.MSELoss()

# One batch of 64.
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loss_fn(model(x), y).backward()
total = nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)
print(f"total grad norm before clipping: {total.item():.6f}")
opt.step()

# Four accumulated micro-batches of 16, each loss scaled by 1/4.
opt2 = torch.optim.SGD(twin.parameters(), lr=0.1)
for xb, yb in zip(x.split(16), y.split(16)):
    (loss_fn(twin(xb), yb) / 4).backward()
total2 = nn.utils.clip_grad_norm_(twin.parameters(), max_norm=0.5)
print(f"accumulated grad norm:           {total2.item():.6f}")
opt2.step()

diff = max((p - q).abs().max().item() for p, q in zip(model.parameters(), twin.parameters()))
print(f"max parameter difference after the update: {diff:.2e}")
clipped = torch.nn.utils.parameters_to_vector([p.grad for p in model.parameters()]).norm()
print(f"grad norm after clipping: {clipped.item():.6f}")
