"""The query prompt's search-results context (`--query-context bm25:K`, paper Table 4):
the prompt text, the stored/live sources, the titles OpenSearch ranks first, and a tiny
Phase 1 with it through the CLI (real model, real node), then `expand` on a new query.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogr_search.cli.main import cli
from cogr_search.data import load_dataset, sample_catalog_path
from cogr_search.errors import CogrError, InputError
from cogr_search.generators.prompts import load_prompts, parse_prompts
from cogr_search.runs.query_context import StoredContext, context_size, read_context_file
from cogr_search.cluster.client import Cluster
from cogr_search.workflows.context import bm25_titles
from cogr_search.cluster.eval import bm25_ranker
from cogr_search.cluster.ingest import ingest_items
from cogr_search.runs.run_dir import RunDir


def test_context_spec() -> None:
    assert context_size("bm25:5") == 5
    assert context_size(None) is None and context_size("none") is None
    for bad in ("bm25", "bm25:0", "bm25:21", "dense:5", "bm25:x"):
        with pytest.raises(InputError, match="expected bm25:K"):
            context_size(bad)


def test_query_prompt_shows_the_titles_only_when_given() -> None:
    prompts = load_prompts()
    plain = prompts.query_messages("oak table", 10)
    assert plain[-1]["content"] == "Query: oak table"
    with_context = prompts.query_messages("oak table", 10, context=["Havelock  Oak Table", "Oak chair"])
    assert with_context[-1]["content"] == "Query: oak table\nTop search results:\n- Havelock Oak Table\n- Oak chair"
    assert with_context[0] == plain[0]  # the same system turn
    nothing = prompts.query_messages("oak table", 10, context=[])
    assert nothing[-1]["content"].endswith("- (no results)")


def test_templates_without_a_context_prompt_refuse_context() -> None:
    doc = json.loads(json.dumps(load_prompts().source))
    del doc["query"]["user_with_context"]
    prompts = parse_prompts(doc, "p.json")
    with pytest.raises(InputError, match="user_with_context is missing"):
        prompts.query_messages("oak table", 10, context=["x"])
    doc["item"]["user_with_context"] = "{title} {context}"
    with pytest.raises(InputError, match="p.json: item.user_with_context: only the query side"):
        parse_prompts(doc, "p.json")
    doc = json.loads(json.dumps(load_prompts().source))
    doc["query"]["user_with_context"] = "{query} {titles}"
    with pytest.raises(InputError, match="query.user_with_context: bad placeholder"):
        parse_prompts(doc, "p.json")


def test_stored_context_uses_the_fallback_for_new_queries_only() -> None:
    asked: list[list[str]] = []

    def live(texts):  # noqa: ANN001, ANN202 - a ContextSource
        asked.append(list(texts))
        return [[f"live {t}"] for t in texts]

    stored = {"q1": {"text": "oak  table", "titles": ["Oak table"]}}
    source = StoredContext(stored, live)
    assert source(["oak table", "new query", "new query"]) == [["Oak table"], ["live new query"], ["live new query"]]
    assert asked == [["new query"]]  # one batch, stored queries not fetched
    with pytest.raises(CogrError, match="run 'r': query 'new query' has no stored search results"):
        StoredContext(stored, None, where="run 'r'")(["new query"])


@pytest.mark.opensearch
def test_titles_are_those_bm25_ranks_first(cluster: Cluster, index_name: str) -> None:
    dataset = load_dataset(sample_catalog_path())
    ingest_items(cluster, index_name, dataset.items.values(), progress=False)
    texts = {q.id: q.text for q in list(dataset.queries.values())[:12]}
    ranked = bm25_ranker(cluster, index_name, depth=4)(texts)
    titles = bm25_titles(cluster, index_name, k=4, batch_size=5)(list(texts.values()))
    assert titles == [[dataset.items[i].title for i in ranked[q]] for q in texts]
    assert all(len(t) == 4 for t in titles)


@pytest.mark.slow
@pytest.mark.opensearch
@pytest.mark.model
def test_phase1_with_search_results_in_the_query_prompt(
    opensearch_url: str, opensearch_cluster: Cluster, index_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    tiny_model: Path,
) -> None:
    cluster = opensearch_cluster  # one engine is enough for the model path (the titles test runs on both)
    monkeypatch.setenv("COGR_TORCH_THREADS", "1")
    dataset = load_dataset(sample_catalog_path())
    ingest_items(cluster, index_name, dataset.items.values(), progress=False)
    runs = tmp_path / "runs"
    args = [
        "train", "sft", "--data", str(sample_catalog_path()), "--run", "ctx", "--runs-dir", str(runs),
        "--max-items", "8", "--max-queries", "6", "--max-steps", "3", "--batch-size", "4",
        "--learning-rate", "5e-4", "--max-length", "192", "--gen-batch-size", "8", "--max-new-tokens", "32",
        "--query-context", "bm25:3", "--opensearch-url", opensearch_url, "--quiet",
        "--model", str(tiny_model),  # the prompts are checked, not what the model writes
    ]
    refused = CliRunner().invoke(cli, args)
    assert refused.exit_code != 0 and "--query-context needs --context-index" in refused.output

    done = CliRunner().invoke(cli, [*args, "--context-index", index_name])
    assert done.exit_code == 0, done.output
    run = RunDir.open("ctx", runs)
    split = json.loads(run.split_path.read_text())
    stored = read_context_file(run.query_context_path)
    assert sorted(stored) == sorted(split["train_queries"] + split["val_queries"])
    some = split["val_queries"][0]
    assert stored[some]["titles"] == bm25_titles(cluster, index_name, 3)([dataset.queries[some].text])[0]
    assert run.step_info("round-0/query_context")["queries"] == len(stored)

    # a query the run never stored gets its titles from the index the run recorded
    new = CliRunner().invoke(cli, ["expand", "walnut bookshelf with doors", "--run", "ctx", "--runs-dir", str(runs),
                                   "--opensearch-url", opensearch_url, "--json"])
    assert new.exit_code == 0, new.output
    assert json.loads(new.stdout)["query"] == "walnut bookshelf with doors"

    # the generator's prompts: stored titles for the run's queries, live ones for others
    from cogr_search.workflows.context import run_context_source
    from cogr_search.generators.run_models import open_generator

    generator, _ = open_generator(run, "query", context=run_context_source(run.config(), cluster, None))
    try:
        new_prompt, val_prompt = (c[-1]["content"] for c in generator.conversations(
            ["walnut bookshelf with doors", dataset.queries[some].text]))
    finally:
        generator.close()
    live = bm25_titles(cluster, index_name, 3)(["walnut bookshelf with doors"])[0]
    assert new_prompt == "Query: walnut bookshelf with doors\nTop search results:\n" + "\n".join(f"- {t}" for t in live)
    assert all(f"- {' '.join(t.split())}" in val_prompt for t in stored[some]["titles"])
