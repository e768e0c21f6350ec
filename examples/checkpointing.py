"""Activation checkpointing: recompute a block in backward instead of storing its activations.
Same gradients, fewer saved tensors. Run: python examples/checkpointing.py"""

import ember as torch
from ember import nn
from ember.autograd.graph import PACKED
from ember.utils.checkpoint import checkpoint


def block(x):
    for _ in range(8):
        x = torch.tanh(x * 1.1 + 0.1)
    return x


def saved_tensor_count(out) -> int:
    seen, stack, count = set(), [out.grad_fn], 0
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        saved = node._saved  # a tuple while the graph is alive
        if isinstance(saved, tuple):  # checkpoint leaves PACKED placeholders, not tensors
            count += sum(1 for t, _ in saved if t is not None and t is not PACKED)
        stack.extend(n for n, _ in node.next_functions)
    return count


torch.manual_seed(0)
layer = nn.Linear(16, 16)
x = torch.randn(4, 16, requires_grad=True)

plain = block(layer(x)).sum()
ckpt = checkpoint(block, layer(x), use_reentrant=False).sum()
print("saved tensors, plain:       ", saved_tensor_count(plain))
print("saved tensors, checkpointed:", saved_tensor_count(ckpt))

(g_plain,) = torch.autograd.grad(plain, x)
(g_ckpt,) = torch.autograd.grad(ckpt, x)
print("same gradients:", torch.allclose(g_plain, g_ckpt))
