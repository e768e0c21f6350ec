"""ember.optim: optimizers and learning-rate schedulers (torch.optim)."""

from ember.optim import lr_scheduler, swa_utils
from ember.optim._adafactor import Adafactor
from ember.optim._muon import Muon
from ember.optim._stateless import swap_in_optimizer_params_and_state
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
           "Optimizer", "RAdam", "RMSprop", "Rprop", "lr_scheduler", "swa_utils", "Adafactor",
           "Muon", "swap_in_optimizer_params_and_state"]

# torch names these three by the package, not their private modules
Adafactor.__module__ = "ember.optim"
Muon.__module__ = "ember.optim"
swap_in_optimizer_params_and_state.__module__ = "ember.optim"
