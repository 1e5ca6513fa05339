"""An application writing through an alias while cogr-search syncs it (a real process).

`python -m tests.sync_writer URL ALIAS N_ITEMS` runs rounds of writes until a line
arrives on stdin: round i indexes new documents, overwrites one item (new title),
partially updates another (`_update` with `doc`) and deletes a third, each range
disjoint (deletes count down from the first third's end, renames up from 0), so the
expected final content follows from the number of rounds alone (`expected`). A write
refused by a sync's freeze (HTTP 403, the write block) is retried until it goes through:
an application loses nothing it retries. After each round it prints `ok <i>`. Out of
disjoint ranges (N_ITEMS/6 rounds, at most `MAX_ROUNDS`) it prints `idle <rounds>` and
waits for the line; at the end `done <rounds> refused <count>`.
"""

from __future__ import annotations

import json
import select
import sys
import time

from cogr_search.connect import connect
from cogr_search.cluster.engines import API_ERRORS, CONNECTION_ERRORS, is_transient, status_of
from cogr_search.settings import load_settings

NEW_PER_ROUND = 10
MAX_ROUNDS = 1000
RETRY_FOR_S = 120.0


def item_id(n: int) -> str:
    return f"i{n:05d}"


def expected(n_items: int, rounds: int) -> dict[str, dict]:
    """id -> (title, description) after `rounds` rounds on items `i00000...`."""
    docs = {item_id(n): {"title": f"Item {n} Oak Table", "description": ""} for n in range(n_items)}
    third = n_items // 3
    for i in range(rounds):
        for k in range(NEW_PER_ROUND):
            docs[f"w{i}-{k}"] = {"title": f"Written {i} {k} Lamp", "description": "new"}
        docs[item_id(i)] = {"title": f"Renamed {i} Chair", "description": "renamed"}
        docs[item_id(third + i)]["description"] = f"updated {i}"
        del docs[item_id(third - 1 - i)]
    return docs


def _retrying(call) -> int:  # noqa: ANN001 - a zero-argument callable
    """Run `call` until it goes through; the number of refusals. Refused: a write block (403),
    a busy cluster (429), or what any application retries (503, a timeout, a lost connection:
    a node of a cluster was killed and its shards are being promoted elsewhere)."""
    refused, deadline = 0, time.monotonic() + RETRY_FOR_S
    while True:
        try:
            call()
            return refused
        except (*API_ERRORS, *CONNECTION_ERRORS) as err:
            if not (status_of(err) in (403, 429) or is_transient(err)) or time.monotonic() > deadline:
                raise
            refused += 1
            time.sleep(0.05)  # back off before retrying a refused write, as an application would


def main(url: str, alias: str, n_items: int) -> None:
    client = connect(load_settings(opensearch_url=url, opensearch_retries=0)).client
    third, refused, rounds = n_items // 3, 0, 0
    while rounds < min(MAX_ROUNDS, third // 2):
        if select.select([sys.stdin], [], [], 0)[0]:
            break
        i = rounds
        lines = []
        for k in range(NEW_PER_ROUND):
            lines += [json.dumps({"index": {"_index": alias, "_id": f"w{i}-{k}"}}),
                      json.dumps({"id": f"w{i}-{k}", "title": f"Written {i} {k} Lamp", "description": "new"})]
        body = "\n".join(lines) + "\n"

        def bulk() -> None:
            answer = client.bulk(body=body)
            if answer.get("errors"):
                status = next(v["status"] for item in answer["items"] for v in item.values() if v.get("error"))
                raise _refusal(status)

        refused += _retrying(bulk)
        refused += _retrying(lambda: client.index(index=alias, id=item_id(i), body={
            "id": item_id(i), "title": f"Renamed {i} Chair", "description": "renamed"}))
        refused += _retrying(lambda: client.update(index=alias, id=item_id(third + i),
                                                   body={"doc": {"description": f"updated {i}"}}))
        refused += _retrying(lambda: client.delete(index=alias, id=item_id(third - 1 - i)))
        rounds += 1
        print(f"ok {rounds}", flush=True)
    print(f"idle {rounds}", flush=True)
    sys.stdin.readline()  # out of disjoint ranges: idle until asked, so the test's `stop` finds it running
    print(f"done {rounds} refused {refused}", flush=True)


def _refusal(status: int) -> Exception:
    """A bulk item's refusal as the client's own error, so `_retrying` treats both alike."""
    from opensearchpy.exceptions import TransportError

    error = TransportError(status, "bulk item refused", {})
    return error


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
