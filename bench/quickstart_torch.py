"""The quickstart in real torch, on the same Fashion-MNIST files, for ember's accuracy check.

    python -m bench.quickstart_torch --seed 0                 # the tutorial's MLP, 5 epochs
    python -m bench.quickstart_torch --model cnn --optimizer adam --epochs 2 --seed 0

It makes the same random draws in the same order as ``ember.examples.quickstart`` (the model,
a peek at the test loader, then the epochs, shuffled unless ``--no-shuffle``), so with one seed
both print the same loss lines up to float rounding. The images are read with ember's dataset
class (no torchvision needed) and handed to torch as a TensorDataset.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Subset, TensorDataset

from ember.vision import datasets


def mlp() -> nn.Module:
    return nn.Sequential(
        nn.Flatten(),
        nn.Linear(28 * 28, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10),
    )


class ConvNet(nn.Module):
    """The modules note's CNN, as in ember's quickstart."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc1 = nn.Linear(64 * 7 * 7, 512)
        self.fc2 = nn.Linear(512, 10)
        self.dropout = nn.Dropout(0.25)
        self.bn1 = nn.BatchNorm2d(32)
        self.bn2 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU()

    def forward(self, x):
        x = F.max_pool2d(self.bn1(self.relu(self.conv1(x))), 2)
        x = F.max_pool2d(self.bn2(self.relu(self.conv2(x))), 2)
        x = x.view(-1, 64 * 7 * 7)
        x = self.dropout(F.relu(self.fc1(x)))
        return self.fc2(x)


def load(root: str, train: bool) -> TensorDataset:
    ds = datasets.FashionMNIST(root=root, train=train, download=True)
    images = ds.data.numpy().astype(np.float32)[:, None] / np.float32(255)  # ToTensor()
    return TensorDataset(torch.from_numpy(images), torch.from_numpy(ds.targets.numpy()))


def main(argv=None) -> float:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd")
    p.add_argument("--data-root", default=os.environ.get("EMBER_DATA_ROOT", "data"))
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--shuffle", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--device", default="cpu")
    p.add_argument("--limit", type=int, default=None,
                   help="use only the first N training and test images (as the quickstart's)")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    if args.seed is not None:
        torch.manual_seed(args.seed)
    train_data, test_data = load(args.data_root, True), load(args.data_root, False)
    if args.limit:
        train_data, test_data = (Subset(d, range(min(args.limit, len(d))))
                                 for d in (train_data, test_data))
    train_loader = DataLoader(train_data, batch_size=args.batch_size, shuffle=args.shuffle)
    test_loader = DataLoader(test_data, batch_size=args.batch_size)
    next(iter(test_loader))  # the quickstart's shape printout draws a loader seed
    model = {"mlp": mlp, "cnn": ConvNet}[args.model]().to(args.device)
    loss_fn = nn.CrossEntropyLoss()
    optim = torch.optim.SGD if args.optimizer == "sgd" else torch.optim.Adam
    optimizer = optim(model.parameters(), lr=args.lr)
    accuracy = 0.0
    for t in range(args.epochs):
        start = time.perf_counter()
        model.train()
        for batch, (X, y) in enumerate(train_loader):
            X, y = X.to(args.device), y.to(args.device)
            loss = loss_fn(model(X), y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            if batch % 100 == 0:
                current, size = (batch + 1) * len(X), len(train_data)
                print(f"loss: {loss.item():>7f}  [{current:>5d}/{size:>5d}]")
        model.eval()
        test_loss, correct = 0.0, 0
        with torch.no_grad():
            for X, y in test_loader:
                X, y = X.to(args.device), y.to(args.device)
                pred = model(X)
                test_loss += loss_fn(pred, y).item()
                correct += (pred.argmax(1) == y).sum().item()
        accuracy = correct / len(test_data)
        print(f"Epoch {t + 1}: Accuracy: {100 * accuracy:>0.1f}%, "
              f"Avg loss: {test_loss / len(test_loader):>8f} "
              f"({time.perf_counter() - start:.1f} s)")
    return accuracy


if __name__ == "__main__":
    main()
