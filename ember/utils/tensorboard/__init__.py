"""ember.utils.tensorboard: SummaryWriter (needs the optional `tensorboardX` package)."""

from ember.utils.tensorboard.writer import SummaryWriter

__all__ = ["SummaryWriter"]
