"""bert -- BERT-base in plain PyTorch, laid out and named as the zoo's bert-base (Hugging Face's BertModel)

    python3 -m autotm_torch.zoo_check tiny_bert    # one step of this model against autotm's

make(layers, width, heads, positions, vocab) gives the model; its forward takes token ids and
token types [batch, seq] and returns the sequence output [batch, seq, width] and the pooled
output [batch, width]. step_loss is the zoo's training objective: a masked-LM loss at every
position through the word embeddings (tied, no bias) plus a sentence loss over the pooled
output's features, which trains every parameter of BertModel and adds none. No dropout, no
padding mask: a step is deterministic, as autotm's is.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

EPS = 1e-12


class SelfAttention(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.query, self.key, self.value = (nn.Linear(width, width) for _ in range(3))

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = (m(x).view(b, t, self.heads, c // self.heads).transpose(1, 2)
                   for m in (self.query, self.key, self.value))
        att = F.softmax((q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads), dim=-1)
        return (att @ v).transpose(1, 2).contiguous().view(b, t, c)


class Output(nn.Module):
    def __init__(self, inner, width):
        super().__init__()
        self.dense = nn.Linear(inner, width)
        self.LayerNorm = nn.LayerNorm(width, eps=EPS)

    def forward(self, h, x):
        return self.LayerNorm(self.dense(h) + x)


class Attention(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.self = SelfAttention(width, heads)
        self.output = Output(width, width)

    def forward(self, x):
        return self.output(self.self(x), x)


class Intermediate(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.dense = nn.Linear(width, 4 * width)

    def forward(self, x):
        return F.gelu(self.dense(x))


class Layer(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.attention = Attention(width, heads)
        self.intermediate = Intermediate(width)
        self.output = Output(4 * width, width)

    def forward(self, x):
        x = self.attention(x)
        return self.output(self.intermediate(x), x)


class Embeddings(nn.Module):
    def __init__(self, vocab, width, positions):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, width)
        self.position_embeddings = nn.Embedding(positions, width)
        self.token_type_embeddings = nn.Embedding(2, width)
        self.LayerNorm = nn.LayerNorm(width, eps=EPS)

    def forward(self, ids, types):
        x = self.word_embeddings(ids) + self.token_type_embeddings(types)
        x = x + self.position_embeddings(torch.arange(ids.size(1), device=ids.device))
        return self.LayerNorm(x)


class Encoder(nn.Module):
    def __init__(self, layers, width, heads):
        super().__init__()
        self.layer = nn.ModuleList(Layer(width, heads) for _ in range(layers))


class Pooler(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.dense = nn.Linear(width, width)

    def forward(self, x):
        return torch.tanh(self.dense(x[:, 0]))


class Bert(nn.Module):
    def __init__(self, layers, width, heads, positions, vocab):
        super().__init__()
        self.embeddings = Embeddings(vocab, width, positions)
        self.encoder = Encoder(layers, width, heads)
        self.pooler = Pooler(width)

    def forward(self, ids, types):
        x = self.embeddings(ids, types)
        for layer in self.encoder.layer:
            x = layer(x)
        return x, self.pooler(x)


def step_loss(model, ids, types, labels, sentence_labels):
    """(masked-LM loss, the loss whose gradient the step takes: it plus the sentence loss)"""
    seq, pooled = model(ids, types)
    logits = seq @ model.embeddings.word_embeddings.weight.t()
    mlm = F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1))
    return mlm, mlm + F.cross_entropy(pooled, sentence_labels.reshape(-1))


def make(layers=12, width=768, heads=12, positions=512, vocab=30522):
    """BERT-base by default"""
    return Bert(layers, width, heads, positions, vocab)
