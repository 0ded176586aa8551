"""A tensor's value as ``Print`` and ``Assert`` write it (TF's ``Tensor::SummarizeValue``).

At most ``max_entries`` elements are written, in row-major order, separated by
spaces, each row in brackets: ``[[0 1 2]...]``; ``...`` marks what was left out.
Elements are written as TF's C++ code writes them: floats with the shortest
of ``%.6g``/``%.9g`` (doubles ``%.15g``/``%.17g``) that reads back exactly,
bools as ``1``/``0``, strings C-escaped without quotes, complex numbers as ``?``
(``tensorflow/core/framework/tensor.cc``).
"""

from __future__ import annotations

import numpy as np


def summarize_value(value, max_entries: int) -> str:
    """The first ``max_entries`` elements of ``value`` in TF's format.

    Args:
        value: A numpy array or scalar (strings as ``bytes``).
        max_entries: How many elements to write; negative writes them all.

    Returns:
        The text, without the brackets ``Print`` and ``Assert`` put around it.
    """
    array = np.asarray(value, dtype=object if isinstance(value, (bytes, str)) else None)
    limit = array.size if max_entries < 0 else min(max_entries, array.size)
    flat = [_element(x, array.dtype) for x in array.reshape(-1)[:limit]]
    if array.ndim == 0:
        return " ".join(flat)
    out: list[str] = []
    _one_dim(0, array.shape, iter(flat), [0], limit, out)
    if array.size > limit:
        out.append("...")
    return "".join(out)


def _one_dim(dim: int, shape: tuple, elements, written: list, limit: int, out: list) -> None:
    """Writes dimension ``dim`` of the array, recursively (TF's ``PrintOneDim``)."""
    if written[0] >= limit:
        return
    if dim == len(shape) - 1:
        for i in range(shape[dim]):
            if written[0] >= limit:
                if dim != 0:
                    out.append("...")
                return
            if i > 0:
                out.append(" ")
            out.append(next(elements))
            written[0] += 1
        return
    for _ in range(shape[dim]):
        opened = written[0] < limit
        if opened:
            out.append("[")
        _one_dim(dim + 1, shape, elements, written, limit, out)
        if opened:
            out.append("]")


def _element(x, dtype: np.dtype) -> str:
    """One element as TF's ``PrintOneElement`` writes it (the TF1 form: strings unquoted)."""
    if dtype.kind == "f":
        bits = (6, 9) if dtype.itemsize <= 4 else (15, 17)
        return _shortest_float(float(x), np.float32 if dtype.itemsize <= 4 else np.float64, bits)
    if dtype.kind == "b":
        return "1" if x else "0"
    if dtype.kind == "c":
        return "?"
    if dtype.kind in "OSU":
        return _c_escape(x.encode() if isinstance(x, str) else bytes(x))
    return str(int(x))


def _shortest_float(x: float, as_type, digits: tuple[int, int]) -> str:
    """``%.{short}g`` if it reads back as the same value of ``as_type``, else ``%.{long}g``."""
    short, long = digits
    text = f"{x:.{short}g}"
    if np.isnan(x) or as_type(float(text)) == as_type(x):
        return text
    return f"{x:.{long}g}"


_ESCAPES = {
    ord("\n"): "\\n",
    ord("\r"): "\\r",
    ord("\t"): "\\t",
    ord('"'): '\\"',
    ord("'"): "\\'",
    ord("\\"): "\\\\",
}


def _c_escape(data: bytes) -> str:
    """C escapes of ``data``, bytes of UTF-8 characters kept (``absl::Utf8SafeCEscape``)."""
    out = bytearray()
    for byte in data:
        if byte in _ESCAPES:
            out += _ESCAPES[byte].encode()
        elif byte < 0x20 or byte == 0x7F:
            out += f"\\{byte:03o}".encode()
        else:
            out.append(byte)
    return out.decode("utf-8", errors="replace")
