"""See the autograd graph: ``make_dot`` and ``print_graph`` draw it, ``explore`` lets you click
through it and step through its backward pass.

How ``explore``'s page is made (each step its own module):

1. ``_graph``: walk ``grad_fn.next_functions`` from the outputs (as ``make_dot`` does) into
   nodes and edges; for each node its saved tensors, hooks and, read with ``inspect``, the
   source of its forward and backward. A callable ``outputs`` runs under ``_record``'s module
   recorder, which groups the nodes by the module call that made them.
2. ``_record``: run the backward under a subclass of ``autograd.trace()``, which keeps what
   the plain trace only counts: the gradients' values (previews, norms, NaN/inf), the engine's
   ready queue and input buffers after every node, in the engine's real order.
3. ``_layout``: positions from Graphviz's ``dot`` (a plain layered layout when the program is
   missing or the graph is too big for it).
4. ``explore``: all of it as JSON, with ``page/explorer.js`` and ``page/explorer.css`` inline,
   in one HTML file that opens without a network.
"""

from ember.viz.dot import graph_lines, make_dot, print_graph
from ember.viz.explore import explore

__all__ = ["explore", "graph_lines", "make_dot", "print_graph"]
