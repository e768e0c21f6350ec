"""PyTorch's quickstart, on ember: train a Fashion-MNIST classifier, save, reload, predict.

    python -m ember.examples.quickstart            # the tutorial's MLP, SGD lr 1e-3, 5 epochs
    python -m ember.examples.quickstart --model cnn --optimizer adam --epochs 2
    python -m ember.examples.quickstart --amp      # mixed precision: bfloat16 autocast on the CPU

The code below is the tutorial's, with ``import ember as torch``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import ember as torch
from ember import nn
from ember.nn import functional as F
from ember.utils.data import DataLoader
from ember.vision import datasets
from ember.vision.transforms import ToTensor


class NeuralNetwork(nn.Module):
    """The tutorial's MLP: 784 -> 512 -> 512 -> 10."""

    def __init__(self) -> None:
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(28 * 28, 512),
            nn.ReLU(),
            nn.Linear(512, 512),
            nn.ReLU(),
            nn.Linear(512, 10),
        )

    def forward(self, x):
        x = self.flatten(x)
        return self.linear_relu_stack(x)


class ConvNet(nn.Module):
    """The modules note's CNN (its ``MNIST_nn``): two conv -> ReLU -> BatchNorm -> max-pool
    blocks, then Linear -> ReLU -> Dropout(0.25) -> Linear."""

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


MODELS = {"mlp": NeuralNetwork, "cnn": ConvNet}


class Progress:
    """A one-line progress bar, drawn only when stdout is a terminal."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total, self.enabled, self.start = total, enabled, time.perf_counter()

    def update(self, done: int, loss: float) -> None:
        if not self.enabled:
            return
        frac = done / self.total
        bar = "#" * int(30 * frac)
        rate = done / max(time.perf_counter() - self.start, 1e-9)
        sys.stdout.write(f"\r[{bar:<30}] {done:>5d}/{self.total} loss {loss:.4f} "
                         f"({rate:,.0f} samples/s)")
        sys.stdout.flush()

    def clear(self) -> None:
        if self.enabled:
            sys.stdout.write("\r" + " " * 79 + "\r")


def train(dataloader, model, loss_fn, optimizer, device, writer=None, epoch=0,
          amp=False) -> None:
    size = len(dataloader.dataset)
    model.train()
    bar = Progress(size, sys.stdout.isatty())
    # --amp: autocast's default dtype (bfloat16 on the CPU, float16 on CUDA); float16 gradients
    # need loss scaling, bfloat16's range does not. Without --amp both are no-ops.
    device_type = torch.device(device).type
    scaler = torch.amp.GradScaler(device_type, enabled=amp and device_type == "cuda")
    for batch, (X, y) in enumerate(dataloader):
        X, y = X.to(device), y.to(device)

        # Compute prediction error
        with torch.autocast(device_type, enabled=amp):
            pred = model(X)
            loss = loss_fn(pred, y)

        # Backpropagation
        scaler.scale(loss).backward()
        if writer is not None and batch % 100 == 0:
            scaler.unscale_(optimizer)  # histograms of the true gradients
            step = epoch * len(dataloader) + batch
            writer.add_scalar("train/loss", loss.item(), step)
            for name, p in model.named_parameters():
                writer.add_histogram(f"grad/{name}", p.grad, step)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()

        bar.update(min((batch + 1) * len(X), size), loss.item())
        if batch % 100 == 0:
            loss, current = loss.item(), (batch + 1) * len(X)
            bar.clear()
            print(f"loss: {loss:>7f}  [{current:>5d}/{size:>5d}]")
    bar.clear()


def test(dataloader, model, loss_fn, device, amp=False) -> tuple[float, float]:
    size = len(dataloader.dataset)
    num_batches = len(dataloader)
    model.eval()
    test_loss, correct = 0, 0
    with torch.no_grad(), torch.autocast(torch.device(device).type, enabled=amp):
        for X, y in dataloader:
            X, y = X.to(device), y.to(device)
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).type(torch.float).sum().item()
    test_loss /= num_batches
    correct /= size
    print(f"Test Error: \n Accuracy: {(100 * correct):>0.1f}%, Avg loss: {test_loss:>8f} \n")
    return correct, test_loss


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=sorted(MODELS), default="mlp")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd")
    p.add_argument("--device", default="cpu")
    p.add_argument("--data-root", default=os.environ.get("EMBER_DATA_ROOT", "data"))
    p.add_argument("--num-workers", type=int, default=0)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--shuffle", action=argparse.BooleanOptionalAction, default=True,
                   help="shuffle the training set each epoch (the tutorial's loader does not: "
                        "--no-shuffle)")
    p.add_argument("--logdir", default=None, help="write TensorBoard event files here")
    p.add_argument("--amp", action="store_true",
                   help="mixed precision: autocast (bfloat16 on the CPU; float16 with a "
                        "GradScaler on cuda)")
    p.add_argument("--compile", nargs="?", const="default", default=None, metavar="MODE",
                   help="ember.compile the model and the optimizer step (captured programs); "
                        "MODE reduce-overhead replays CUDA graphs on cuda")
    p.add_argument("--save", default="model.pth", help="where to save the trained weights")
    p.add_argument("--limit", type=int, default=None,
                   help="use only the first N training and test images (smoke runs)")
    p.add_argument("--explore", metavar="PAGE", default=None,
                   help="write the first training step's graph and backward pass as an "
                        "interactive page (ember.viz.explore)")
    return p.parse_args(argv)


def main(argv=None) -> float:
    args = parse_args(argv)
    if args.seed is not None:
        torch.manual_seed(args.seed)
    device = args.device
    print(f"Using {device} device")

    # Download training data from open datasets.
    training_data = datasets.FashionMNIST(root=args.data_root, train=True, download=True,
                                          transform=ToTensor())
    # Download test data from open datasets.
    test_data = datasets.FashionMNIST(root=args.data_root, train=False, download=True,
                                      transform=ToTensor())
    if args.limit:
        from ember.utils.data import Subset

        training_data = Subset(training_data, range(min(args.limit, len(training_data))))
        test_data = Subset(test_data, range(min(args.limit, len(test_data))))
    classes = datasets.FashionMNIST.classes

    # Create data loaders.
    train_dataloader = DataLoader(training_data, batch_size=args.batch_size, shuffle=args.shuffle,
                                  num_workers=args.num_workers)
    test_dataloader = DataLoader(test_data, batch_size=args.batch_size,
                                 num_workers=args.num_workers)
    for X, y in test_dataloader:
        print(f"Shape of X [N, C, H, W]: {X.shape}")
        print(f"Shape of y: {y.shape} {y.dtype}")
        break

    model = MODELS[args.model]().to(device)
    print(model)

    loss_fn = nn.CrossEntropyLoss()
    if args.optimizer == "sgd":
        optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    else:
        optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    if args.explore:  # the first batch's forward and backward, before any step
        X, y = next(iter(train_dataloader))
        torch.viz.explore(lambda: loss_fn(model(X.to(device)), y.to(device)), args.explore,
                          params=dict(model.named_parameters()))
        optimizer.zero_grad()
        print(f"Wrote {args.explore}: open it in a browser\n")

    if args.compile:
        model.compile(mode=args.compile)  # in place: the state_dict keeps its keys
        optimizer.step = torch.compile(optimizer.step, mode=args.compile)

    writer = None
    if args.logdir:
        from ember.utils.tensorboard import SummaryWriter

        writer = SummaryWriter(args.logdir)

    accuracy = 0.0
    for t in range(args.epochs):
        print(f"Epoch {t + 1}\n-------------------------------")
        start = time.perf_counter()
        train(train_dataloader, model, loss_fn, optimizer, device, writer, t, args.amp)
        accuracy, avg_loss = test(test_dataloader, model, loss_fn, device, args.amp)
        if writer is not None:
            writer.add_scalar("test/accuracy", accuracy, t)
            writer.add_scalar("test/loss", avg_loss, t)
        print(f"(epoch time {time.perf_counter() - start:.1f} s)\n")
    print("Done!")
    if writer is not None:
        writer.close()

    torch.save(model.state_dict(), args.save)
    print(f"Saved PyTorch Model State to {args.save}")

    model = MODELS[args.model]().to(device)
    model.load_state_dict(torch.load(args.save, weights_only=True))

    model.eval()
    x, y = test_data[0][0], test_data[0][1]
    with torch.no_grad():
        x = x.to(device)
        pred = model(x.unsqueeze(0))
        predicted, actual = classes[pred[0].argmax(0)], classes[y]
        print(f'Predicted: "{predicted}", Actual: "{actual}"')
    return accuracy


if __name__ == "__main__":
    main()
