"""ember.nn.parallel: DistributedDataParallel (distributed.py) and its reducer (_reducer.py)."""

from ember.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
