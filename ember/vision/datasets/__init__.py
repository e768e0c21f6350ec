"""Vision datasets."""

from ember.vision.datasets.mnist import MNIST, FashionMNIST

__all__ = ["MNIST", "FashionMNIST"]
