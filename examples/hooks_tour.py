"""Every kind of hook and the order they fire, then per-layer gradient norms collected with
module hooks on a model with and without BatchNorm. Run: python examples/hooks_tour.py
(``--explore hooks.html`` also writes the first graph's backward as a page to step through)."""

import argparse

import ember as torch
from ember import nn

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--explore", metavar="PAGE", help="write the first backward, hook by hook, "
                    "as an interactive page (ember.viz.explore)")
args, _ = parser.parse_known_args()  # known only: under pytest's runpy, argv is pytest's

events = []
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * 3
z = y.sum()
x.register_hook(lambda g: events.append("tensor hook on leaf x"))
x.register_post_accumulate_grad_hook(lambda t: events.append("post-accumulate hook on x"))
y.register_hook(lambda g: events.append("tensor hook on y"))
y.retain_grad()
y.grad_fn.register_prehook(lambda go: events.append("pre-hook of MulBackward0"))
y.grad_fn.register_hook(lambda gi, go: events.append("post-hook of MulBackward0"))
if args.explore:
    torch.viz.explore(z, args.explore, params={"x": x})  # runs z.backward() and records it
else:
    z.backward()
print("hook order:")
for i, ev in enumerate(events, 1):
    print(f"  {i}. {ev}")


def grad_norms(model: nn.Module) -> dict:
    """Run one backward pass and collect each layer's output-gradient norm via module hooks."""
    norms = {}
    handles = [m.register_full_backward_hook(
        lambda mod, gin, gout, name=name: norms.__setitem__(name, gout[0].norm().item()))
        for name, m in model.named_children()]
    torch.manual_seed(0)
    out = model(torch.randn(32, 20))
    out.pow(2).mean().backward()
    for h in handles:
        h.remove()
    return norms


torch.manual_seed(0)
plain = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                      nn.Linear(64, 1))
torch.manual_seed(0)
with_bn = nn.Sequential(nn.Linear(20, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 64),
                        nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 1))
for label, model in (("without BatchNorm", plain), ("with BatchNorm", with_bn)):
    print(f"gradient norms {label}:")
    for name, n in grad_norms(model).items():
        print(f"  layer {name:>2}: {n:.6f}")
