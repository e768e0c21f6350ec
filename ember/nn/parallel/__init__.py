"""ember.nn.parallel: DistributedDataParallel (``distributed.py``) and its reducer."""

from ember.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
