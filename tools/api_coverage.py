"""How much of torch's public API ember has, namespace by namespace.

    python -m tools.api_coverage             # writes docs/api_coverage.md, prints the summary
    python -m tools.api_coverage --baseline  # also rewrites tests/api_coverage_baseline.txt

For each namespace in ``NAMESPACES`` it lists torch's public names and sorts each into: ember
has it; another issue owns it (``tools/api_on_purpose.py``, ``OWNED``); ember lacks it on
purpose (same file, ``ON_PURPOSE``, each with a reason); or it is missing. The baseline is the
list of names ember has; ``tests/test_api_coverage.py`` fails when one of them disappears.

What counts as public (``public_names``):
- ``torch.Tensor``: every attribute of the class without a leading underscore;
- a module with ``__all__``: the names in it; ``torch`` itself also adds the names of its
  ``dir()`` that pass the rules below, since its ``__all__`` leaves out documented names such as
  ``unique``, ``set_grad_enabled`` and ``strided``;
- a module without ``__all__``: the names of its ``dir()`` without a leading underscore;
- never a module (a submodule is a namespace of its own), a typing helper (``Optional``,
  ``TypeVar``s, ``TYPE_CHECKING``, ...), an object from the standard library or NumPy, nor, in a
  module without ``__all__``, a class or function re-exported from another public torch module
  (``torch.nn.functional.Tensor`` is ``torch.Tensor``).
The output depends only on the installed torch and the ember checkout: names are sorted, and no
object is called.
"""

from __future__ import annotations

import argparse
import fnmatch
import importlib
import sys
import types
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from tools.api_on_purpose import ON_PURPOSE, OWNED, REASONS

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "api_coverage.md"
BASELINE = ROOT / "tests" / "api_coverage_baseline.txt"

NAMESPACES = (
    "torch", "torch.Tensor",
    "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.nn.parameter", "torch.nn.utils",
    "torch.nn.utils.rnn", "torch.nn.utils.parametrize", "torch.nn.utils.parametrizations",
    "torch.nn.utils.prune", "torch.nn.parallel", "torch.nn.attention",
    "torch.optim", "torch.optim.lr_scheduler", "torch.optim.swa_utils",
    "torch.utils.data", "torch.utils.checkpoint", "torch.utils.hooks", "torch.utils.dlpack",
    "torch.utils.tensorboard",
    "torch.autograd", "torch.autograd.functional", "torch.autograd.graph",
    "torch.autograd.forward_ad", "torch.autograd.profiler",
    "torch.linalg", "torch.special", "torch.fft", "torch.signal.windows", "torch.distributions",
    "torch.func", "torch.distributed",
    "torch.amp", "torch.cuda", "torch.cuda.amp", "torch.cpu", "torch.backends.cuda",
    "torch.backends.cudnn", "torch.backends.mps", "torch.accelerator", "torch.mps", "torch.xpu",
    "torch.compiler", "torch.testing", "torch.random", "torch.serialization", "torch.hub",
    "torch.onnx", "torch.profiler", "torch.multiprocessing",
    "torch.jit", "torch.export", "torch.fx", "torch.sparse", "torch.nested", "torch.masked",
    "torch.quantization", "torch.library", "torch.overrides",
)

_FOREIGN = set(sys.stdlib_module_names) | {"typing_extensions", "numpy"}
_TYPING = {"typing", "typing_extensions"}


@dataclass
class Coverage:
    """One namespace's names, sorted into the four kinds."""

    namespace: str
    has: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    owned: dict[str, int] = field(default_factory=dict)
    on_purpose: dict[str, str] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return len(self.has) + len(self.missing) + len(self.owned) + len(self.on_purpose)

    @property
    def percent(self) -> float:
        """ember's share of the names it means to have (all but the on-purpose ones)."""
        wanted = self.total - len(self.on_purpose)
        return 100.0 * len(self.has) / wanted if wanted else 100.0


def _is_public_module_name(module: str) -> bool:
    return module.split(".")[0] == "torch" and not any(p.startswith("_") for p in
                                                       module.split("."))


def _keep(obj, ns: str, listed: bool) -> bool:
    """Whether an attribute of namespace ``ns`` is part of its API (see the module docstring);
    ``listed``: the name is in the module's ``__all__``."""
    if isinstance(obj, types.ModuleType):
        return False
    if type(obj).__module__ in _TYPING or isinstance(obj, types.UnionType | types.GenericAlias):
        return False
    module = getattr(obj, "__module__", None)
    if listed or not isinstance(module, str):
        return True
    if module.split(".")[0] in _FOREIGN:
        return False
    if not isinstance(obj, type | types.FunctionType):
        return True
    # A Python class or function defined in another public torch module is a re-export.
    return not _is_public_module_name(module) or module == ns or module.startswith(ns + ".")


def torch_namespace(ns: str):
    """The torch module (or class) called ``ns``."""
    if ns == "torch.Tensor":
        import torch
        return torch.Tensor
    return importlib.import_module(ns)


def public_names(ns: str) -> list[str]:
    """torch's public names in ``ns``, sorted."""
    obj = torch_namespace(ns)
    if isinstance(obj, type):
        return sorted(n for n in dir(obj) if not n.startswith("_"))
    listed = getattr(obj, "__all__", None)
    names = {n for n in listed or () if not n.startswith("_")}
    # torch.backends.cudnn is a module object whose settings are properties of its class and
    # whose functions live in the module it wraps (``.m``).
    source = obj.m if isinstance(getattr(obj, "m", None), types.ModuleType) else obj
    if type(obj) is not types.ModuleType:
        names |= {n for n, v in vars(type(obj)).items()
                  if not n.startswith("_") and not isinstance(v, types.FunctionType)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated aliases warn when read
        names = {n for n in names if not hasattr(source, n) or _keep(getattr(source, n), ns, True)}
        if listed is None or ns == "torch":
            names |= {n for n in dir(source) if not n.startswith("_") and n not in names
                      and _keep(getattr(source, n), ns, False)}
    names.discard("TYPE_CHECKING")  # typing helper
    return sorted(names)


def ember_namespace(ns: str):
    """ember's counterpart of torch's ``ns`` (``ember.nn.functional`` ...), or None."""
    import ember

    name = "ember" + ns[len("torch"):]
    if ns == "torch.Tensor":
        return ember.Tensor
    try:
        mod = importlib.import_module(name)
    except ImportError:
        parent, _, attr = name.rpartition(".")
        try:
            mod = getattr(importlib.import_module(parent), attr, None)
        except ImportError:
            return None
    # An editable install's finder can serve a submodule from another checkout: only the
    # package that ``import ember`` found counts.
    home = Path(ember.__file__).parent
    file = getattr(mod, "__file__", None)
    if file is not None and home not in Path(file).resolve().parents:
        return None
    return mod


def ember_has(obj, name: str) -> bool:
    if obj is None:
        return False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return hasattr(obj, name)
    except Exception:  # noqa: BLE001 - a lazy attribute that fails to load is not there
        return False


def _lookup(table: dict, ns: str, name: str):
    """The entry of ``table[ns]`` (or ``table[ns]["*"]``) for ``name``: exact names first."""
    entries = table.get(ns, {})
    if name in entries:
        return entries[name]
    for pattern, value in entries.items():
        if fnmatch.fnmatchcase(name, pattern):
            return value
    return None


def classify(ns: str, names: list[str] | None = None) -> Coverage:
    names = public_names(ns) if names is None else names
    ember_obj = ember_namespace(ns)
    cov = Coverage(ns)
    for name in names:
        if ember_has(ember_obj, name):
            cov.has.append(name)
        elif (issue := _lookup(OWNED, ns, name)) is not None:
            cov.owned[name] = issue
        elif (reason := _lookup(ON_PURPOSE, ns, name)) is not None:
            cov.on_purpose[name] = reason
        else:
            cov.missing.append(name)
    return cov


def summary_table(covs: list[Coverage]) -> str:
    rows = ["| namespace | torch names | ember has | missing | owned by other issues | "
            "on purpose | % covered |", "|---|--:|--:|--:|--:|--:|--:|"]
    total = Coverage("all")
    for c in covs:
        rows.append(f"| `{c.namespace}` | {c.total} | {len(c.has)} | {len(c.missing)} | "
                    f"{len(c.owned)} | {len(c.on_purpose)} | {c.percent:.0f}% |")
        total.has += c.has
        total.missing += c.missing
        total.owned.update({f"{c.namespace}.{k}": v for k, v in c.owned.items()})
        total.on_purpose.update({f"{c.namespace}.{k}": v for k, v in c.on_purpose.items()})
    rows.append(f"| **all** | {total.total} | {len(total.has)} | {len(total.missing)} | "
                f"{len(total.owned)} | {len(total.on_purpose)} | {total.percent:.0f}% |")
    return "\n".join(rows)


def _names(names) -> str:
    return ", ".join(f"`{n}`" for n in names) if names else "-"


def render(covs: list[Coverage], torch_version: str) -> str:
    out = [
        "# ember's coverage of torch's public API",
        "",
        f"Generated by `python -m tools.api_coverage` against torch {torch_version}; do not edit.",
        "What counts as public, and the reasons for what ember lacks on purpose, are in",
        "`tools/api_coverage.py` and `tools/api_on_purpose.py`. % covered = has / (torch names",
        "- on purpose); names owned by other issues count as not covered yet.",
        "",
        summary_table(covs),
        "",
        "## Reasons",
        "",
    ]
    out += [f"- **{key}**: {text}" for key, text in REASONS.items()]
    for c in covs:
        out += ["", f"## `{c.namespace}`", "",
                f"**has** ({len(c.has)}): {_names(c.has)}", "",
                f"**missing** ({len(c.missing)}): {_names(c.missing)}"]
        for issue in sorted(set(c.owned.values())):
            names = [n for n, i in c.owned.items() if i == issue]
            out += ["", f"**owned by issue {issue}** ({len(names)}): {_names(names)}"]
        for key in REASONS:
            names = [n for n, r in c.on_purpose.items() if r == key]
            if names:
                out += ["", f"**on purpose, {key}** ({len(names)}): {_names(names)}"]
    return "\n".join(out) + "\n"


def read_baseline(path: Path = BASELINE) -> dict[str, list[str]]:
    """``{namespace: [names ember had]}`` from the checked-in baseline."""
    table: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith("#"):
            ns, name = line.split()
            table.setdefault(ns, []).append(name)
    return table


def write_baseline(covs: list[Coverage], path: Path = BASELINE) -> list[str]:
    """Rewrite the baseline from what ember has now; returns the names it drops."""
    old = read_baseline(path) if path.exists() else {}
    now = {c.namespace: c.has for c in covs}
    dropped = [f"{ns}.{n}" for ns, names in old.items() for n in names
               if n not in now.get(ns, ())]
    lines = ["# torch names ember has; tests/test_api_coverage.py fails if one disappears.",
             "# Regenerate with: python -m tools.api_coverage --baseline"]
    lines += [f"{c.namespace} {n}" for c in covs for n in c.has]
    path.write_text("\n".join(lines) + "\n")
    return dropped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", action="store_true",
                        help="also rewrite the baseline of names ember has")
    args = parser.parse_args(argv)
    import torch

    covs = [classify(ns) for ns in NAMESPACES]
    DOC.parent.mkdir(exist_ok=True)
    DOC.write_text(render(covs, torch.__version__.split("+")[0]))
    print(summary_table(covs))
    print(f"\nwrote {DOC.relative_to(ROOT)}")
    if args.baseline:
        dropped = write_baseline(covs)
        print(f"wrote {BASELINE.relative_to(ROOT)}"
              + (f"; dropped: {', '.join(dropped)}" if dropped else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
