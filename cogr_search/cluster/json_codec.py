"""JSON for the cluster client and the bulk loop: orjson, with the standard library where orjson would differ.

Why: a sync parses every document it copies and writes it again. Measured with
`bench sync` on 54,667 Home Depot items (benchmarks/sync.md), the standard library's json
was about a third of the client's CPU, on the same two cores the node indexes with;
orjson parses and writes the same documents 2-3x faster.

Where orjson would not give back what `json` gives, `json` is used, so a copied
document is never changed: orjson reads an integer past 64 bits as a float (a text with
a run of 20 or more digits is parsed by `json`), refuses NaN and Infinity when reading,
and refuses integers past 64 bits when writing (both fall back).
"""

from __future__ import annotations

import json
from typing import Any

import orjson
from opensearchpy.serializer import JSONSerializer

_DIGIT_MASK = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
"""Every digit to "0", every other byte to a space: a run of digits becomes a run of "0"."""
_LONG_RUN = b"0" * 20
"""A number orjson might read as a float: 2**64 has 20 digits. (A digit run inside a
string matches too, which only costs the slower parser. Found with `bytes.translate`
and a substring search: ~15x faster than a regular expression on a 300 kB page.)"""


def dumps(value: Any, sort_keys: bool = False) -> bytes:
    """`value` as compact UTF-8 JSON (non-ASCII kept as is, like `ensure_ascii=False`)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS if sort_keys else None)
    except TypeError:  # orjson.JSONEncodeError: an integer past 64 bits, a non-str key, a lone surrogate
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys).encode("utf-8", "surrogatepass")


def loads(text: str | bytes) -> Any:
    """The value of a JSON text, exactly as `json.loads` reads it."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if _LONG_RUN in data.translate(_DIGIT_MASK):
        return json.loads(text)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:  # NaN, Infinity, lone surrogates: json reads them
        return json.loads(text)


class OrjsonSerializer(JSONSerializer):
    """opensearch-py's JSON serializer (dates, UUIDs, numpy values) on `dumps`/`loads` above."""

    def loads(self, s: str) -> Any:
        return loads(s)

    def dumps(self, data: Any) -> str:
        if isinstance(data, (str, bytes)):
            return data  # type: ignore[return-value] - already serialized (bulk bodies)
        try:
            return orjson.dumps(data, default=self.default).decode()
        except TypeError:
            return super().dumps(data)
