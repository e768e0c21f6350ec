"""ember.vision: torchvision's role — MNIST-family datasets and image transforms."""

from ember.vision import datasets, transforms

__all__ = ["datasets", "transforms"]
