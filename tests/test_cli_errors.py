"""Bad input through the real CLI: one line on stderr, no traceback, non-zero exit, and
neither the index nor the run directory changed.

Each case runs `python -m cogr_search.cli ...` as its own process (what a user runs)
against the session's real node, with a synced alias and a run directory in place.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cogr_search.data import load_dataset, sample_catalog_path
from cogr_search.runs.keyword_files import write_keyword_file
from cogr_search.cluster.client import Cluster
from cogr_search.cluster.indices import alias_target
from cogr_search.cluster.ingest import ingest_items
from cogr_search.cluster.sync import sync_keywords
from cogr_search.runs.run_dir import RunDir
from tests.conftest import REPO_ROOT, free_port

pytestmark = pytest.mark.opensearch


@pytest.fixture(scope="module")
def cluster(opensearch_cluster):  # noqa: ANN001, ANN201
    """OpenSearch only: the bad-input matrix is about the CLI, checked once, on the default engine."""
    return opensearch_cluster

SAMPLE = str(sample_catalog_path())


def _files(tmp: Path) -> dict[str, Path]:
    """The bad inputs of the matrix, written once."""
    beir = {"queries.jsonl": '{"_id": "q1", "text": "oak"}\n', "qrels.tsv": "query-id\tcorpus-id\tscore\nq1\ta\t1\n"}
    layouts = {
        "malformed": {**beir, "corpus.jsonl": '{"_id": "a", "title": "oak"}\n{"_id": "b", "title": \n'},
        "no_title": {**beir, "corpus.jsonl": '{"_id": "a"}\n'},
        "latin1": {**beir, "corpus.jsonl": b'{"_id": "a", "title": "caf\xe9"}\n'},
        "unknown_layout": {"readme.txt": "hello\n"},
        "elsewhere": {"queries.jsonl": '{"_id": "q1", "text": "oak"}\n{"_id": "q2", "text": "lamp"}\n',
                      "qrels.tsv": "query-id\tcorpus-id\tscore\nq1\tzz-1\t1\nq2\tzz-2\t1\n",
                      "corpus.jsonl": '{"_id": "zz-1", "title": "oak"}\n{"_id": "zz-2", "title": "lamp"}\n'},
    }
    out: dict[str, Path] = {}
    for name, files in layouts.items():
        folder = tmp / name
        folder.mkdir()
        for file, content in files.items():
            (folder / file).write_bytes(content if isinstance(content, bytes) else content.encode())
        out[name] = folder
    no_threshold = tmp / "no_threshold"
    no_threshold.mkdir()
    for file in ("corpus.jsonl", "queries.jsonl", "qrels.tsv"):
        (no_threshold / file).write_bytes((sample_catalog_path() / file).read_bytes())
    out["no_threshold"] = no_threshold
    singles = {
        "bad.jsonl": b'{"id": "1", "keywords": ["oak"]}\n{"id": \n',
        "nokw.jsonl": b'{"id": "1"}\n',
        "latin1.jsonl": b'{"id": "1", "keywords": ["caf\xe9"]}\n',
        "empty.jsonl": b"",
    }
    for file, content in singles.items():
        (tmp / file).write_bytes(content)
        out[file] = tmp / file
    return out


def _cases(alias: str, files: dict[str, Path], runs: Path, dead_url: str) -> list[tuple[str, list[str], str]]:
    eval_cogr = ["eval", "--data", SAMPLE, "--index", alias, "--method", "cogr"]
    return [
        ("malformed JSONL (catalog)", ["ingest", str(files["malformed"]), "--index", alias], "corpus.jsonl:2: invalid JSON"),
        ("malformed JSONL (keywords)", ["sync", "--index", alias, "--item-keywords", str(files["bad.jsonl"])], "bad.jsonl:2: malformed JSON"),
        ("missing field (catalog)", ["ingest", str(files["no_title"]), "--index", alias], "corpus.jsonl:1: item 'a' has neither 'title' nor 'text'"),
        ("missing field (keywords)", ["sync", "--index", alias, "--item-keywords", str(files["nokw.jsonl"])], "nokw.jsonl:1: missing field 'keywords'"),
        ("non-UTF-8 (catalog)", ["ingest", str(files["latin1"]), "--index", alias], "corpus.jsonl:1: not valid UTF-8"),
        ("non-UTF-8 (keywords)", [*eval_cogr, "--query-keywords", str(files["latin1.jsonl"])], "latin1.jsonl: not UTF-8"),
        ("empty file (catalog)", ["ingest", str(files["empty.jsonl"]), "--index", alias], "empty.jsonl: no items found"),
        ("empty file (keywords)", [*eval_cogr, "--query-keywords", str(files["empty.jsonl"])], "empty.jsonl: no keyword rows"),
        ("unknown dataset layout", ["ingest", str(files["unknown_layout"]), "--index", alias], "unknown_layout: not a dataset"),
        ("no relevance threshold", ["eval", "--data", str(files["no_threshold"]), "--index", alias, "--method", "bm25"],
         "no relevance threshold: its label scores are 0 ("),
        ("no judged item in the index", ["eval", "--data", str(files["elsewhere"]), "--index", alias, "--method", "bm25",
                                         "--split", "all", "--cutoff", "10", "--relevance-threshold", "1"],
         f"index {alias!r} holds none of the 2 items judged relevant"),
        ("missing alias (eval)", ["eval", "--data", SAMPLE, "--index", "no-such-alias", "--method", "bm25"], "index 'no-such-alias' does not exist"),
        ("alias typo (eval)", ["eval", "--data", SAMPLE, "--index", alias + "x", "--method", "bm25"],
         f"did you mean {alias!r}? (the closest existing alias)"),
        ("URL without a scheme", ["ingest", SAMPLE, "--index", alias, "--cluster-url", "localhost:9200"],
         "COGR_CLUSTER_URL (or --cluster-url) 'localhost:9200' is not an http:// or https:// URL: use http://localhost:9200"),
        ("OpenSearch 400", ["eval", "--data", SAMPLE, "--index", alias, "--method", "bm25", "--fields", "title^x"],
         f"search on {alias} failed: OpenSearch refused the request (HTTP 400"),
        ("unreachable URL", ["ingest", SAMPLE, "--index", alias, "--opensearch-url", dead_url], f"cannot reach the cluster at {dead_url}"),
        ("run without split.json", [*eval_cogr, "--run", "half-run", "--runs-dir", str(runs)], "split.json: its split step has not run yet"),
        ("missing run", ["sync", "--index", alias, "--run", "no-such-run", "--runs-dir", str(runs)], "run 'no-such-run' not found"),
        ("bad setting", ["eval", "--data", SAMPLE, "--index", alias, "--method", "bm25", "--env", "COGR_OPENSEARCH_RETRIES=many"],
         "setting 'cluster_retries' (flag, COGR_CLUSTER_RETRIES or COGR_OPENSEARCH_RETRIES)"),
    ]


def _tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(str(path.relative_to(root)).encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _index_state(cluster: Cluster, alias: str) -> tuple:
    target = alias_target(cluster, alias)
    cluster.client.indices.refresh(index=alias)
    docs = cluster.client.search(index=alias, body={"size": 1000, "sort": ["id"], "_source": ["cogr_keywords", "title"]})
    names = sorted(cluster.client.indices.get(index=f"{alias}--r*"))
    return target, names, json.dumps([(h["_id"], h["_source"]) for h in docs["hits"]["hits"]], sort_keys=True)


def _with_env(args: list[str], env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """A case's `--env KEY=VALUE` (not a CLI flag) moved into its process environment."""
    case_env = dict(env)
    if "--env" in args:
        at = args.index("--env")
        key, value = args[at + 1].split("=", 1)
        case_env[key] = value
        args = args[:at] + args[at + 2 :]
    return args, case_env


def _problem(name: str, args: list[str], env: dict[str, str], expected: str) -> str | None:
    """What is wrong with how the CLI failed on this case, or None."""
    done = subprocess.run([sys.executable, "-m", "cogr_search.cli", *args], capture_output=True, text=True, env=env, timeout=120)
    lines = done.stderr.strip().splitlines()
    problem = None
    if done.returncode == 0:
        problem = "exit status 0"
    elif "Traceback" in done.stderr:
        problem = "traceback"
    elif len(lines) != 1 or not lines[0].startswith("Error: "):
        problem = f"not one error line: {lines}"
    elif expected not in lines[0]:
        problem = f"message {lines[0]!r} lacks {expected!r}"
    return f"{name}: {problem}" if problem else None


@pytest.mark.slow
def test_bad_input_matrix_one_line_no_traceback_nothing_changed(
    cluster: Cluster, opensearch_url: str, index_name: str, tmp_path: Path
) -> None:
    dataset = load_dataset(sample_catalog_path())
    ingest_items(cluster, index_name, dataset.items.values(), progress=False)
    sync_keywords(cluster, index_name, {iid: [item.title.split()[0]] for iid, item in dataset.items.items()}, 1, "m", progress=False)
    runs = tmp_path / "runs"
    run = RunDir.create("half-run", runs)
    write_keyword_file(run.root / "notes.jsonl", [("1", ["oak"])])
    files = _files(tmp_path)
    before = (_index_state(cluster, index_name), _tree_digest(runs))
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "COGR_OPENSEARCH_URL": opensearch_url, "COGR_OPENSEARCH_RETRIES": "1",
           "COGR_HOME": str(tmp_path / "home")}
    env.pop("COGR_DEBUG", None)
    cases = [(name, *_with_env(args, env), expected)
             for name, args, expected in _cases(index_name, files, runs, f"http://127.0.0.1:{free_port()}")]
    # The cases share nothing but read-only inputs: run them side by side (each is a Python start-up).
    with ThreadPoolExecutor(max_workers=4) as pool:
        problems = list(pool.map(lambda case: _problem(*case), cases))
    failures = [problem for problem in problems if problem]
    assert not failures, "\n".join(failures)
    assert (_index_state(cluster, index_name), _tree_digest(runs)) == before


@pytest.mark.slow
def test_cluster_mistakes_are_one_line_naming_the_url_and_send_nothing_but_the_probe(tmp_path: Path,
                                                                                      tiny_model: Path) -> None:
    """A URL that is not a search engine, the expansion service's port, TLS and plain HTTP
    mixed up, missing or wrong credentials before and after the engine is known: each one
    line naming the URL, exit 1, and no request but `GET /` reaches the server."""
    from tests.loopback_servers import OPENSEARCH_ROOT, UNAUTHORIZED, Answer, LoopbackServer, tls_context
    from tests.serve_support import ServiceProcess, make_base_run

    env = {k: v for k, v in os.environ.items() if not k.startswith(("COGR_CLUSTER_", "COGR_OPENSEARCH_", "COGR_ENGINE"))}
    env.update({"PYTHONPATH": str(REPO_ROOT), "COGR_CLUSTER_RETRIES": "1", "COGR_HOME": str(tmp_path / "home")})
    env.pop("COGR_DEBUG", None)
    wrong = {"COGR_CLUSTER_USER": "admin", "COGR_CLUSTER_PASSWORD": "wrong"}
    html = Answer(200, "text/html", b"<!DOCTYPE HTML>\n<html><body>Directory listing</body></html>")
    secured = Answer.json(401, UNAUTHORIZED, **{"WWW-Authenticate": 'Basic realm="OpenSearch Security"'})
    with LoopbackServer(html) as web, LoopbackServer(Answer(200, "text/plain", b"hello")) as text, \
            LoopbackServer(Answer.json(200, {"status": "ok", "name": "some-api"})) as api, \
            LoopbackServer(secured) as cluster, LoopbackServer(Answer.json(200, OPENSEARCH_ROOT),
                                                               tls=tls_context(tmp_path / "tls")) as tls_node, \
            ServiceProcess(make_base_run(tmp_path / "runs", model=tiny_model)) as service:
        plain_to_tls, tls_to_plain = tls_node.url.replace("https:", "http:"), web.url.replace("http:", "https:")
        cases = [
            ("HTML", web.url, {}, f"the cluster at {web.url} is not OpenSearch or Elasticsearch: GET / answered "
                                  "HTTP 200 text/html"),
            ("non-JSON body", text.url, {}, f"the cluster at {text.url} is not OpenSearch or Elasticsearch: GET / "
                                            "answered HTTP 200 text/plain ('hello')"),
            ("JSON without version", api.url, {}, 'answered HTTP 200 JSON without a "version" object'),
            ("expansion service", service.url, {}, f"{service.url} is the cogr-search expansion service, not a cluster"),
            ("plain HTTP to a TLS port", plain_to_tls, {}, f"the cluster at {plain_to_tls} speaks TLS, not plain HTTP: "
                                                           f"use {tls_node.url}"),
            ("HTTPS to a plain port", tls_to_plain, {}, f"the cluster at {tls_to_plain} does not speak TLS: use {web.url}"),
            ("no credentials", cluster.url, {}, f"the cluster at {cluster.url} requires credentials (HTTP 401)"),
            ("wrong password, engine unknown", cluster.url, wrong,
             f"the cluster at {cluster.url} refused the credentials of user 'admin' (HTTP 401)"),
            ("wrong password, engine known", cluster.url, {**wrong, "COGR_ENGINE": "opensearch"},
             f"OpenSearch at {cluster.url} refused the credentials of user 'admin' (HTTP 401)"),
        ]
        runs_before = _tree_digest(tmp_path / "runs")
        with ThreadPoolExecutor(max_workers=4) as pool:
            problems = list(pool.map(lambda case: _problem(
                case[0], ["ingest", SAMPLE, "--index", "mistake", "--cluster-url", case[1]], {**env, **case[2]}, case[3]),
                cases))
        assert not [problem for problem in problems if problem], "\n".join(p for p in problems if p)
        # one probe per case (the engine-known case's first call, `info`, is a GET / too), no write
        assert [len(server.requests) for server in (web, text, api, cluster)] == [1, 1, 1, 3]
        assert all(request == ("GET", "/") for server in (web, text, api, cluster) for request in server.requests)
        assert tls_node.requests == []  # the plain request never got through the handshake
    assert _tree_digest(tmp_path / "runs") == runs_before
    assert not (tmp_path / "home").exists() or not any((tmp_path / "home").rglob("*.json"))
