"""The JSON codec under the cluster client and the bulk loop: orjson's speed, and exactly
what the standard library reads and writes wherever orjson would differ (a copied
document must come out of a sync unchanged)."""

from __future__ import annotations

import json
import math

from cogr_search.cluster import json_codec
from cogr_search.cluster.json_codec import OrjsonSerializer


def test_integers_past_64_bits_keep_every_digit() -> None:
    text = '{"sku": 123456789012345678901234567890, "max_u64": 18446744073709551615, "i64": -9223372036854775808}'
    for value in (text, text.encode()):
        assert json_codec.loads(value) == {"sku": 123456789012345678901234567890,
                                           "max_u64": 18446744073709551615, "i64": -9223372036854775808}
    assert json_codec.dumps({"sku": 2**70}) == b'{"sku":1180591620717411303424}'


def test_what_orjson_refuses_is_read_and_written_as_json_does() -> None:
    assert math.isnan(json_codec.loads('{"a": NaN}')["a"])
    assert json_codec.loads('{"a": "x\\ud800y"}') == json.loads('{"a": "x\\ud800y"}')  # a lone surrogate, escaped
    assert json_codec.loads("[1.5, 1e400, -0.0]") == json.loads("[1.5, 1e400, -0.0]")


def test_text_is_written_compact_and_unescaped_and_sorted_on_request() -> None:
    assert json_codec.dumps({"b": ["é", "ß"], "a": 1}) == '{"b":["é","ß"],"a":1}'.encode()
    assert json_codec.dumps({"b": 1, "a": [2, 3]}, sort_keys=True) == b'{"a":[2,3],"b":1}'
    document = {"id": "p1", "title": "Ｔａｂｌｅ — 2\" oak", "n": 3, "f": 0.1, "tags": ["a", None, True]}
    assert json_codec.loads(json_codec.dumps(document)) == document


def test_the_client_serializer_passes_bodies_through_and_writes_dates() -> None:
    from datetime import datetime, timezone

    serializer = OrjsonSerializer()
    assert serializer.dumps(b'{"index":{}}\n') == b'{"index":{}}\n'
    assert serializer.dumps("already text") == "already text"
    assert json.loads(serializer.dumps({"at": datetime(2026, 1, 2, tzinfo=timezone.utc)})) == {
        "at": "2026-01-02T00:00:00+00:00"}
    assert serializer.loads('{"hits": {"total": 3}}') == {"hits": {"total": 3}}
