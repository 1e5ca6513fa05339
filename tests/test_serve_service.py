"""The expansion service as a real process on a loopback port, with the real CPU model:
its routes, batching and de-duplication (counted on /health), the cache, the cached path
answering while the model is busy, input limits, and the generation timeout."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from cogr_search.keywords import normalize
from tests.serve_support import ServiceProcess, http, make_base_run

pytestmark = pytest.mark.model

DEADLINE_S = 120.0


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201 - RunDir
    return make_base_run(tmp_path_factory.mktemp("serve-runs"))


@pytest.fixture(scope="module")
def service(run):  # noqa: ANN001, ANN201
    # A wide batching window makes the concurrent requests below share generation calls.
    with ServiceProcess(run, "--max-wait-ms", "50", "--max-texts", "16") as process:
        yield process


def _wait_for(condition, what: str) -> None:  # noqa: ANN001
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)  # polling a condition with a deadline


def test_query_and_item_routes_answer_in_order_with_the_runs_identity(service, run) -> None:
    status, body = service.post("/v1/expand/query", {"texts": ["oak dining table", "bathroom storage", "oak dining table"]})
    assert status == 200, body
    assert (body["run"], body["round"], body["model"]) == (run.name, 0, run.model_tag(0))
    assert len(body["keywords"]) == 3 and body["keywords"][0] == body["keywords"][2]
    for keywords in body["keywords"]:
        assert len(keywords) <= 30 and all(k == normalize(k) and k for k in keywords)

    items = [{"id": "a", "title": "Norrland Ceramic Table Lamp, Gold", "description": "A ceramic table lamp."},
             {"id": 7, "title": "Linen Throw Pillow"}]
    status, body = service.post("/v1/expand/item", {"items": items})
    assert status == 200, body
    assert len(body["keywords"]) == 2 and body["model"] == run.model_tag(0)

    health = service.health()
    assert health["model_loaded"] is True and health["round"] == 0
    assert health["cache"]["query"]["size"] >= 2 and health["cache"]["item"]["size"] == 2
    assert health["counters"]["query"]["texts"] >= 3

    status, spec = http("GET", service.url + "/openapi.json")
    assert status == 200
    assert {"/v1/expand/query", "/v1/expand/item", "/health"} <= set(spec["paths"])
    assert {"QueryRequest", "ItemRequest", "ExpandResponse"} <= set(spec["components"]["schemas"])


def test_concurrent_requests_are_batched_and_identical_texts_generated_once(service) -> None:
    before = service.health()["counters"]["query"]
    texts = [f"batch probe {n % 4}" for n in range(12)]  # 4 distinct texts, each asked 3 times
    answers: dict[int, tuple[int, dict]] = {}

    def ask(n: int) -> None:
        answers[n] = service.post("/v1/expand/query", {"texts": [texts[n]]})

    threads = [threading.Thread(target=ask, args=(n,)) for n in range(len(texts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(DEADLINE_S)
    assert all(answers[n][0] == 200 for n in range(len(texts))), answers
    after = service.health()["counters"]["query"]
    assert after["requests"] - before["requests"] == 12
    assert after["generated_texts"] - before["generated_texts"] == 4  # each distinct text once
    assert after["generation_calls"] - before["generation_calls"] <= 3  # 12 requests, a few batches
    for n in range(4, 12):
        assert answers[n][1]["keywords"] == answers[n % 4][1]["keywords"]

    # Repeats come from the cache: no new generation call.
    again = service.post("/v1/expand/query", {"texts": texts[:4]})
    assert again[0] == 200
    cached = service.health()["counters"]["query"]
    assert cached["generation_calls"] == after["generation_calls"]
    assert cached["cache_hits"] - after["cache_hits"] == 4


def test_cached_texts_answer_while_the_model_is_busy(service) -> None:
    assert service.post("/v1/expand/query", {"texts": ["warm text"]})[0] == 200
    slow = threading.Thread(target=service.post, args=("/v1/expand/query", {"texts": ["a cold text never seen"]}))
    slow.start()
    _wait_for(lambda: service.health()["in_flight"]["query"] >= 1, "the cold text to be in flight")
    status, body = service.post("/v1/expand/query", {"texts": ["warm text"]})
    assert status == 200 and body["keywords"]
    assert slow.is_alive()  # the cached answer did not wait for the generation
    slow.join(DEADLINE_S)


@pytest.mark.parametrize(
    ("payload", "raw", "status", "words"),
    [
        ({"texts": [f"t{n}" for n in range(17)]}, None, 413, ["texts", "17", "16"]),
        ({"texts": ["x" * 10_000]}, None, 413, ["texts[0]", "10000", "1000"]),
        ({"texts": ["ok", "   "]}, None, 400, ["texts[1]", "empty"]),
        ({"texts": []}, None, 400, ["texts", "empty"]),
        ({"texts": "oak"}, None, 400, ["texts", "list"]),
        ({"texts": [3]}, None, 400, ["texts[0]", "string"]),
        (None, b'{"texts": ["caf\xe9"]}', 400, ["UTF-8", "offset 15"]),
        (None, b'{"texts": [', 400, ["not JSON", "line 1"]),
        (None, b'["oak"]', 400, ["JSON object"]),
        ({"items": [{"id": "7", "description": "no title"}]}, None, 400, ["items[0]", "'7'", "title"]),
        ({"items": [{"id": "8", "title": "t", "description": "d" * 20_001}]}, None, 413, ["items[0]", "description"]),
    ],
)
def test_limits_answer_4xx_with_one_line(service, payload, raw, status, words) -> None:
    route = "/v1/expand/item" if payload and "items" in payload else "/v1/expand/query"
    before = service.health()["counters"]
    answered, body = service.post(route, payload, raw)
    assert answered == status, body
    message = body["error"]
    assert "\n" not in message and all(w in message for w in words), message
    after = service.health()["counters"]
    assert after["query"]["generation_calls"] == before["query"]["generation_calls"]  # refused before the model


def test_generation_timeout_answers_504_and_the_result_is_cached_later(run) -> None:
    with ServiceProcess(run, "--sides", "query", "--generation-timeout", "0.05") as service:
        started = time.monotonic()
        status, body = service.post("/v1/expand/query", {"texts": ["slow lamp"]})
        assert status == 504 and "0.05" in body["error"], body
        assert time.monotonic() - started < DEADLINE_S
        assert service.health()["counters"]["query"]["timeouts"] == 1
        _wait_for(lambda: service.health()["in_flight"]["query"] == 0, "the generation to finish")
        status, body = service.post("/v1/expand/query", {"texts": ["slow lamp"]})
        assert status == 200, body  # the finished generation was cached
        assert service.health()["counters"]["query"]["cache_hits"] == 1


def test_serve_refuses_a_busy_port_in_one_line(run, tmp_path: Path) -> None:
    import socket
    import subprocess
    import sys

    from tests.serve_support import subprocess_env

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "cogr_search.cli", "serve", "--run", str(run.root), "--port", str(port)],
                              env=subprocess_env(), capture_output=True, text=True, timeout=DEADLINE_S)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [f"Error: cannot listen on 127.0.0.1:{port}: Address already in use"]
