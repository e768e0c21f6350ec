"""A fuzz program: inputs, statements and the gradient footer, printable as runnable Python.

The statements are Python source that use only ``torch``, ``F`` (``torch.nn.functional``) and
the program's own names, so the same text runs with ``import torch`` and with
``import ember as torch``. Inputs are kept as arrays (so the shrinker can cut their shapes)
and printed as literals.
"""

from __future__ import annotations

import dataclasses

import numpy as np

# The footer: every tensor the statements made that requires grad is a root, with a random
# upstream gradient; first-order gradients of the inputs that require grad (once without and
# once with create_graph), then the gradient of a random linear functional of those gradients.
# It is text, run like the statements, so that a printed program is exactly what was run.
FOOTER = (
    "rng = np.random.default_rng(0)",
    "roots = [v for v in [{names}] if isinstance(v, torch.Tensor) and v.requires_grad]",
    "ups = [torch.tensor(rng.standard_normal(tuple(r.shape)), dtype=r.dtype) for r in roots]",
    "leaves = [{leaves}]",
    "g0 = torch.autograd.grad(roots, leaves, ups, retain_graph=True, allow_unused=True) "
    "if roots else None",
    "g = torch.autograd.grad(roots, leaves, ups, create_graph=True, allow_unused=True) "
    "if roots else None",
    "ws = [torch.tensor(rng.standard_normal(tuple(x.shape)), dtype=x.dtype) for x in leaves]",
    "terms = [(a * w).sum() for a, w in zip(g or [], ws) if a is not None and a.requires_grad]",
    "gg = torch.autograd.grad(sum(terms), leaves, allow_unused=True) if terms else None",
)
N_FOOTER = len(FOOTER)


@dataclasses.dataclass
class Input:
    """An input tensor: float64 master values (cast to the program's dtype when run)."""

    name: str
    values: np.ndarray
    requires_grad: bool

    def source(self, dtype: str) -> str:
        rg = ", requires_grad=True" if self.requires_grad else ""
        if self.values.size == 0:
            dims = ", ".join(str(n) for n in self.values.shape)
            return f"{self.name} = torch.zeros({dims}, dtype=torch.{dtype}{rg})"
        return f"{self.name} = torch.tensor({self.values.tolist()!r}, dtype=torch.{dtype}{rg})"


@dataclasses.dataclass
class Program:
    """Inputs, then statements (each one line of Python), then the footer."""

    dtype: str
    inputs: list[Input]
    statements: list[str]
    label: str = ""

    def made_names(self) -> list[str]:
        """Names the statements bind (``tN = ...``), in order."""
        names = []
        for s in self.statements:
            head = s.split(" = ", 1)[0] if " = " in s else ""
            if head.isidentifier() and head not in names:
                names.append(head)
        return names

    def footer(self) -> list[str]:
        names = ", ".join(self.made_names())
        leaves = ", ".join(i.name for i in self.inputs if i.requires_grad)
        return [line.format(names=names, leaves=leaves) for line in FOOTER]

    def body(self) -> list[str]:
        """Statements and footer: the lines run one by one (inputs are made directly)."""
        return [*self.statements, *self.footer()]

    def text(self) -> str:
        head = ["import numpy as np", "import torch  # or: import ember as torch",
                "F = torch.nn.functional"]
        if self.label:
            head.insert(0, f"# {self.label}")
        return "\n".join([*head, *(i.source(self.dtype) for i in self.inputs), *self.body()])

    def replace(self, **kw) -> Program:
        return dataclasses.replace(self, **kw)
