"""The families of ember.nn.functional (see ember/nn/functional.py)."""
