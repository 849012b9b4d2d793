"""small_cnn.py -- a small CNN written in plain PyTorch, for the importer and the check

    python3 -m autotm_torch examples/small_cnn.py:make --input 4,3,16,16 -o small_cnn.json
    python3 -m autotm_torch.check examples/small_cnn.py:make --input 4,3,16,16

Every layer kind the importer maps appears: convolutions with and without bias, batch norm,
ReLU as a module and as a function, max and average pooling, a residual add, a concatenation,
adaptive average pooling, flatten, dropout (left out) and two linear layers.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class SmallCNN(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8),
                                  nn.ReLU(inplace=True))
        self.pool = nn.MaxPool2d(2)
        self.res = nn.Conv2d(8, 8, 3, padding=1)
        self.res_bn = nn.BatchNorm2d(8)
        self.branch = nn.Conv2d(8, 4, 1)
        self.avg = nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False)
        self.gap = nn.AdaptiveAvgPool2d((1, 1))
        self.fc1 = nn.Linear(12, 16)
        self.drop = nn.Dropout(0.1)
        self.fc2 = nn.Linear(16, classes)

    def forward(self, x):
        x = self.pool(self.stem(x))
        x = F.relu(self.res_bn(self.res(x)) + x)
        x = torch.cat([x, self.branch(self.avg(x))], 1)
        x = torch.flatten(self.gap(x), 1)
        return self.fc2(self.drop(F.relu(self.fc1(x))))


def make(classes=10):
    return SmallCNN(classes)
