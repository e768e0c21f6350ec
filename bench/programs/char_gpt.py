"""A character-level GPT trained with AdamW, written the way minGPT-style code writes it.

Token and position embeddings, ``N_LAYER`` pre-norm transformer blocks whose causal
self-attention is spelled out with matmuls, a triangular mask and softmax, a GELU MLP, weight
decay on matrices only, gradient clipping. Batches are drawn with ``lib.randint`` and stacked
from slices, as such trainers do.
"""

from __future__ import annotations

import math

from bench.programs._text import corpus

BLOCK, BATCH, N_EMBD, N_HEAD, N_LAYER, DROPOUT = 32, 16, 64, 4, 3, 0.1


def build(lib):
    """Model, optimizer and data in ``lib`` (ember or torch); returns ``step() -> loss``."""
    nn, F = lib.nn, lib.nn.functional
    text = corpus()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = lib.tensor([stoi[c] for c in text], dtype=lib.long)

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(N_EMBD, 3 * N_EMBD)
            self.proj = nn.Linear(N_EMBD, N_EMBD)
            self.attn_drop = nn.Dropout(DROPOUT)
            self.resid_drop = nn.Dropout(DROPOUT)
            mask = lib.tril(lib.ones(BLOCK, BLOCK)).view(1, 1, BLOCK, BLOCK)
            self.register_buffer("mask", mask)

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.qkv(x).split(N_EMBD, dim=2)
            q = q.view(B, T, N_HEAD, C // N_HEAD).transpose(1, 2)
            k = k.view(B, T, N_HEAD, C // N_HEAD).transpose(1, 2)
            v = v.view(B, T, N_HEAD, C // N_HEAD).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
            att = self.attn_drop(F.softmax(att, dim=-1))
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            return self.resid_drop(self.proj(y))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(N_EMBD)
            self.attn = CausalSelfAttention()
            self.ln2 = nn.LayerNorm(N_EMBD)
            self.mlp = nn.Sequential(nn.Linear(N_EMBD, 4 * N_EMBD), nn.GELU(),
                                     nn.Linear(4 * N_EMBD, N_EMBD), nn.Dropout(DROPOUT))

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self, vocab):
            super().__init__()
            self.tok = nn.Embedding(vocab, N_EMBD)
            self.pos = nn.Parameter(lib.zeros(1, BLOCK, N_EMBD))
            self.drop = nn.Dropout(DROPOUT)
            self.blocks = nn.Sequential(*[Block() for _ in range(N_LAYER)])
            self.ln_f = nn.LayerNorm(N_EMBD)
            self.head = nn.Linear(N_EMBD, vocab, bias=False)
            self.apply(self._init)

        @staticmethod
        def _init(m):
            if isinstance(m, nn.Linear | nn.Embedding):
                nn.init.normal_(m.weight, mean=0.0, std=0.02)
                if getattr(m, "bias", None) is not None:
                    nn.init.zeros_(m.bias)

        def forward(self, idx, targets):
            T = idx.size(1)
            x = self.drop(self.tok(idx) + self.pos[:, :T, :])
            logits = self.head(self.ln_f(self.blocks(x)))
            return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    lib.manual_seed(0)
    model = GPT(len(chars))
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and not n.startswith("pos")]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2 or n.startswith("pos")]
    opt = lib.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                           {"params": no_decay, "weight_decay": 0.0}],
                          lr=1e-3, betas=(0.9, 0.95))
    model.train()

    def step():
        ix = lib.randint(len(data) - BLOCK - 1, (BATCH,))
        x = lib.stack([data[i:i + BLOCK] for i in ix])
        y = lib.stack([data[i + 1:i + 1 + BLOCK] for i in ix])
        loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.item()

    return step
