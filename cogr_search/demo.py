"""The main job on the embedded default, end to end, as one resumable command.

`cogr-search demo` is what a newcomer runs first (README: `make demo`). It uses only
what ships with the project: the local OpenSearch node, the CPU model and the sample
catalog, and walks the path a search team takes with its own data:

1. a real OpenSearch node (or `COGR_OPENSEARCH_URL`), an index behind an alias;
2. ingest the catalog;
3. Phase 1 of CoGR on the CPU model (base keywords, query targets, SFT of both sides,
   round-0 keyword files), sized to finish in minutes on two cores;
4. sync the round's item keywords into a new index version behind the alias;
5. evaluate plain BM25 and CoGR keywords on the held-out queries, side by side, and
   write a Markdown report with a plot;
6. show one expanded query and the items it retrieves.

Every step is resumable: the run directory's manifest skips finished training steps,
ingest and sync converge when repeated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cogr_search.data import choose_split, load_dataset, sample_catalog_path
from cogr_search.settings import Settings

Echo = Callable[[str], None]


@dataclass(frozen=True)
class DemoOptions:
    """The knobs of the demo; the defaults finish in minutes on a 2-core CPU."""

    index: str = "cogr-demo"
    run: str = "demo"
    runs_dir: Path | None = None
    data: Path | None = None
    val_fraction: float = 0.25
    seed: int = 0
    sft_steps: int = 40
    sft_batch_size: int = 8
    learning_rate: float = 5e-4
    gen_batch_size: int = 32
    max_new_tokens: int = 64
    max_items: int | None = None
    max_queries: int | None = None


@dataclass(frozen=True)
class DemoResult:
    url: str
    run: Path
    index: str
    reports: list[dict]
    report_path: Path
    example: dict


def _cluster(settings: Settings, echo: Echo):
    from cogr_search.opensearch import local_node
    from cogr_search.opensearch.client import connect

    if settings.opensearch_url:
        return connect(settings)
    info = local_node.start(settings.local_node_home, port=settings.local_port, heap=settings.local_heap)
    echo(f"OpenSearch: {info.url} (local node, home {settings.local_node_home})")
    return connect(settings, url=info.url)


def _phase1(options: DemoOptions, data: Path, echo: Echo):
    from cogr_search.generators.model_cache import ensure_default_model
    from cogr_search.training.config import GenerationConfig, Phase1Config, SFTConfig
    from cogr_search.training.phase1 import run_phase1
    from cogr_search.training.run_dir import RunDir

    config = Phase1Config(
        data=str(data.resolve()),
        model=str(ensure_default_model().resolve()),
        val_fraction=options.val_fraction,
        seed=options.seed,
        max_items=options.max_items,
        max_queries=options.max_queries,
        generation=GenerationConfig(batch_size=options.gen_batch_size, max_new_tokens=options.max_new_tokens),
        sft=SFTConfig(
            learning_rate=options.learning_rate,
            max_steps=options.sft_steps,
            batch_size=options.sft_batch_size,
            max_length=192,
            save_steps=max(10, options.sft_steps // 2),
        ),
    )
    run = RunDir.create(options.run, options.runs_dir)
    run_phase1(config, run, echo=echo)
    return run


def run_demo(settings: Settings, options: DemoOptions, echo: Echo) -> DemoResult:
    """Run (or resume) every step of the demo; returns what the command prints."""
    from cogr_search.evaluation.cogr import evaluate_cogr
    from cogr_search.evaluation.report import write_report
    from cogr_search.evaluation.methods import evaluate_bm25
    from cogr_search.keyword_files import read_keyword_file
    from cogr_search.opensearch.ingest import ingest_items
    from cogr_search.opensearch.sync import SyncConfig, sync_keywords

    data = options.data or sample_catalog_path()
    dataset = load_dataset(data)
    cluster = _cluster(settings, echo)

    report = ingest_items(cluster, options.index, dataset.items.values(), total=len(dataset.items), progress=False)
    echo(f"ingest: {report.documents_in_index} items in {options.index} -> {report.index}")

    run = _phase1(options, data, echo)
    round_ = run.latest_round()
    # a capped demo (--max-items) writes keywords for part of the catalog: the rest keep their titles
    synced = sync_keywords(
        cluster, options.index, read_keyword_file(run.item_keywords_path(round_)), round_, run.model_tag(round_),
        SyncConfig(missing="title-only"), progress=False,
    )
    echo(f"sync: {options.index} -> {synced.index} ({synced.with_keywords} items with keywords)")

    split = choose_split(dataset, "val", options.val_fraction, options.seed)
    bm25 = evaluate_bm25(cluster, options.index, split)
    cogr = evaluate_cogr(cluster, options.index, split, run.query_keywords_path(round_))
    reports = [bm25, cogr]
    report_path = run.root / "report.md"
    write_report(reports, report_path, run.root / "report.png", title="cogr-search demo: BM25 vs CoGR keywords")
    example = _example(cluster, options.index, split.evaluate, read_keyword_file(run.query_keywords_path(round_)))
    return DemoResult(cluster.url, run.root, options.index, reports, report_path, example)


def _example(cluster, alias: str, dataset, query_keywords: dict[str, list[str]]) -> dict:
    """A held-out query that retrieves something: its keywords and the top items."""
    from cogr_search.keywords import representation
    from cogr_search.opensearch.query import keyword_query

    relevant = dataset.relevant()
    example: dict = {}
    for qid in sorted(dataset.queries, key=lambda q: (not query_keywords.get(q), q)):
        text = dataset.queries[qid].text
        rep = representation(query_keywords.get(qid, []), text)
        body = {"query": keyword_query(rep), "size": 5, "_source": ["title", "cogr_keywords"]}
        hits = cluster.call(cluster.client.search, index=alias, body=body)["hits"]
        example = {
            "query": text,
            "keywords": rep,
            "retrieved": hits["total"]["value"],
            "hits": [
                {
                    "id": h["_id"],
                    "title": h["_source"]["title"],
                    "relevant": h["_id"] in relevant.get(qid, set()),
                    "matched": [k for k in h["_source"].get("cogr_keywords", []) if k in rep],
                }
                for h in hits["hits"]
            ],
        }
        if example["hits"]:
            break
    return example
