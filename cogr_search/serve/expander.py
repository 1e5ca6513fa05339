"""Where a query's (or an item's) keywords come from: a run's students (fast,
non-autoregressive, `generators/students`), its LLM generators, stored keyword files, or
a remote expansion service. All answer the same thing, the service's contract
(`serve/app.py`): one normalized keyword set per input, truncated to `k_max`, without
the input text itself. `open_expander` picks a run's students when its round has them.

The LLM expander loads torch only when constructed, and the students never do, so apps
that use students or a remote service import no ML stack.
"""

from __future__ import annotations

import json
import os
import ssl
import threading
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from cogr_search.errors import CogrError
from cogr_search.runs.query_context import ContextSource
from cogr_search.cluster.documents import ItemLike
from cogr_search.generators.backend import preset
from cogr_search.runs.run_dir import RunDir
from cogr_search.generators.run_models import open_generator
from cogr_search.generators.students.distill import has_students, open_students
from cogr_search.generators.students.model import item_text
from concurrent.futures import ThreadPoolExecutor


class Expander(Protocol):
    """Turns texts (queries) or items into keyword sets, in input order.

    `k_max` is the run's (its serving spec's): sets are cut to it, and whoever builds a
    query or a document from them cuts the same way."""

    run: str
    round: int
    model: str
    k_max: int
    kind: str  # "llm", "student", "stored" or "service": which expander answered

    def expand_queries(self, texts: Sequence[str]) -> list[list[str]]: ...

    def expand_items(self, items: Sequence[ItemLike]) -> list[list[str]]: ...

    def close(self) -> None: ...


class RunExpander:
    """A run's query and item generators of one round, loaded in this process.

    `sides` says which generators to load (a query-only app need not hold the item
    model in memory). Calls are serialized by a lock: one model on shared cores runs
    fastest one batch at a time, and the backends are not re-entrant.
    """

    def __init__(
        self,
        run: str | Path,
        round_: int | None = None,
        *,
        runs_dir: Path | None = None,
        sides: Sequence[str] = ("query", "item"),
        backend: str = "auto",
        sampling: str = "eval",
        seed: int | None = 0,
        max_new_tokens: int | None = None,
        batch_size: int = 16,
        context: ContextSource | None = None,
    ) -> None:

        run_dir = RunDir.open(run, runs_dir)
        self.spec = run_dir.serving_spec(round_)
        self.round, self.run, self.model, self.k_max = self.spec.round, self.spec.run, self.spec.item_model, self.spec.k_max
        generation = run_dir.config().generation
        # the run's own generation budget unless the caller sets one
        self.params = preset(sampling, seed=seed, max_new_tokens=max_new_tokens or generation.max_new_tokens)
        self.batch_size = batch_size
        dtype = generation.dtype
        self._generators = {
            side: open_generator(run_dir, side, self.round, backend=backend, dtype=dtype, context=context)[0]
            for side in sides
        }
        self._lock = threading.Lock()
        # the engine that generates (`transformers` or `vllm`: `auto` resolved), for the output to name
        self.backend = next(iter(self._generators.values())).backend.name if self._generators else None

    kind = "llm"

    def _generate(self, side: str, values: Sequence[object]) -> list[list[str]]:
        generator = self._generators.get(side)
        if generator is None:
            raise CogrError(f"run {self.run!r}: the {side} generator is not loaded (sides={sorted(self._generators)})")
        with self._lock:
            parsed = generator.generate(values, self.params, batch_size=self.batch_size)
        return [p.keywords[: self.k_max] for p in parsed]

    def expand_queries(self, texts: Sequence[str]) -> list[list[str]]:
        return self._generate("query", texts)

    def expand_items(self, items: Sequence[ItemLike]) -> list[list[str]]:
        return self._generate("item", items)

    def close(self) -> None:
        for generator in self._generators.values():
            generator.close()
        self._generators.clear()


class StoredExpander:
    """Keywords generated beforehand (a run's query keyword file), looked up by text:
    for queries known in advance, such as a labelled set, no model is loaded. A text
    without stored keywords gets none, so it matches with its own text only."""

    def __init__(self, keywords_by_text: dict[str, list[str]], *, run: str, round_: int, model: str, k_max: int) -> None:
        self.keywords_by_text = keywords_by_text
        self.run, self.round, self.model, self.k_max = run, round_, model, k_max

    kind = "stored"

    def expand_queries(self, texts: Sequence[str]) -> list[list[str]]:
        return [list(self.keywords_by_text.get(text, []))[: self.k_max] for text in texts]

    def expand_items(self, items: Sequence[ItemLike]) -> list[list[str]]:
        raise CogrError("stored query keywords cannot expand items")

    def close(self) -> None:
        """Nothing is held."""


class ServiceExpander:
    """A running `cogr-search serve`, reached over HTTP(S) with the standard library.

    `token` goes out as `Authorization: Bearer` on every call; `ca_certs` is the CA that
    signed an https service's certificate (unset: the system's CAs)."""

    def __init__(self, url: str, timeout_s: float = 60.0, *, token: str | None = None,
                 ca_certs: Path | None = None) -> None:
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self._headers = {"Content-Type": "application/json"}
        if token is not None:
            self._headers["Authorization"] = f"Bearer {token}"
        self._ca_certs = ca_certs
        self._context = service_tls(ca_certs) if self.url.startswith("https://") else None
        health = self._call("GET", "/health")
        self.run = str(health["run"])
        self.round = int(health["round"])
        self.model = str(health["model"])
        self.k_max = int(health["k_max"])
        self.kind = str(health.get("expander", "service"))

    def _call(self, method: str, path: str, payload: dict | None = None) -> dict:
        data = None if payload is None else json.dumps(payload).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=self._headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s, context=self._context) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as err:
            raise CogrError(f"expansion service {self.url}{path}: HTTP {err.code}: {_error_line(err)}") from None
        except (urllib.error.URLError, TimeoutError, OSError) as err:
            reason = getattr(err, "reason", err)
            if isinstance(reason, ssl.SSLCertVerificationError):
                raise CogrError(untrusted_service(self.url, reason, self._ca_certs)) from None
            raise CogrError(f"expansion service {self.url} unreachable: {reason}") from None

    def expand_queries(self, texts: Sequence[str]) -> list[list[str]]:
        return self._call("POST", "/v1/expand/query", {"texts": list(texts)})["keywords"]

    def expand_items(self, items: Sequence[ItemLike]) -> list[list[str]]:
        payload = [{"id": i.id, "title": i.title, "description": i.description or ""} for i in items]
        return self._call("POST", "/v1/expand/item", {"items": payload})["keywords"]

    def close(self) -> None:
        """Nothing is held between calls."""


class StudentExpander:
    """A round's students (`generators/students`): a keyword set in about a millisecond
    on one CPU thread, with no torch and no LLM in the process.

    `model` is the item student's provenance tag (`<run>+r<round>+student-<digest>`), so
    documents enriched by a student are told apart from the LLM's (`cogr_model`).
    Predictions are pure functions of the loaded files: no lock is needed."""

    kind = "student"

    def __init__(self, run: str | Path, round_: int | None = None, *, runs_dir: Path | None = None,
                 sides: Sequence[str] = ("query", "item"), threads: int = 0) -> None:

        run_dir = RunDir.open(run, runs_dir)
        self.spec = run_dir.serving_spec(round_)
        self.run, self.round, self.k_max = self.spec.run, self.spec.round, self.spec.k_max
        self.students = open_students(run_dir, self.round, tuple(sides))
        self.model = self.students.tag("item" if "item" in self.students.sides else "query")
        self.batch_size = 1024
        self.threads = threads or os.cpu_count() or 1

    def _side(self, side: str):  # noqa: ANN202 - SideStudent
        student = self.students.sides.get(side)
        if student is None:
            raise CogrError(f"run {self.run!r}: the {side} student is not loaded (sides={sorted(self.students.sides)})")
        return student

    def expand_queries(self, texts: Sequence[str]) -> list[list[str]]:
        student = self._side("query")
        return [student.keywords(text)[: self.k_max] for text in texts]

    def expand_items(self, items: Sequence[ItemLike]) -> list[list[str]]:
        """Item sets in input order; a large batch (a catalog) is split over the cores:
        the tree walk releases the GIL, so two threads overlap it with featurizing."""
        student = self._side("item")

        def run(chunk: Sequence[ItemLike]) -> list[list[str]]:
            return [student.keywords(item_text(i.title, i.description))[: self.k_max] for i in chunk]

        workers = min(self.threads, max(1, len(items) // PARALLEL_ITEMS))
        if workers <= 1:
            return run(items)

        size = -(-len(items) // workers)
        with ThreadPoolExecutor(workers) as pool:
            parts = pool.map(run, [items[n : n + size] for n in range(0, len(items), size)])
        return [keywords for part in parts for keywords in part]

    def close(self) -> None:
        """Nothing to release: the students are freed with this object."""


PARALLEL_ITEMS = 256
"""Items per thread below which a batch runs on the calling thread alone."""
EXPANDERS = ("auto", "student", "llm")


def open_expander(run: str | Path, round_: int | None = None, *, expander: str = "auto",
                  runs_dir: Path | None = None, sides: Sequence[str] = ("query", "item"),
                  **llm_options: object) -> Expander:
    """The run's expander for `round_`: its students when the round has them (`auto`) or
    when asked (`student`, refused without them), else the LLM generators (`llm`, which
    needs the `train` extra). `llm_options` go to `RunExpander` only."""
    run_dir, chosen, students = check_expander(run, round_, expander, runs_dir)
    if students:
        return StudentExpander(run_dir.root, chosen, sides=sides)
    return RunExpander(run, round_, runs_dir=runs_dir, sides=sides, **llm_options)  # type: ignore[arg-type]


def check_expander(run: str | Path, round_: int | None, expander: str = "auto",
                   runs_dir: Path | None = None) -> tuple[RunDir, int, bool]:
    """The run, its round and whether its students answer, without loading a model: what a
    command checks before it writes anything that a missing run or round would strand."""

    if expander not in EXPANDERS:
        raise CogrError(f"--expander {expander!r}: expected one of {', '.join(EXPANDERS)}")
    run_dir = RunDir.open(run, runs_dir)
    chosen = run_dir.require_round(round_)
    return run_dir, chosen, expander == "student" or (expander == "auto" and has_students(run_dir, chosen))


def service_tls(ca_certs: Path | None) -> ssl.SSLContext:
    """A verifying client context for an https service: its CA when given, else the system's."""
    if ca_certs is None:
        return ssl.create_default_context()
    try:
        return ssl.create_default_context(cafile=str(ca_certs))
    except (OSError, ssl.SSLError) as err:
        raise CogrError(f"service CA COGR_SERVICE_CA_CERTS={ca_certs}: {getattr(err, 'strerror', None) or err}") from None


def untrusted_service(url: str, err: ssl.SSLCertVerificationError, ca_certs: Path | None) -> str:
    """The line for an https service whose certificate did not verify: with no CA given, or
    with a CA in COGR_SERVICE_CA_CERTS that is not the one that signed it."""
    reason = err.verify_message or "not trusted"
    if ca_certs is None:
        return (f"expansion service {url} presents a certificate this machine does not trust ({reason}): set "
                "COGR_SERVICE_CA_CERTS to the CA file that signed it")
    return (f"expansion service {url} presents a certificate that the CA in COGR_SERVICE_CA_CERTS={ca_certs} did "
            f"not verify ({reason}): point COGR_SERVICE_CA_CERTS at the CA file that signed the service's certificate")


def _error_line(err: urllib.error.HTTPError) -> str:
    try:
        return str(json.loads(err.read()).get("error", err.reason))
    except (ValueError, AttributeError):
        return str(err.reason)
