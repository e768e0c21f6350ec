"""ember.utils.tensorboard: SummaryWriter, which writes event files through tensorboardX.

As importing torch.utils.tensorboard needs the tensorboard package, importing this module
needs tensorboardX: without it ``from ember.utils.tensorboard import SummaryWriter`` raises
ModuleNotFoundError (an ImportError) here, as torch's does, which programs catch to run
without logging (``pip install tensorboardX``, or ``pip install 'ember[tensorboard]'``).
"""

import tensorboardX  # noqa: F401 - the writer library; without it this import fails, as torch's

from ember.utils.tensorboard.writer import SummaryWriter

del tensorboardX

__all__ = ["SummaryWriter"]
