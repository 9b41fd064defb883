#!/usr/bin/env python3
"""Make the examples tgraph ships (run with a Python that has torch and numpy).

    python3 share/examples/gen_examples.py share/examples

Writes, for each model M: M.pt2 (torch.export.save, batch dynamic 1..1024),
M.onnx, M.in.npy (batch 2) and M.out.npy (PyTorch eager float32 output).
Weights are random with a fixed seed: the examples show the pipeline, not accuracy.
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn


class TinyConvNet(nn.Module):
    """A small image classifier: conv + batch norm + relu + pooling + linear."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1, stride=2)
        self.bn2 = nn.BatchNorm2d(16)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        x = nn.functional.max_pool2d(x, 2)
        x = torch.relu(self.bn2(self.conv2(x)))
        x = self.pool(x).flatten(1)
        return torch.softmax(self.fc(x), dim=-1)


def main(out):
    torch.manual_seed(0)
    model = TinyConvNet().eval()
    with torch.no_grad():  # non-trivial batch norm statistics, so folding bugs show
        for bn in (model.bn1, model.bn2):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
    x = torch.randn(2, 1, 16, 16)
    batch = torch.export.Dim("batch", min=1, max=1024)
    ep = torch.export.export(model, (x,), dynamic_shapes=({0: batch},))
    torch.export.save(ep, os.path.join(out, "convnet.pt2"))
    torch.onnx.export(model, (x,), os.path.join(out, "convnet.onnx"), dynamo=True,
                      dynamic_shapes=({0: batch},))
    with torch.no_grad():
        y = model(x)
    np.save(os.path.join(out, "convnet.in.npy"), x.numpy())
    np.save(os.path.join(out, "convnet.out.npy"), y.numpy())


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
