"""vit_small -- torchvision's VisionTransformer, small, for the importer and the check

    python3 -m autotm_torch examples/vit_small.py:make --input 2,3,32,32 -o vit.json
    python3 -m autotm_torch.check examples/vit_small.py:make --input 2,3,32,32

make(image, patch, layers, heads, width) gives torchvision's ViT (vit_b_16's layout: a class
token, learned positions, pre-norm blocks of nn.MultiheadAttention, erf GELU) at 2 layers,
64 wide, on 32x32 images in 8x8 patches by default, with its head drawn at random: torchvision
starts it at zeros, through which no gradient would reach the encoder in the step a check
compares.
"""

import torch.nn as nn
from torchvision.models.vision_transformer import VisionTransformer


def make(image=32, patch=8, layers=2, heads=4, width=64, classes=10):
    m = VisionTransformer(image_size=image, patch_size=patch, num_layers=layers,
                          num_heads=heads, hidden_dim=width, mlp_dim=4 * width,
                          num_classes=classes)
    nn.init.normal_(m.heads.head.weight, std=width ** -0.5)
    return m
