"""ember.compile in five steps: compile a small model, see the program it captured (forward
and backward as straight-line NumPy), train with it, see why a function falls back to eager,
and time both. Run: python examples/compile_tour.py"""

import time

import ember as torch
from ember import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
loss_fn = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
step = torch.compile(lambda x, y: loss_fn(model(x), y))  # forward + loss: one program
update = torch.compile(opt.step)  # the optimizer step: another
x, y = torch.randn(32, 8), torch.randint(0, 3, (32,))

# 1. The first call of a new signature runs eagerly, the second captures, later ones replay.
for i in range(3):
    loss = step(x, y)
    print(f"call {i + 1}: loss {loss.item():.4f}, grad_fn {type(loss.grad_fn).__name__}")
    loss.backward()
    update()
    opt.zero_grad()

# 2. What was captured: the programs ember replays, one NumPy call per line.
print("\n--- the captured programs ---")
torch.compiler.show_code(step)

# 3. A function that reads a tensor's value into Python cannot be one flat program.
def needs_python(x):
    return x * 2 if x.sum() > 0 else -x


report = torch.compiler.explain(needs_python)(torch.randn(4))
print(f"\n--- explain ---\ngraph breaks: {report.graph_break_count}")
print(report.break_reasons[0])

# 4. Eager against compiled, on the same model and data.
def timed(fn, n=200):
    fn()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


def eager_step():
    loss_fn(model(x), y).backward()


def compiled_step():
    step(x, y).backward()


print(f"\neager step    {timed(eager_step):8.1f} us\ncompiled step {timed(compiled_step):8.1f} us")
