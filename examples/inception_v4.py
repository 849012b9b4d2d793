"""inception_v4 -- Inception-v4 (Szegedy et al. 2016) in plain PyTorch, laid out as autotm's zoo
builds it (zoo/inception.c, the widely used PyTorch port's layout): torchvision has no
Inception-v4, and bench/torch_step.py needs one to time against autotm's

    python3 -m autotm_torch examples/inception_v4.py:make --input 4,3,149,149 -o inception_v4.json

make(classes) gives the network (42,679,816 parameters at 1000 classes, as the zoo's): a stem,
4 A blocks, reduction A, 7 B blocks, reduction B, 3 C blocks, global average pooling, a linear
classifier; every convolution without bias, with batch norm and ReLU.
"""

import torch
import torch.nn as nn


class Conv(nn.Sequential):
    """convolution (no bias), batch norm, ReLU"""

    def __init__(self, cin, cout, k, stride=1, pad=0):
        super().__init__(nn.Conv2d(cin, cout, k, stride, pad, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU())


class Branches(nn.Module):
    """branches of one input, joined along channels"""

    def __init__(self, *branches):
        super().__init__()
        self.branches = nn.ModuleList(branches)

    def forward(self, x):
        return torch.cat([b(x) for b in self.branches], 1)


def seq(*layers):
    return nn.Sequential(*layers)


def avg3():
    return nn.AvgPool2d(3, 1, 1, count_include_pad=False)


def block_a():
    return Branches(Conv(384, 96, 1), seq(Conv(384, 64, 1), Conv(64, 96, 3, 1, 1)),
                    seq(Conv(384, 64, 1), Conv(64, 96, 3, 1, 1), Conv(96, 96, 3, 1, 1)),
                    seq(avg3(), Conv(384, 96, 1)))


def block_b():
    return Branches(Conv(1024, 384, 1),
                    seq(Conv(1024, 192, 1), Conv(192, 224, (1, 7), 1, (0, 3)),
                        Conv(224, 256, (7, 1), 1, (3, 0))),
                    seq(Conv(1024, 192, 1), Conv(192, 192, (7, 1), 1, (3, 0)),
                        Conv(192, 224, (1, 7), 1, (0, 3)), Conv(224, 224, (7, 1), 1, (3, 0)),
                        Conv(224, 256, (1, 7), 1, (0, 3))),
                    seq(avg3(), Conv(1024, 128, 1)))


class BlockC(nn.Module):
    """two branches fork into 1x3 and 3x1 halves"""

    def __init__(self):
        super().__init__()
        self.b0 = Conv(1536, 256, 1)
        self.b1 = Conv(1536, 384, 1)
        self.b1a, self.b1b = Conv(384, 256, (1, 3), 1, (0, 1)), Conv(384, 256, (3, 1), 1, (1, 0))
        self.b2 = seq(Conv(1536, 384, 1), Conv(384, 448, (3, 1), 1, (1, 0)),
                      Conv(448, 512, (1, 3), 1, (0, 1)))
        self.b2a, self.b2b = Conv(512, 256, (1, 3), 1, (0, 1)), Conv(512, 256, (3, 1), 1, (1, 0))
        self.b3 = seq(avg3(), Conv(1536, 256, 1))

    def forward(self, x):
        t, u = self.b1(x), self.b2(x)
        return torch.cat([self.b0(x), self.b1a(t), self.b1b(t), self.b2a(u), self.b2b(u),
                          self.b3(x)], 1)


def make(classes=1000):
    pool = nn.MaxPool2d(3, 2)
    return seq(
        Conv(3, 32, 3, 2), Conv(32, 32, 3), Conv(32, 64, 3, 1, 1),
        Branches(nn.MaxPool2d(3, 2), Conv(64, 96, 3, 2)),
        Branches(seq(Conv(160, 64, 1), Conv(64, 96, 3)),
                 seq(Conv(160, 64, 1), Conv(64, 64, (1, 7), 1, (0, 3)),
                     Conv(64, 64, (7, 1), 1, (3, 0)), Conv(64, 96, 3))),
        Branches(Conv(192, 192, 3, 2), pool),
        *[block_a() for _ in range(4)],
        Branches(Conv(384, 384, 3, 2), seq(Conv(384, 192, 1), Conv(192, 224, 3, 1, 1),
                                            Conv(224, 256, 3, 2)), nn.MaxPool2d(3, 2)),
        *[block_b() for _ in range(7)],
        Branches(seq(Conv(1024, 192, 1), Conv(192, 192, 3, 2)),
                 seq(Conv(1024, 256, 1), Conv(256, 256, (1, 7), 1, (0, 3)),
                     Conv(256, 320, (7, 1), 1, (3, 0)), Conv(320, 320, 3, 2)),
                 nn.MaxPool2d(3, 2)),
        *[BlockC() for _ in range(3)],
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(1536, classes))
