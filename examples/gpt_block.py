"""gpt_block -- a GPT-2-style decoder in plain PyTorch, as nanoGPT writes it: the model a user
brings to autotm

    python3 -m autotm_torch examples/gpt_block.py:make --input-ids 2,128 -o gpt.json
    python3 -m autotm_torch.check examples/gpt_block.py:make --input-ids 2,16

make(blocks, width, heads, positions, vocab) gives token embeddings and learned positions, the
decoder blocks (pre-norm: causal self-attention with a registered mask, an MLP with tanh
GELU), a final layer norm and the output projection tied to the token embedding. Its forward
takes token ids [batch, seq] and returns logits [batch, seq, vocab]. Dropout is there, at 0, as
nanoGPT's default for fine-tuning: autotm's step is deterministic and has none.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, width, heads, positions):
        super().__init__()
        assert width % heads == 0
        self.c_attn = nn.Linear(width, 3 * width)
        self.c_proj = nn.Linear(width, width)
        self.attn_dropout = nn.Dropout(0.0)
        self.n_head = heads
        self.register_buffer("bias", torch.tril(torch.ones(positions, positions))
                             .view(1, 1, positions, positions))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, width, heads, positions):
        super().__init__()
        self.ln_1 = nn.LayerNorm(width)
        self.attn = CausalSelfAttention(width, heads, positions)
        self.ln_2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * width, width), nn.Dropout(0.0))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class Decoder(nn.Module):
    def __init__(self, blocks, width, heads, positions, vocab):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(positions, width)
        self.drop = nn.Dropout(0.0)
        self.h = nn.ModuleList([Block(width, heads, positions) for _ in range(blocks)])
        self.ln_f = nn.LayerNorm(width)
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.wte.weight = self.lm_head.weight  # weight tying, as GPT-2 does

    def forward(self, idx):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def make(blocks=1, width=128, heads=4, positions=128, vocab=1024):
    """one decoder block, 128 wide, on 1,024 tokens by default"""
    return Decoder(blocks, width, heads, positions, vocab)
