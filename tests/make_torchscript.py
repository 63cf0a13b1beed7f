"""Writes a small TorchScript file for the inventory test: a conv, two residual blocks
under a Sequential, a head. Usage: make_torchscript.py OUT.pt"""
import sys

import torch


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)
        self.act = torch.nn.ReLU()

    def forward(self, x):
        return self.act(self.fc(x)) + x


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.blocks = torch.nn.Sequential(Block(), Block())
        self.head = torch.nn.Linear(8, 2)

    def forward(self, x):
        y = self.conv(x).flatten(1)[:, :8]
        return self.head(self.blocks(y))


torch.jit.script(Net().eval()).save(sys.argv[1])
