"""gpt2 -- GPT-2 in plain PyTorch, laid out and named as the zoo's gpt2 (nanoGPT's layout)

    python3 -m autotm_torch.zoo_check tiny_gpt     # one step of this model against autotm's

make(layers, width, heads, positions, vocab) gives the model; its forward takes token ids
[batch, seq] and returns logits [batch, seq, vocab]. The output projection is the token
embedding (tied), the attention causal, GELU the tanh form, and there is no dropout: a step
is deterministic, as autotm's is.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(width, 3 * width)
        self.c_proj = nn.Linear(width, width)

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // self.heads))
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        att = F.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.c_fc = nn.Linear(width, 4 * width)
        self.c_proj = nn.Linear(4 * width, width)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.ln_1 = nn.LayerNorm(width)
        self.attn = Attention(width, heads)
        self.ln_2 = nn.LayerNorm(width)
        self.mlp = MLP(width)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, layers, width, heads, positions, vocab):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab, width), wpe=nn.Embedding(positions, width),
            h=nn.ModuleList(Block(width, heads) for _ in range(layers)),
            ln_f=nn.LayerNorm(width)))
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # tied

    def forward(self, ids):
        t = ids.size(1)
        x = self.transformer.wte(ids) + self.transformer.wpe(torch.arange(t, device=ids.device))
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))


def make(layers=12, width=768, heads=12, positions=1024, vocab=50257):
    """GPT-2 (124M) by default; gpt2-medium 24/1024/16, large 36/1280/20, xl 48/1600/25"""
    return GPT(layers, width, heads, positions, vocab)
