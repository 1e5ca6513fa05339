"""The main job on the embedded default, end to end, as one resumable command.

`cogr-search demo` is what a newcomer runs first (README: `make demo`). It uses only
what ships with the project: the local OpenSearch node, the CPU model and the sample
catalog, and walks the path a search team takes with its own data:

1. a real OpenSearch node (or `COGR_OPENSEARCH_URL`), an index behind an alias;
2. ingest the catalog;
3. Phase 1 of CoGR on the CPU model (base keywords, query targets, SFT of both sides,
   round-0 keyword files), and sync of round 0 into a new index version;
4. Phase 2: one co-evolving RL round (query-side GRPO, then item-side GRPO against the
   shadow index), whose item keywords are synced into the next index version;
5. evaluate plain BM25 and CoGR keywords after SFT and after RL on the held-out
   queries, side by side in OpenSearch, and write a Markdown report with a plot;
6. show one expanded query and the items it retrieves.

Everything is sized to finish within 15 minutes on two CPU cores (set-up excluded):
short SFT and GRPO phases, a small rollout budget. The steps are the real ones.

Every step is resumable: the run directory's manifest skips finished training steps,
ingest and sync converge when repeated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cogr_search.data import load_dataset, sample_catalog_path
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
    item_keywords: int = 8
    query_top_n: int = 10
    sft_steps: int = 20
    sft_batch_size: int = 8
    learning_rate: float = 5e-4
    train_layers: int = 8
    gen_batch_size: int = 32
    max_new_tokens: int = 64
    max_items: int | None = None
    max_queries: int | None = None
    rl_rounds: int = 1
    query_rl_steps: int = 12
    item_rl_steps: int = 12
    # LoRA adapters at 10x full fine-tuning's rate: as good as the top 8 blocks at 2e-5 on
    # held-out F1, and the one run with a large gain (docs/training.md, third session)
    rl_lora: bool = True
    rl_learning_rate: float = 2e-4
    rl_generations: int = 4
    rl_prompts_per_step: int = 2
    rl_completion_tokens: int = 40
    rl_train_layers: int = 8  # with full fine-tuning (rl_lora False) only
    # rollouts sampled like evaluation, not the paper's T 1.0: a 135M model's T 1.0 lists
    # are mostly worse than its eval-sampled ones (docs/training.md, "What Phase 2 measured")
    rl_temperature: float = 0.7
    rl_top_p: float = 0.8
    rl_top_k: int = 20
    # off by default only for time: bm25:5 raised SFT F1 from 0.20 to 0.29 on the sample but
    # took the demo to ~15 min (longer query prompts in SFT and GRPO); `--query-context bm25:5`
    query_context: str | None = None


@dataclass(frozen=True)
class DemoResult:
    url: str
    run: Path
    index: str
    reports: list[dict]
    report_path: Path
    example: dict
    phases: list[dict]
    hybrid: dict

    def as_json(self) -> dict:
        """`demo --json`: BM25, the final CoGR round, and every phase's shadow metrics."""
        bm25, *cogr = self.reports
        return {
            "bm25": bm25,
            "cogr": cogr[-1],
            "cogr_sft": cogr[0],
            "hybrid": self.hybrid,
            "phases": self.phases,
            "example": self.example,
            "run": str(self.run),
            "index": self.index,
            "opensearch": self.url,
        }


def _cluster(settings: Settings, echo: Echo):
    from cogr_search import localnode as local_node
    from cogr_search.cluster.client import connect

    if settings.opensearch_url:
        return connect(settings)
    info = local_node.start(settings.local_node_home, port=settings.local_port, heap=settings.local_heap)
    echo(f"OpenSearch: {info.url} (local node, home {settings.local_node_home})")
    return connect(settings, url=info.url)


def _phase1(options: DemoOptions, data: Path, cluster, echo: Echo):
    from cogr_search.generators.model_cache import ensure_default_model
    from cogr_search.cluster.context import run_context_source
    from cogr_search.runs.config import GenerationConfig, Phase1Config, SFTConfig
    from cogr_search.training.phase1 import run_phase1
    from cogr_search.runs.run_dir import RunDir

    config = Phase1Config(
        data=str(data.resolve()),
        model=str(ensure_default_model().resolve()),
        val_fraction=options.val_fraction,
        seed=options.seed,
        item_keywords=options.item_keywords,
        query_top_n=options.query_top_n,
        max_items=options.max_items,
        max_queries=options.max_queries,
        query_context=options.query_context,
        context_index=options.index if options.query_context else None,
        generation=GenerationConfig(batch_size=options.gen_batch_size, max_new_tokens=options.max_new_tokens),
        sft=SFTConfig(
            learning_rate=options.learning_rate,
            max_steps=options.sft_steps,
            batch_size=options.sft_batch_size,
            max_length=192,
            train_layers=options.train_layers,
            save_steps=max(10, options.sft_steps // 2),
        ),
    )
    run = RunDir.create(options.run, options.runs_dir)
    run_phase1(config, run, echo=echo, context_source=run_context_source(config, cluster, None))
    return run


def _phase2(options: DemoOptions, run, syncer, echo: Echo) -> list[dict]:
    from cogr_search.runs.config import GenerationConfig, GRPOSideConfig, Phase2Config
    from cogr_search.training.phase2 import run_phase2

    def side(steps: int) -> GRPOSideConfig:
        return GRPOSideConfig(
            learning_rate=options.rl_learning_rate, max_steps=steps, num_generations=options.rl_generations,
            prompts_per_step=options.rl_prompts_per_step, max_completion_length=options.rl_completion_tokens,
            train_layers=options.rl_train_layers, lora=options.rl_lora, save_steps=max(4, steps // 2),
            seed=options.seed,
            temperature=options.rl_temperature, top_p=options.rl_top_p, top_k=options.rl_top_k,
        )

    config = Phase2Config(
        rounds=options.rl_rounds,
        query=side(options.query_rl_steps),
        item=side(options.item_rl_steps),
        generation=GenerationConfig(batch_size=options.gen_batch_size, max_new_tokens=options.max_new_tokens),
    )
    return run_phase2(config, run, syncer=syncer, progress=False, echo=echo).phases


def run_demo(settings: Settings, options: DemoOptions, echo: Echo) -> DemoResult:
    """Run (or resume) every step of the demo; returns what the command prints."""
    from cogr_search.evaluation.cogr import evaluate_cogr
    from cogr_search.evaluation.methods import evaluate_bm25, evaluate_hybrid, split_of_run
    from cogr_search.evaluation.report import write_report
    from cogr_search.runs.keyword_files import read_keyword_file
    from cogr_search.cluster.indices import alias_target
    from cogr_search.cluster.ingest import ingest_items
    from cogr_search.cluster.sync import run_round_syncer

    data = options.data or sample_catalog_path()
    dataset = load_dataset(data)
    cluster = _cluster(settings, echo)

    report = ingest_items(cluster, options.index, dataset.items.values(), total=len(dataset.items), progress=False)
    echo(f"ingest: {report.documents_in_index} items in {options.index} -> {report.index}")

    run = _phase1(options, data, cluster, echo)
    # a capped demo (max_items) writes keywords for part of the catalog: the rest keep their titles
    syncer = run_round_syncer(cluster, options.index)
    echo(_sync_line(options.index, syncer(run, 0)))
    split = split_of_run(dataset, str(run.root))  # the queries Phase 1 held out, from split.json
    cogr_sft = evaluate_cogr(cluster, options.index, split, run.query_keywords_path(0))
    cogr_sft["method"] = "cogr-sft"

    phases = _phase2(options, run, syncer, echo) if options.rl_rounds > 0 else []
    round_ = run.latest_round()
    if round_ > 0 and not alias_target(cluster, options.index).startswith(f"{options.index}-r{round_}-"):
        # a resumed demo re-synced round 0 above for the SFT figures; put the last round back
        echo(_sync_line(options.index, syncer(round_, run.item_keywords_path(round_), run.model_tag(round_))))
    bm25 = evaluate_bm25(cluster, options.index, split)
    reports = [bm25, cogr_sft]
    if round_ > 0:
        cogr_rl = evaluate_cogr(cluster, options.index, split, run.query_keywords_path(round_))
        cogr_rl["method"] = f"cogr-rl{round_}"
        reports.append(cogr_rl)
    hybrid = evaluate_hybrid(cluster, options.index, split)  # the served round's keywords as document expansion
    report_path = run.root / "report.md"
    write_report([*reports, hybrid], report_path, run.root / "report.png", title="cogr-search demo: BM25 vs CoGR keywords")
    example = _example(cluster, options.index, split.evaluate, read_keyword_file(run.query_keywords_path(round_)))
    return DemoResult(cluster.url, run.root, options.index, reports, report_path, example, phases, hybrid)


def _sync_line(alias: str, synced: dict) -> str:
    if synced["unchanged"]:
        return f"sync: {alias} -> {synced['index']} already serves round {synced['round']}'s keywords"
    return (f"sync: {alias} -> {synced['index']} (round {synced['round']}: {synced['with_keywords']} items with "
            f"keywords, {synced['title_only']} title only)")


def _example(cluster, alias: str, dataset, query_keywords: dict[str, list[str]]) -> dict:
    """A held-out query that retrieves something: its keywords and the top items."""
    from cogr_search.keywords import representation
    from cogr_search.cluster.query import keyword_query

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
