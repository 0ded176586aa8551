"""``tf.train.export_meta_graph`` and the import under it: a graph as JSON, and back.

A *MetaGraphDef* is everything needed to rebuild a graph in another process:
its nodes, the collections that name them, and a little metadata. TF writes
it as a protocol buffer; minitf writes the same structure as a JSON-able dict,
so a graph built in a worker process can be read, rendered or imported
anywhere::

    {"meta_info_def": {"minitf_version": ..., "stripped_op_list": {"op": [...]}, ...},
     "graph_def": {"node": [...], "versions": {"producer": 1, "min_consumer": 1}},
     "collection_def": {"train_op": {"node_list": {"value": ["GradientDescent"]}}, ...}}

A node is TF's NodeDef (``name``, ``op``, ``input`` with ``"x:1"`` and
``"^ctrl"`` entries, ``device``, ``attr``) plus ``output_types`` and
``output_shapes``: TF gets output types from its OpDefs and keeps shapes in an
``_output_shapes`` attr; minitf has no OpDefs, so both are stored. Attr
values that JSON cannot hold are tagged objects with one key: ``{"dtype":
"float32_ref"}``, ``{"shape": [null, 3]}``, ``{"bytes": "loc:@w"}`` (bytes
as latin-1 text), ``{"ndarray": {"dtype": "<f4", "shape": [2], "values":
[...]}}``, ``{"tuple": [...]}``, ``{"float": "nan"}`` and a few more; see
`minitf.framework.attr_json`.

A collection is stored by kind, as in TF's CollectionDef: ``node_list`` (names
of ops and tensors), ``bytes_list`` (strings), ``int64_list``, ``float_list``,
and ``proto_list`` for collections with a registered `register_proto_function`
pair: the modules that define variables, queue runners and savers register
theirs, as TF's do. Collections of other objects are skipped with a logged
warning, as TF does.

``tf.train.import_meta_graph``, which also returns a ``tf.train.Saver``,
lives with the Saver in `minitf.train.saver`, as in TF; it calls
`import_scoped_meta_graph` here.

TF source: ``tensorflow/python/framework/meta_graph.py``.
"""

from __future__ import annotations

import heapq
import json
import logging
import os
from collections.abc import Callable, Iterable
from typing import Any

from minitf.framework import dtypes, ops, tensor_shape
from minitf.framework.attr_json import decode_attr_value, encode_attr_value, shape_to_json
from minitf.framework.graph_keys import GraphKeys
from minitf.framework.op_registry import get_kernel_def
from minitf.framework.versions import GRAPH_DEF_VERSION, __version__

__all__ = [
    "export_meta_graph",
    "as_meta_graph_def",
    "export_scoped_meta_graph",
    "import_scoped_meta_graph",
    "read_meta_graph_file",
    "register_proto_function",
    "in_name_scope",
    "prepend_name_scope",
    "strip_name_scope",
]

_logger = logging.getLogger("minitf")

# Inputs from outside an exported scope get this prefix (TF's _UNBOUND_INPUT_PREFIX).
_UNBOUND_INPUT_PREFIX = "$unbound_inputs_"


# -- names and scopes ------------------------------------------------------------------------


def strip_name_scope(name: str, export_scope: str | None) -> str:
    """Removes ``export_scope/`` from ``name`` (after a ``^`` or ``loc:@`` marker)."""
    if not export_scope:
        return name
    scope = export_scope.rstrip("/") + "/"
    for marker in ("^", "loc:@", ""):
        if name.startswith(marker + scope):
            return marker + name[len(marker + scope) :]
    return name


def prepend_name_scope(name: str, import_scope: str | None) -> str:
    """Puts ``import_scope/`` in front of ``name`` (after a ``^`` or ``loc:@`` marker)."""
    if not import_scope:
        return name
    scope = import_scope.rstrip("/") + "/"
    for marker in ("^", "loc:@"):
        if name.startswith(marker):
            return marker + scope + name[len(marker) :]
    return scope + name


def in_name_scope(name: str, scope: str | None) -> bool:
    """Whether ``name`` (or ``^name``) is inside name scope ``scope`` (any name is, in None)."""
    return not scope or name.lstrip("^").startswith(scope.rstrip("/") + "/")


def _parse_input(name: str) -> tuple[str, int]:
    """``"x"`` → ``("x", 0)``, ``"x:1"`` → ``("x", 1)``, ``"^x"`` → ``("^x", -1)``."""
    if name.startswith("^"):
        return name, -1
    op_name, colon, index = name.rpartition(":")
    return (op_name, int(index)) if colon else (name, 0)


def _canonical_input(name: str) -> str:
    op_name, index = _parse_input(name)
    return op_name if index < 0 else f"{op_name}:{index}"


# -- nodes -----------------------------------------------------------------------------------


def _node_of(op: ops.Operation) -> dict:
    """The op as a NodeDef-like dict with Python attr values."""
    node = op.node_def
    node["output_types"] = [t.dtype.name for t in op.outputs]
    node["output_shapes"] = [shape_to_json(t.get_shape()) for t in op.outputs]
    return node


def _scoped_node(node: dict, export_scope: str | None, clear_devices: bool, unbound: list) -> dict:
    """The node with ``export_scope`` stripped; inputs from outside it are marked unbound."""
    inputs = []
    for name in node["input"]:
        if in_name_scope(name, export_scope):
            inputs.append(strip_name_scope(name, export_scope))
        else:
            control = "^" if name.startswith("^") else ""
            inputs.append(control + _UNBOUND_INPUT_PREFIX + name.lstrip("^"))
            unbound.append(inputs[-1])
    attr = dict(node["attr"])
    if "_class" in attr:
        attr["_class"] = [
            strip_name_scope(group.decode(), export_scope).encode()
            for group in attr["_class"]
            if in_name_scope(group.decode()[len("loc:@") :], export_scope)
        ]
    return {
        **node,
        "name": strip_name_scope(node["name"], export_scope),
        "input": inputs,
        "device": "" if clear_devices else node["device"],
        "attr": attr,
    }


def _encode_node(node: dict) -> dict:
    return {**node, "attr": {k: _encode_attr(node, k, v) for k, v in node["attr"].items()}}


def _encode_attr(node: dict, key: str, value: Any) -> Any:
    try:
        return encode_attr_value(value)
    except TypeError as e:
        raise TypeError(f"Cannot export attr '{key}' of op '{node['name']}': {e}") from None


def _decode_node(node: dict) -> dict:
    return {**node, "attr": {k: decode_attr_value(v) for k, v in node.get("attr", {}).items()}}


# -- collections -----------------------------------------------------------------------------

_proto_functions: dict[str, tuple[Callable, Callable]] = {}


def register_proto_function(collection_name: str, to_proto: Callable, from_proto: Callable):
    """Registers how the items of a collection are exported and rebuilt (TF's ops function).

    Args:
        collection_name: The collection key.
        to_proto: ``to_proto(item, export_scope=None)`` → a JSON-able dict, or
            None to leave the item out.
        from_proto: ``from_proto(proto, import_scope=None)`` → the item, rebuilt
            from the ops of the default graph.
    """
    _proto_functions[collection_name] = (to_proto, from_proto)


def _collection_def(graph: ops.Graph, key: str, export_scope: str | None) -> dict | None:
    """One collection as a CollectionDef dict (None if empty or not representable)."""
    items = [x for x in graph.get_collection(key) if _item_in_scope(x, export_scope)]
    if not items:
        return None
    try:
        functions = _proto_functions.get(key)
        if functions is not None:
            protos = [p for p in (functions[0](x, export_scope=export_scope) for x in items) if p]
            return {"proto_list": {"value": protos}} if protos else None
        kind = _kind_of(items[0])
        return {kind: {"value": [_collection_value(graph, kind, x, export_scope) for x in items]}}
    except (TypeError, ValueError, KeyError, AttributeError) as e:
        _logger.warning(
            "Collection '%s' is not exported: its items are of an unsupported type or of "
            "mixed types. %s",
            key,
            e,
        )
        return None


def _item_in_scope(item: Any, export_scope: str | None) -> bool:
    name = getattr(item, "name", None)
    return not isinstance(name, str) or in_name_scope(name, export_scope)


def _kind_of(item: Any) -> str:
    if isinstance(item, (str, bytes)):
        return "bytes_list"
    if isinstance(item, int):
        return "int64_list"
    if isinstance(item, float):
        return "float_list"
    return "node_list"


_KIND_TYPES = {"bytes_list": (str, bytes), "int64_list": (int,), "float_list": (float,)}


def _collection_value(graph: ops.Graph, kind: str, item: Any, export_scope: str | None) -> Any:
    if kind == "node_list":
        element = graph.as_graph_element(item)
        return strip_name_scope(element.name, export_scope)
    if not isinstance(item, _KIND_TYPES[kind]):
        raise TypeError(f"{item!r} does not belong in a {kind}")
    return encode_attr_value(item)


def _restore_collection(graph, key, col_def, scope, rebuilt: dict) -> None:
    if not isinstance(col_def, dict) or len(col_def) != 1:
        _logger.error("Cannot identify data type for collection %s. Skipping.", key)
        return
    kind, body = next(iter(col_def.items()))
    values = body.get("value", [])
    if kind == "proto_list":
        functions = _proto_functions.get(key)
        if functions is None:
            _logger.warning("Collection '%s' has no registered from_proto function. Skipping.", key)
            return
        for proto in values:
            # Variables are listed in several collections; rebuild each only once.
            cache_key = (functions[1], json.dumps(proto, sort_keys=True))
            if cache_key not in rebuilt:
                rebuilt[cache_key] = functions[1](proto, import_scope=scope)
            graph.add_to_collection(key, rebuilt[cache_key])
    elif kind == "node_list":
        for name in values:
            graph.add_to_collection(key, graph.as_graph_element(prepend_name_scope(name, scope)))
    elif kind in _KIND_TYPES:
        for value in values:
            graph.add_to_collection(key, _scoped_collection_value(decode_attr_value(value), scope))
    else:
        _logger.error("Cannot identify data type for collection %s. Skipping.", key)


def _scoped_collection_value(value: Any, scope: str) -> Any:
    # TF prepends the import scope to every string of a collection: such
    # collections usually hold names (TF's import_scoped_meta_graph).
    if isinstance(value, str):
        return prepend_name_scope(value, scope)
    if isinstance(value, bytes):
        return prepend_name_scope(value.decode("latin-1"), scope).encode("latin-1")
    return value


# -- export ----------------------------------------------------------------------------------


def export_scoped_meta_graph(
    filename: str | os.PathLike | None = None,
    graph_def: dict | None = None,
    graph: ops.Graph | None = None,
    export_scope: str | None = None,
    as_text: bool = False,
    unbound_inputs_col_name: str = "unbound_inputs",
    clear_devices: bool = False,
    saver_def: dict | None = None,
    clear_extraneous_savers: bool = False,
    strip_default_attrs: bool = False,
    meta_info_def: dict | None = None,
    collection_list: Iterable[str] | None = None,
) -> tuple[dict, dict]:
    """Exports a graph (or the part under ``export_scope``) as a MetaGraphDef dict.

    Args: as for `export_meta_graph`, plus ``unbound_inputs_col_name``: the
    collection that lists the inputs from outside ``export_scope``.

    Returns:
        The MetaGraphDef dict, and ``{name without export_scope: Variable}`` for
        the global variables under ``export_scope``.

    Raises:
        TypeError: if ``graph`` is not a `Graph`, ``meta_info_def``,
            ``graph_def`` or ``saver_def`` is not a dict, or an attr value
            cannot be written as JSON.
    """
    del clear_extraneous_savers, strip_default_attrs
    graph = graph or ops.get_default_graph()
    _check_export_args(graph, meta_info_def, graph_def, saver_def)
    unbound: list[str] = []
    nodes = [
        _encode_node(_scoped_node(node, export_scope, clear_devices, unbound))
        for node in _source_nodes(graph, graph_def)
        if in_name_scope(node["name"], export_scope)
    ]
    keys = graph.get_all_collection_keys() if collection_list is None else list(collection_list)
    collections = {}
    for key in sorted(keys):
        col_def = _collection_def(graph, key, export_scope)
        if col_def is not None:
            collections[key] = col_def
    if unbound and unbound_inputs_col_name:
        collections[unbound_inputs_col_name] = {"bytes_list": {"value": unbound}}
    meta_graph_def = {
        "meta_info_def": _meta_info_def(meta_info_def, nodes),
        "graph_def": {
            "node": nodes,
            "versions": {"producer": GRAPH_DEF_VERSION, "min_consumer": GRAPH_DEF_VERSION},
        },
        "collection_def": collections,
    }
    if saver_def is not None:
        meta_graph_def["saver_def"] = saver_def
    if filename:
        _write(meta_graph_def, filename, as_text)
    scope = export_scope.rstrip("/") if export_scope else None
    var_list = {
        strip_name_scope(v.name, scope): v
        for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES)
        if in_name_scope(v.name, scope)
    }
    return meta_graph_def, var_list


def _check_export_args(graph, meta_info_def, graph_def, saver_def) -> None:
    if not isinstance(graph, ops.Graph):
        raise TypeError(f"graph must be of type Graph, not {type(graph).__name__}")
    for name, value in (
        ("meta_info_def", meta_info_def),
        ("graph_def", graph_def),
        ("saver_def", saver_def),
    ):
        if value is not None and not isinstance(value, dict):
            raise TypeError(f"{name} must be a dict, not {type(value).__name__}")


def _source_nodes(graph: ops.Graph, graph_def: dict | None) -> list[dict]:
    if graph_def is None:
        return [_node_of(op) for op in graph.get_operations()]
    return [_decode_node(node) for node in graph_def.get("node", [])]


def _meta_info_def(meta_info_def: dict | None, nodes: list[dict]) -> dict:
    info = {"meta_graph_version": "", "tags": [], **(meta_info_def or {})}
    info["minitf_version"] = __version__
    if not info.get("stripped_op_list", {}).get("op"):
        info["stripped_op_list"] = {"op": [{"name": t} for t in sorted({n["op"] for n in nodes})]}
    return info


def _write(meta_graph_def: dict, filename: str | os.PathLike, as_text: bool) -> None:
    directory = os.path.dirname(os.fspath(filename))
    if directory:
        os.makedirs(directory, exist_ok=True)
    with open(filename, "w", encoding="utf-8") as f:
        if as_text:
            json.dump(meta_graph_def, f, indent=2, allow_nan=False)
        else:
            json.dump(meta_graph_def, f, separators=(",", ":"), allow_nan=False)


def export_meta_graph(
    filename: str | os.PathLike | None = None,
    meta_info_def: dict | None = None,
    graph_def: dict | None = None,
    saver_def: dict | None = None,
    collection_list: Iterable[str] | None = None,
    as_text: bool = False,
    graph: ops.Graph | None = None,
    export_scope: str | None = None,
    clear_devices: bool = False,
    clear_extraneous_savers: bool = False,
    strip_default_attrs: bool = False,
    save_debug_info: bool = False,
    **kwargs: Any,
) -> dict:
    """Returns a graph, its collections and metadata as a MetaGraphDef dict; writes it if asked.

    Differences from TF: the result is a JSON-able dict, not a protocol
    buffer, and the file is always JSON text (``as_text=True`` indents it,
    ``False`` writes it compactly). minitf has no OpDefs and no op
    tracebacks and does not prune other savers' ops, so
    ``strip_default_attrs``, ``clear_extraneous_savers`` and
    ``save_debug_info`` change nothing; ``saver_def`` is stored as given.

    Args:
        filename: Where to write the JSON (directories are created), or None.
        meta_info_def: Extra MetaInfoDef fields (``tags``, ``meta_graph_version``).
        graph_def: A GraphDef dict to export instead of ``graph``'s ops.
        saver_def: A SaverDef dict to store.
        collection_list: The collection keys to export (default: all).
        as_text: Indent the JSON file.
        graph: The graph to export (default: the default graph).
        export_scope: Export only the ops under this name scope, with the scope
            removed from their names; inputs from outside it are listed in the
            ``unbound_inputs`` collection and must be given through
            ``input_map`` on import.
        clear_devices: Leave the device of every node empty.
        clear_extraneous_savers: Accepted for compatibility.
        strip_default_attrs: Accepted for compatibility.
        save_debug_info: Accepted for compatibility.
        **kwargs: ``unbound_inputs_col_name``.

    Returns:
        The MetaGraphDef dict.

    Raises:
        TypeError: for arguments of the wrong type, or an attr value that
            cannot be written as JSON.
    """
    del save_debug_info
    meta_graph_def, _ = export_scoped_meta_graph(
        filename=filename,
        graph_def=graph_def,
        graph=graph,
        export_scope=export_scope,
        as_text=as_text,
        clear_devices=clear_devices,
        saver_def=saver_def,
        clear_extraneous_savers=clear_extraneous_savers,
        strip_default_attrs=strip_default_attrs,
        meta_info_def=meta_info_def,
        collection_list=collection_list,
        **kwargs,
    )
    return meta_graph_def


# -- import ----------------------------------------------------------------------------------


def read_meta_graph_file(filename: str | os.PathLike) -> dict:
    """Reads a MetaGraphDef dict from a JSON file.

    Raises:
        OSError: if the file does not exist (TF's ``IOError``), cannot be read
            as JSON, or holds something other than a MetaGraphDef.
    """
    if not os.path.isfile(filename):
        raise FileNotFoundError(f"File {os.fspath(filename)} does not exist.")
    with open(filename, encoding="utf-8") as f:
        text = f.read()
    try:
        meta_graph_def = json.loads(text)
    except json.JSONDecodeError as e:
        raise OSError(f"Cannot parse file {os.fspath(filename)}: {e}.") from None
    problem = _meta_graph_problem(meta_graph_def)
    if problem:
        raise OSError(f"Cannot parse file {os.fspath(filename)}: {problem}.")
    return meta_graph_def


def _meta_graph_problem(meta_graph_def: Any) -> str | None:
    if not isinstance(meta_graph_def, dict):
        return f"a MetaGraphDef is a JSON object, not {type(meta_graph_def).__name__}"
    graph_def = meta_graph_def.get("graph_def")
    if not isinstance(graph_def, dict) or not isinstance(graph_def.get("node", []), list):
        return "a MetaGraphDef needs a 'graph_def' object with a 'node' list"
    if not isinstance(meta_graph_def.get("collection_def", {}), dict):
        return "'collection_def' must be an object"
    return None


def import_scoped_meta_graph(
    meta_graph_or_file: dict | str | os.PathLike,
    clear_devices: bool = False,
    graph: ops.Graph | None = None,
    import_scope: str | None = None,
    input_map: dict | None = None,
    unbound_inputs_col_name: str = "unbound_inputs",
    restore_collections_predicate: Callable[[str], bool] = lambda key: True,
) -> dict:
    """Adds the nodes and collections of a MetaGraphDef to ``graph``.

    Args:
        meta_graph_or_file: A MetaGraphDef dict or the path of its JSON file.
        clear_devices: Leave the device of every imported op empty.
        graph: The graph to import into (default: the default graph).
        import_scope: A name scope for the imported names (made unique, as
            ``tf.name_scope`` would); by default the current name scope.
        input_map: ``{input name in the MetaGraphDef: Tensor}`` (``"^name":
            Operation`` for a control input): inputs to take from ``graph``
            instead, required for the ``$unbound_inputs_`` of a scoped export.
        unbound_inputs_col_name: The collection that lists unbound inputs.
        restore_collections_predicate: Restore only the collections it accepts.

    Returns:
        ``{name without the import scope: Variable}`` for the imported global variables.

    Raises:
        OSError: if the file is missing or unreadable.
        ValueError: if ``graph`` already has an op of an imported name, an
            unbound input is not in ``input_map``, an input names no node,
            the nodes form a cycle, or an op type has no kernel in minitf.
        RuntimeError: if ``graph`` is finalized.
    """
    meta_graph_def = as_meta_graph_def(meta_graph_or_file)
    graph = graph or ops.get_default_graph()
    if graph.finalized:
        raise RuntimeError("Graph is finalized and cannot be modified.")
    input_map = {
        _canonical_input(k): graph.as_graph_element(v) for k, v in (input_map or {}).items()
    }
    collections = meta_graph_def.get("collection_def", {})
    _check_unbound_inputs(collections.get(unbound_inputs_col_name), input_map)
    _check_versions(meta_graph_def["graph_def"].get("versions", {}))
    nodes = [_decode_node(n) for n in meta_graph_def["graph_def"].get("node", [])]
    with graph.as_default():
        scope = _import_prefix(graph, import_scope)
        _import_nodes(graph, nodes, scope, input_map, clear_devices)
        rebuilt: dict = {}
        for key in sorted(collections):
            if key != unbound_inputs_col_name and restore_collections_predicate(key):
                _restore_collection(graph, key, collections[key], scope, rebuilt)
    return {
        strip_name_scope(v.name, scope): v
        for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES)
        if in_name_scope(v.name, scope)
    }


def as_meta_graph_def(meta_graph_or_file: Any) -> dict:
    """The MetaGraphDef dict that ``meta_graph_or_file`` is, or that its file holds.

    Args:
        meta_graph_or_file: A MetaGraphDef dict or the path of its JSON file.

    Raises:
        OSError: if the file is missing or unreadable (`read_meta_graph_file`).
        TypeError: if it is neither a dict nor a path.
        ValueError: if the dict is not a MetaGraphDef.
    """
    if isinstance(meta_graph_or_file, (str, os.PathLike)):
        return read_meta_graph_file(meta_graph_or_file)
    problem = _meta_graph_problem(meta_graph_or_file)
    if problem and not isinstance(meta_graph_or_file, dict):
        raise TypeError(
            "meta_graph_or_file must be a MetaGraphDef dict or a file name, not "
            f"{type(meta_graph_or_file).__name__}"
        )
    if problem:
        raise ValueError(f"Not a MetaGraphDef: {problem}.")
    return meta_graph_or_file


def _check_unbound_inputs(col_def: dict | None, input_map: dict) -> None:
    if not col_def:
        return
    values = next(iter(col_def.values())).get("value", [])
    missing = [v for v in values if _canonical_input(v) not in input_map]
    if missing:
        raise ValueError(
            f"Graph contains unbound inputs: {','.join(missing)}. Must provide these inputs "
            "through input_map."
        )


def _check_versions(versions: dict) -> None:
    min_consumer = versions.get("min_consumer", 0)
    if min_consumer > GRAPH_DEF_VERSION:
        raise ValueError(
            f"GraphDef min consumer version {min_consumer} above current version "
            f"{GRAPH_DEF_VERSION}: it was written by a newer minitf."
        )


def _import_prefix(graph: ops.Graph, import_scope: str | None) -> str:
    """The scope of the imported names: ``import_scope`` made unique, or the current scope."""
    if not import_scope:
        return graph.get_name_scope()
    with graph.name_scope(import_scope) as scope:
        return scope.rstrip("/")


def _import_nodes(graph, nodes: list[dict], scope: str, input_map: dict, clear_devices) -> None:
    by_name = {}
    for node in nodes:
        if node["name"] in by_name:
            raise ValueError(f"The MetaGraphDef has two nodes named '{node['name']}'.")
        by_name[node["name"]] = node
    _check_new_names(graph, [prepend_name_scope(name, scope) for name in by_name])
    order = _topological_order(nodes, by_name, input_map)
    for node in order:
        if get_kernel_def(node["op"]) is None:
            raise ValueError(f"Op type not registered '{node['op']}' (node '{node['name']}').")
    for node in order:
        _import_node(graph, node, scope, input_map, clear_devices)


def _check_new_names(graph: ops.Graph, names: list[str]) -> None:
    existing = {op.name for op in graph.get_operations()}
    taken = [name for name in names if name in existing]
    if taken:
        shown = ", ".join(f"'{name}'" for name in taken[:5])
        raise ValueError(
            f"Cannot import the MetaGraphDef: the graph already has operations named {shown}"
            f"{' and more' if len(taken) > 5 else ''}. Import under another import_scope."
        )


def _topological_order(nodes: list[dict], by_name: dict, input_map: dict) -> list[dict]:
    """The nodes, producers first, otherwise in their stored order.

    Raises:
        ValueError: if an input names no node and is not in ``input_map``, or
            the nodes form a cycle.
    """
    position = {node["name"]: i for i, node in enumerate(nodes)}
    waiting_on = {}
    consumers: dict[str, list[str]] = {name: [] for name in by_name}
    for node in nodes:
        producers = {_input_producer(node, name, by_name, input_map) for name in node["input"]}
        producers.discard(None)
        waiting_on[node["name"]] = len(producers)
        for producer in producers:
            consumers[producer].append(node["name"])
    ready = [position[n] for n, count in waiting_on.items() if count == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        node = nodes[heapq.heappop(ready)]
        order.append(node)
        for consumer in consumers[node["name"]]:
            waiting_on[consumer] -= 1
            if waiting_on[consumer] == 0:
                heapq.heappush(ready, position[consumer])
    if len(order) < len(nodes):
        stuck = sorted(n for n, count in waiting_on.items() if count > 0)
        raise ValueError(f"The MetaGraphDef's nodes form a cycle through {stuck[:5]}.")
    return order


def _input_producer(node: dict, name: str, by_name: dict, input_map: dict) -> str | None:
    """The imported node an input waits for, or None if ``input_map`` provides it."""
    if _canonical_input(name) in input_map:
        return None
    producer = _parse_input(name)[0].lstrip("^")
    if producer not in by_name:
        raise ValueError(
            f"Node '{node['name']}' has input '{name}', which is neither a node of the "
            "MetaGraphDef nor a key of input_map."
        )
    return producer


def _import_node(graph, node: dict, scope: str, input_map: dict, clear_devices: bool) -> None:
    inputs, control = [], []
    for name in node["input"]:
        mapped = input_map.get(_canonical_input(name))
        op_name, index = _parse_input(prepend_name_scope(name, scope))
        if mapped is None:
            mapped = graph.as_graph_element(op_name[1:] if index < 0 else f"{op_name}:{index}")
        if index < 0 and isinstance(mapped, ops.Tensor):
            mapped = mapped.op
        (control if index < 0 else inputs).append(mapped)
    attrs = dict(node["attr"])
    if "_class" in attrs:
        attrs["_class"] = [
            prepend_name_scope(group.decode(), scope).encode() for group in attrs["_class"]
        ]
    graph._import_op(
        node["op"],
        prepend_name_scope(node["name"], scope),
        inputs,
        [dtypes.as_dtype(t) for t in node.get("output_types", [])],
        [tensor_shape.TensorShape(s) for s in node.get("output_shapes", [])],
        control,
        attrs,
        "" if clear_devices else node.get("device", ""),
    )
