"""A word-level GRU language model trained with truncated backpropagation through time.

The corpus is cut into ``BATCH`` parallel streams; each step feeds the next ``BPTT`` words of
every stream through embedding, dropout, a two-layer GRU and a linear decoder, carries the
hidden state over (detached), clips the gradient norm and updates the weights by hand with
``p.data.add_(p.grad, alpha=-lr)``, as classic word-language-model trainers do.
"""

from __future__ import annotations

from bench.programs._text import corpus

BATCH, BPTT, EMSIZE, NHID, NLAYERS, DROPOUT, LR, CLIP = 20, 35, 128, 128, 2, 0.2, 2.0, 0.25


def build(lib):
    """Model and data in ``lib`` (ember or torch); returns ``step() -> loss``."""
    nn = lib.nn
    words = corpus().replace(".", " <eos>").split()
    vocab = {w: i for i, w in enumerate(dict.fromkeys(words))}
    ids = lib.tensor([vocab[w] for w in words], dtype=lib.long)
    n = ids.size(0) // BATCH
    streams = ids[:n * BATCH].view(BATCH, n).t().contiguous()  # (time, batch)

    class RNNModel(nn.Module):
        def __init__(self, ntoken):
            super().__init__()
            self.drop = nn.Dropout(DROPOUT)
            self.encoder = nn.Embedding(ntoken, EMSIZE)
            self.rnn = nn.GRU(EMSIZE, NHID, NLAYERS, dropout=DROPOUT)
            self.decoder = nn.Linear(NHID, ntoken)
            nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -0.1, 0.1)

        def forward(self, x, hidden):
            emb = self.drop(self.encoder(x))
            out, hidden = self.rnn(emb, hidden)
            return self.decoder(self.drop(out)), hidden

    lib.manual_seed(0)
    model = RNNModel(len(vocab))
    criterion = nn.CrossEntropyLoss()
    hidden = lib.zeros(NLAYERS, BATCH, NHID)
    pos = 0
    model.train()

    def step():
        nonlocal hidden, pos
        if pos + BPTT + 1 > streams.size(0):
            pos = 0
        x, y = streams[pos:pos + BPTT], streams[pos + 1:pos + 1 + BPTT].reshape(-1)
        pos += BPTT
        hidden = hidden.detach()
        model.zero_grad()
        out, hidden = model(x, hidden)
        loss = criterion(out.view(-1, out.size(-1)), y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-LR)
        return loss.item()

    return step
