"""The residual networks of models/resnet*.yaml as PyTorch modules (run with
Debian's /usr/bin/python3, which has python3-torch), for the golden-fixture
scripts and check_export.py. Written the way CIFAR ResNet code usually is
(kuangliu/pytorch-cifar, akamaster/pytorch_resnet_cifar10 with option B):
a BasicBlock whose projection shortcut is an nn.Sequential named `shortcut`,
so the state_dict names are exactly xlatrain's (layer2.0.shortcut.0.weight).
"""
import torch.nn as nn
import torch.nn.functional as F


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    """3x3 stem (no max pool), stages of BasicBlocks, global average pool, linear.
    Returns logits."""

    def __init__(self, in_ch, widths, blocks, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(in_ch, widths[0], 3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        cin = widths[0]
        for i, (w, n) in enumerate(zip(widths, blocks)):
            layers = []
            for b in range(n):
                layers.append(BasicBlock(cin, w, 2 if (i > 0 and b == 0) else 1))
                cin = w
            setattr(self, f"layer{i + 1}", nn.Sequential(*layers))
        self.nstages = len(widths)
        self.linear = nn.Linear(cin, num_classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        for i in range(self.nstages):
            x = getattr(self, f"layer{i + 1}")(x)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.linear(x)


# models/<name>.yaml -> the same network in PyTorch, and its input shape
MODELS = {
    "resnet20": (lambda: ResNet(3, [16, 32, 64], [3, 3, 3]), (3, 32, 32)),
    "resnet18_cifar": (lambda: ResNet(3, [64, 128, 256, 512], [2, 2, 2, 2]), (3, 32, 32)),
    "resnet8_mnist": (lambda: ResNet(1, [16, 32, 64], [1, 1, 1]), (1, 28, 28)),
}
