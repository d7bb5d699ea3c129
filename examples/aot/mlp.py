"""The model of the AOT example: `accel-compile mlp.py --inference --aot --aot-name mlp`."""

import torch


def get_model(batch_size=4):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 10)).eval()
    return model, (torch.randn(batch_size, 784),)
