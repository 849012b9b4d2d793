"""llama -- a LLaMA-style decoder in plain PyTorch, laid out and named as the zoo's llama networks
(Hugging Face's LlamaForCausalLM names)

    python3 -m autotm_torch.zoo_check tiny_llama     # one step of this model against autotm's

make(layers, width, heads, kv_heads, mlp, vocab, theta, tied) gives the model; its forward
takes token ids [batch, seq] and returns logits [batch, seq, vocab]. Each block is pre-norm:
RMSNorm written as LLaMA's reference code writes it, bias-free q, k, v and o projections with
fewer key/value heads than query heads (grouped-query attention: each key/value head repeated
for its group of query heads), rotary embeddings on q and k in the rotate-half form, causal
attention, and a SwiGLU MLP down(silu(gate(x)) * up(x)). There is no dropout: a step is
deterministic, as autotm's is. Rotary angles are taken in double, as autotm takes them.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rope(x, theta):
    """x [batch, heads, seq, head_dim] rotated by t * theta^(-2i/head_dim) at position t"""
    t, d = x.shape[-2], x.shape[-1]
    inv = theta ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    ang = torch.outer(torch.arange(t, dtype=torch.float64), inv)
    ang = torch.cat((ang, ang), dim=-1)
    return x * ang.cos().float() + rotate_half(x) * ang.sin().float()


class Attention(nn.Module):
    def __init__(self, width, heads, kv_heads, theta):
        super().__init__()
        self.heads, self.kv_heads, self.theta = heads, kv_heads, theta
        hd = width // heads
        self.q_proj = nn.Linear(width, width, bias=False)
        self.k_proj = nn.Linear(width, kv_heads * hd, bias=False)
        self.v_proj = nn.Linear(width, kv_heads * hd, bias=False)
        self.o_proj = nn.Linear(width, width, bias=False)

    def forward(self, x):
        b, t, c = x.size()
        hd = c // self.heads
        q = self.q_proj(x).view(b, t, self.heads, hd).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv_heads, hd).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv_heads, hd).transpose(1, 2)
        q, k = rope(q, self.theta), rope(k, self.theta)
        g = self.heads // self.kv_heads
        k = k[:, :, None].expand(b, self.kv_heads, g, t, hd).reshape(b, self.heads, t, hd)
        v = v[:, :, None].expand(b, self.kv_heads, g, t, hd).reshape(b, self.heads, t, hd)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        att = F.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
        return self.o_proj((att @ v).transpose(1, 2).contiguous().view(b, t, c))


class MLP(nn.Module):
    def __init__(self, width, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(width, hidden, bias=False)
        self.up_proj = nn.Linear(width, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, width, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, width, heads, kv_heads, mlp, theta):
        super().__init__()
        self.input_layernorm = RMSNorm(width)
        self.self_attn = Attention(width, heads, kv_heads, theta)
        self.post_attention_layernorm = RMSNorm(width)
        self.mlp = MLP(width, mlp)

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class Decoder(nn.Module):
    def __init__(self, layers, width, heads, kv_heads, mlp, vocab, theta):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, width)
        self.layers = nn.ModuleList(Block(width, heads, kv_heads, mlp, theta)
                                    for _ in range(layers))
        self.norm = RMSNorm(width)


class Llama(nn.Module):
    def __init__(self, layers, width, heads, kv_heads, mlp, vocab, theta, tied):
        super().__init__()
        self.model = Decoder(layers, width, heads, kv_heads, mlp, vocab, theta)
        self.lm_head = nn.Linear(width, vocab, bias=False)
        if tied:
            self.lm_head.weight = self.model.embed_tokens.weight
        for name, p in self.named_parameters():
            if name.endswith("proj.weight") or name.endswith("lm_head.weight"):
                nn.init.normal_(p, std=0.02)

    def forward(self, ids):
        x = self.model.embed_tokens(ids)
        for block in self.model.layers:
            x = block(x)
        return self.lm_head(self.model.norm(x))


def make(layers=22, width=2048, heads=32, kv_heads=4, mlp=5632, vocab=32000, theta=10000.0,
         tied=False):
    """the decoder at these sizes (the defaults: TinyLlama-1.1B)"""
    return Llama(layers, width, heads, kv_heads, mlp, vocab, theta, tied)
