"""``minitf.viz``: pictures and traces of graphs and steps.

- `graph_to_dict`, `to_networkx`: the graph as data;
- `minitf.viz.dot`: DOT text of the whole graph, one task, or a step's partitions;
- `minitf.viz.render`: DOT to SVG/PNG/PDF through Graphviz;
- `draw`: one picture that a notebook shows inline;
- `Tracer`: record every op a cluster runs for a span of training;
- `minitf.viz.timeline`: ``Timeline`` (Chrome trace JSON);
- `minitf.viz.timeline_plot`: a static timeline picture.
"""

# ruff: noqa: F401
from minitf.viz.graph_data import graph_to_dict, op_role, to_networkx
from minitf.viz.pictures import draw
from minitf.viz.tracer import Tracer
