"""Freezing parameters: a frozen backbone gets no gradients and does not change; only the new
head trains. Run: python examples/freezing.py"""

import ember as torch
from ember import nn

torch.manual_seed(0)
backbone = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
head = nn.Linear(16, 2)
model = nn.Sequential(backbone, head)

for p in backbone.parameters():
    p.requires_grad_(False)
trainable = [n for n, p in model.named_parameters() if p.requires_grad]
print("trainable parameters:", trainable)

opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
before = backbone[0].weight.clone()
x, y = torch.randn(32, 8), torch.randint(0, 2, (32,))
for _ in range(5):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("backbone grad:", backbone[0].weight.grad)
print("backbone unchanged:", torch.equal(before, backbone[0].weight))
print("head has grad:", head.weight.grad is not None)
