"""Small real programs written against the torch API, timed in ember and in torch.

Each module's ``build(lib)`` sets up one training program in ``lib`` (ember or torch) with a
fixed seed and returns ``step()``, which runs one training step and returns its loss.
``python -m bench.programs`` times them; see ``__main__.py``. (The modules are named here, not
imported: the runner must set the BLAS thread count before NumPy loads.)
"""

# name, module in bench.programs, timed steps per round, target ratio (issue 18: at most 1.3x)
PROGRAMS = [
    ("char GPT, AdamW", "char_gpt", 10, 1.3),
    ("LSTM cells, L-BFGS (float64)", "lstm_lbfgs", 2, 1.3),
    ("siamese CNN, Adam", "siamese_cnn", 10, 1.3),
    ("GRU word LM, clipped SGD", "gru_lm", 10, 1.3),
]
