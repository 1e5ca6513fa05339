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

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from pathlib import Path

from cogr_search.data import load_dataset, sample_catalog_path
from cogr_search.settings import Settings
import time
from cogr_search.runs.config import Phase1Config, Phase2Config
from cogr_search.runs.presets import PHASE1_PRESETS, PHASE2_PRESETS, preset, with_changes
from dataclasses import asdict
from cogr_search import localnode as local_node
from cogr_search.connect import connect
from cogr_search.workflows.context import run_context_source
from cogr_search.generators.model_cache import ensure_default_model
from cogr_search.progress import progress_wanted
from cogr_search.runs.run_dir import RunDir
from cogr_search.training.phase1 import run_phase1
from cogr_search.ranks import current, join, rank0_only
from cogr_search.training.phase2 import run_phase2
from cogr_search.evaluation.cogr import evaluate_cogr
from cogr_search.evaluation.methods import evaluate_bm25, evaluate_cogr_run, evaluate_hybrid, split_of_run
from cogr_search.evaluation.report import write_report
from cogr_search.cluster.indices import alias_target
from cogr_search.cluster.ingest import ingest_items
from cogr_search.workflows.round_sync import run_round_syncer
from cogr_search.evaluation.significance import paired_test
from cogr_search.generators.students.distill import distill_run, has_students
from cogr_search.serve.expander import RunExpander, StoredExpander, StudentExpander
from cogr_search.runs.keyword_files import read_keyword_file
from cogr_search.serve.client import CogrSearch

if TYPE_CHECKING:
    from cogr_search.evaluation.significance import PairedTest

Echo = Callable[[str], None]


@dataclass(frozen=True)
class DemoOptions:
    """What the demo needs besides its training configs, which are the `demo` preset
    (`runs/presets.py`) with these few changes laid over it (None: the preset's)."""

    index: str = "cogr-demo"
    run: str = "demo"
    runs_dir: Path | None = None
    data: Path | None = None
    sft_steps: int | None = None
    rl_rounds: int | None = None
    rl_steps: int | None = None
    # off by default only for time: bm25:5 raised SFT F1 from 0.20 to 0.29 on the sample but
    # took the demo to ~15 min (longer query prompts in SFT and GRPO); `--query-context bm25:5`
    query_context: str | None = None

    # dotted config fields changed on top of the preset (tests shrink the demo with them)
    phase1_changes: Mapping[str, object] = field(default_factory=dict)
    phase2_changes: Mapping[str, object] = field(default_factory=dict)

    def phase1(self, data: Path, model: Path) -> "Phase1Config":
        changes: dict[str, object] = {"data": str(data.resolve()), "model": str(model.resolve())}
        if self.sft_steps is not None:
            changes |= {"sft.max_steps": self.sft_steps, "sft.save_steps": max(10, self.sft_steps // 2)}
        if self.query_context:
            changes |= {"query_context": self.query_context, "context_index": self.index}
        doc = with_changes(preset(PHASE1_PRESETS, "demo", {}), {**changes, **self.phase1_changes})
        return Phase1Config.model_validate(doc)

    def phase2(self) -> "Phase2Config":
        changes: dict[str, object] = {}
        if self.rl_rounds is not None:
            changes["rounds"] = self.rl_rounds
        if self.rl_steps is not None:
            for side in ("query", "item"):
                changes |= {f"{side}.max_steps": self.rl_steps, f"{side}.save_steps": max(4, self.rl_steps // 2)}
        doc = with_changes(preset(PHASE2_PRESETS, "demo", Phase2Config().to_json()), {**changes, **self.phase2_changes})
        return Phase2Config.model_validate(doc)


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
    student: dict | None = None  # the round's students: their eval row, cold expansions, an example
    # each row's F1 against BM25's, query by query (method -> test): is a gap more than luck of 40 queries?
    tests: Mapping[str, "PairedTest"] = field(default_factory=dict)

    def as_json(self) -> dict:
        """`demo --json`: BM25, the final CoGR round, every phase's shadow metrics, and
        each row's paired test against BM25."""
        bm25, *cogr = self.reports
        return {
            "bm25": bm25,
            "cogr": cogr[-1],
            "cogr_sft": cogr[0],
            "hybrid": self.hybrid,
            "student": self.student,
            "tests_against_bm25": {method: {**asdict(test), "how": test.how()} for method, test in self.tests.items()},
            "phases": self.phases,
            "example": self.example,
            "run": str(self.run),
            "index": self.index,
            "opensearch": self.url,
        }


def _cluster(settings: Settings, echo: Echo):
    if settings.cluster_url:
        return connect(settings)
    info = local_node.start(settings.local_node_home, port=settings.local_port, heap=settings.local_heap)
    echo(f"OpenSearch: {info.url} (local node, home {settings.local_node_home})")
    return connect(settings, url=info.url)


def _phase1(options: DemoOptions, data: Path, cluster, echo: Echo):
    config = options.phase1(data, ensure_default_model())
    run = RunDir.create(options.run, options.runs_dir)
    current().barrier()  # the other training ranks wait here while rank 0 starts the node and ingests
    run_phase1(config, run, progress=progress_wanted(), echo=echo,
               context_source=run_context_source(config, cluster, None))
    return run


def _phase2(options: DemoOptions, run, syncer, echo: Echo) -> list[dict]:
    return run_phase2(options.phase2(), run, syncer=syncer, progress=False, echo=echo).phases


def _train_on_other_rank(options: DemoOptions, data: Path) -> None:
    """What a rank other than 0 does in the demo (`--processes N`): its share of Phase 1
    and Phase 2; the node, the sync, the evaluation and the report are rank 0's."""

    config = options.phase1(data, ensure_default_model())
    current().barrier()  # rank 0 has made the run folder
    run = RunDir.open(options.run, options.runs_dir)
    run_phase1(config, run, progress=False)
    if options.phase2().rounds > 0:
        run_phase2(options.phase2(), run, syncer=rank0_only, progress=False)


def run_demo(settings: Settings, options: DemoOptions, echo: Echo) -> DemoResult | None:
    """Run (or resume) every step of the demo; returns what the command prints (None on a
    training rank other than 0, under `--processes N` or `accelerate launch`)."""


    data = options.data or sample_catalog_path()
    if not join().is_main:
        _train_on_other_rank(options, data)
        return None
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

    phases = _phase2(options, run, syncer, echo) if options.phase2().rounds > 0 else []
    round_ = run.latest_round()
    if round_ > 0 and not alias_target(cluster, options.index).startswith(f"{options.index}--r{round_}-"):
        # a resumed demo re-synced round 0 above for the SFT figures; put the last round back
        echo(_sync_line(options.index, syncer(run, round_)))
    bm25 = evaluate_bm25(cluster, options.index, split)
    reports = [bm25, cogr_sft]
    if round_ > 0:
        cogr_rl = evaluate_cogr(cluster, options.index, split, run.query_keywords_path(round_))
        cogr_rl["method"] = f"cogr-rl{round_}"
        reports.append(cogr_rl)
    hybrid = evaluate_hybrid(cluster, options.index, split)  # the served round's keywords as document expansion
    report_path = run.root / "report.md"
    write_report([*reports, hybrid], report_path, run.root / "report.png", title="cogr-search demo: BM25 vs CoGR keywords")
    example = _example(cluster, options.index, split.evaluate, run, round_)
    student = _student(cluster, options.index, split, run, round_, example["query"], settings, echo)
    tests = against_baseline(bm25, [*reports[1:], student["report"], hybrid])
    return DemoResult(cluster.url, run.root, options.index, reports, report_path, example, phases, hybrid, student, tests)


def against_baseline(baseline: dict, rows: list[dict], metric: str = "F1") -> dict[str, "PairedTest"]:
    """Each row's `metric` against the baseline's on the same queries (method -> test),
    with the report's defaults (10,000 sign flips, seed 0), so both say the same."""
    tests = {}
    for row in rows:
        test = paired_test(baseline, row, metric)
        if test is not None:
            tests[str(row["method"])] = test
    return tests


def _student(cluster, alias: str, split, run, round_: int, query: str, settings: Settings, echo: Echo) -> dict:
    """Distil the served round into students (seconds; kept on a resumed demo), score the
    query student on the held-out queries, and time one cold expansion of `query` by the
    student and by the LLM query generator, each freshly loaded."""

    if not has_students(run, round_):
        distill_run(run, round_, echo=echo)
    row = evaluate_cogr_run(cluster, alias, split, str(run.root), settings.home / "cache" / "eval-keywords", round_,
                            expander="student")
    row["method"] = "student"
    timings = {}
    for name, make in (("student", lambda: StudentExpander(run.root, round_, sides=("query",))),
                       ("llm", lambda: RunExpander(run.root, round_, sides=("query",), batch_size=1))):
        expander = make()
        try:
            started = time.perf_counter()
            keywords = expander.expand_queries([query])[0]
            timings[name] = {"cold_ms": round((time.perf_counter() - started) * 1000.0, 3), "keywords": keywords}
        finally:
            expander.close()
    echo(f"students: {run.round_dir(round_) / 'students'} (query {query!r}: student "
         f"{timings['student']['cold_ms']:.2f} ms, LLM {timings['llm']['cold_ms']:.0f} ms)")
    return {"report": row, "query": query, **timings}


def _sync_line(alias: str, synced: dict) -> str:
    if synced["unchanged"]:
        return f"sync: {alias} -> {synced['index']} already serves round {synced['round']}'s keywords"
    return (f"sync: {alias} -> {synced['index']} (round {synced['round']}: {synced['with_keywords']} items with "
            f"keywords, {synced['title_only']} title only)")


def _example(cluster, alias: str, dataset, run, round_: int) -> dict:
    """A held-out query that retrieves something, searched the way an app would
    (`CogrSearch`), with the round's stored query keywords: its keywords and top items."""

    spec = run.serving_spec(round_)
    stored = read_keyword_file(run.query_keywords_path(round_))
    by_text = {q.text: stored.get(qid, []) for qid, q in dataset.queries.items()}
    search = CogrSearch(cluster.client, StoredExpander(by_text, run=spec.run, round_=round_, model=spec.query_model,
                                                       k_max=spec.k_max), index=alias)
    relevant = dataset.relevant()
    example: dict = {}
    for qid in sorted(dataset.queries, key=lambda q: (not stored.get(q), q)):
        result = search.search(dataset.queries[qid].text, size=5, source=["title"], explain=True)
        example = {
            "query": result.text,
            "keywords": result.representation,
            "retrieved": result.total,
            "hits": [
                {"id": h.id, "title": (h.source or {}).get("title", ""), "relevant": h.id in relevant.get(qid, set()),
                 "matched": h.matched or []}
                for h in result.hits
            ],
        }
        if example["hits"]:
            break
    return example
