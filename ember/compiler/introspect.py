"""``explain`` (why a function could not be captured) and ``show_code`` (the programs)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ExplainOutput:
    """What ``explain(fn)(*args)`` found, with torch._dynamo's ExplainOutput's fields."""

    graphs: list = field(default_factory=list)
    graph_count: int = 0
    graph_break_count: int = 0
    break_reasons: list = field(default_factory=list)
    op_count: int = 0
    ops_per_graph: list = field(default_factory=list)

    def __str__(self) -> str:
        out = (f"Graph Count: {self.graph_count}\nGraph Break Count: {self.graph_break_count}"
               f"\nOp Count: {self.op_count}\nBreak Reasons:\n")
        for i, reason in enumerate(self.break_reasons):
            out += f"  Break Reason {i + 1}:\n    Reason: {reason}\n"
        return out


def explain(fn):
    """``explain(fn)(*args, **kwargs)``: capture ``fn`` on these arguments (without keeping
    the result) and say whether it became one program, and if not, why."""
    from ember.compiler import guards
    from ember.compiler.program import build
    from ember.compiler.runtime import CompiledFunction, _compiled_target
    from ember.compiler.traced import GraphBreak

    def run(*args, **kwargs) -> ExplainOutput:
        cf = CompiledFunction(*_compiled_target(fn))
        _, _, roots = guards.signature(cf, args, kwargs)
        try:
            prog = build(cf, args, kwargs, roots)
        except GraphBreak as e:
            return ExplainOutput(graph_count=0, graph_break_count=1, break_reasons=[str(e)])
        return ExplainOutput(graphs=[prog.code()], graph_count=1, op_count=prog.n_ops,
                             ops_per_graph=[prog.n_ops])
    return run


def show_code(compiled) -> str:
    """The forward and backward programs captured so far for a compiled function or module
    (also printed at capture time with ``EMBER_LOGS=output_code``)."""
    from ember.compiler.runtime import compiled_function_of

    cf = compiled_function_of(compiled)
    text = "\n\n".join(p.code() for p in cf.programs()) or "(nothing captured yet)"
    print(text)
    return text
