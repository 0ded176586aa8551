"""Version numbers: minitf's, and the graph format's (TF's ``framework/versions.py``)."""

__version__ = "0.1.0"
"""minitf's version; exported graphs record it (``meta_info_def.minitf_version``)."""

GRAPH_DEF_VERSION = 1
"""The version of the graphs minitf writes (a GraphDef's ``versions.producer``)."""
