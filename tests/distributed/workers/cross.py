"""The same seeded DDP program for torch (under torchrun, gloo) and ember (under ember-run):
FRAMEWORK=torch|ember. Prints one loss per rank and step."""

import os
import sys

if os.environ["FRAMEWORK"] == "ember":
    import ember as torch
else:
    import torch

dist = torch.distributed
nn = torch.nn
DDP = torch.nn.parallel.DistributedDataParallel
data = torch.utils.data

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 4))
ddp = DDP(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
g = torch.Generator().manual_seed(1)
x, y = torch.randn(96, 8, generator=g), torch.randint(0, 4, (96,), generator=g)
dataset = data.TensorDataset(x, y)
sampler = data.distributed.DistributedSampler(dataset, shuffle=True, seed=3)
loader = data.DataLoader(dataset, batch_size=8, sampler=sampler)
step = 0
for epoch in range(2):
    sampler.set_epoch(epoch)
    for xb, yb in loader:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(ddp(xb), yb)
        loss.backward()
        opt.step()
        sys.stdout.write(f"LOSS {rank} {step} {loss.item():.7f}\n")  # one write per line
        sys.stdout.flush()
        step += 1
dist.destroy_process_group()
