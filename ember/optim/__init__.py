"""ember.optim: optimizers and learning-rate schedulers (torch.optim)."""

from ember.optim import lr_scheduler, swa_utils
from ember.optim.adadelta import Adadelta
from ember.optim.adagrad import Adagrad
from ember.optim.adam import Adam
from ember.optim.adamax import Adamax
from ember.optim.adamw import AdamW
from ember.optim.asgd import ASGD
from ember.optim.lbfgs import LBFGS
from ember.optim.nadam import NAdam
from ember.optim.optimizer import Optimizer
from ember.optim.radam import RAdam
from ember.optim.rmsprop import RMSprop
from ember.optim.rprop import Rprop
from ember.optim.sgd import SGD

__all__ = ["ASGD", "LBFGS", "SGD", "Adadelta", "Adagrad", "Adam", "Adamax", "AdamW", "NAdam",
           "Optimizer", "RAdam", "RMSprop", "Rprop", "lr_scheduler", "swa_utils"]
