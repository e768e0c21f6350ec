"""A small synthetic English-like corpus, generated deterministically (no data files needed).

Sentences are drawn from a tiny hand-written grammar with NumPy's seeded generator, so the
character and word statistics are learnable but not trivial, and every run sees the same text.
"""

from __future__ import annotations

import numpy as np

_SUBJECTS = ["the miller", "a tired sailor", "my aunt", "the old clock", "every lantern",
             "the quiet river", "a grey heron", "the baker's son", "our neighbour",
             "the north wind", "a stray dog", "the schoolteacher", "she", "he", "nobody"]
_VERBS = ["watched", "carried", "forgot", "mended", "followed", "painted", "counted",
          "buried", "sold", "remembered", "chased", "opened", "found", "lost", "wanted"]
_OBJECTS = ["the broken gate", "a basket of pears", "the long road", "seven copper coins",
            "the winter coat", "a letter from home", "the harbour lights", "an empty boat",
            "the last train", "a map of the hills", "the garden wall", "her brother's hat"]
_TAILS = ["before dawn", "in the rain", "without a word", "for the third time",
          "near the mill", "after supper", "on market day", "by the old bridge", "again"]
_JOINS = [" and then", " but", " while", " because", ", so"]


def sentence(rng: np.random.Generator) -> str:
    """One sentence: subject verb object [tail] [join clause]."""
    def pick(words):
        return words[rng.integers(len(words))]

    s = f"{pick(_SUBJECTS)} {pick(_VERBS)} {pick(_OBJECTS)}"
    if rng.random() < 0.6:
        s += f" {pick(_TAILS)}"
    if rng.random() < 0.3:
        s += f"{pick(_JOINS)} {pick(_SUBJECTS)} {pick(_VERBS)} {pick(_OBJECTS)}"
    return s[0].upper() + s[1:] + "."


def corpus(n_sentences: int = 2000, seed: int = 0) -> str:
    """``n_sentences`` sentences, a paragraph break every few of them."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n_sentences):
        out.append(sentence(rng))
        out.append("\n\n" if i % 7 == 6 else " ")
    return "".join(out)
