"""`cogr-search bench ...`: measured speed, printed (or `--json`), never asserted in tests.

Each subcommand calls a function in `cogr_search.bench` and prints its result; the
figures and the command that produced them are recorded in benchmarks/.
"""

from __future__ import annotations

from pathlib import Path

import click

from cogr_search.cli.config_flags import ConfigFlags, config_flags, flag
from cogr_search.cli.options import emit_json, json_output, opensearch_url, runs_dir, settings_from
from cogr_search.progress import progress_wanted
from cogr_search.cluster.sync_config import SyncConfig
import contextlib
import sys
from cogr_search.bench import expand, generate, ingest, keyword_diversity, node, reward_scale, rewards, rl, search, sft, sync
from cogr_search import localnode
from cogr_search.bench.generate import parse_backends
from cogr_search.runs.config import GRPOSideConfig
from cogr_search.connect import connect


@click.group()
def bench() -> None:
    """Measure ingest, rewards, generation, sync, search and expander speed on this machine."""


port_option = click.option("--port", type=int, default=None, help="HTTP port of the throwaway node (default: a free one).")
heap_option = click.option("--heap", default="1g", show_default=True)
max_items_option = click.option("--max-items", type=int, default=None, help="Use only the first N items.")


@bench.command("ingest")
@click.option("--data", "data", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Catalog directory (BEIR or WANDS layout).")
@port_option
@heap_option
@max_items_option
@click.option("--cluster-url", "urls", multiple=True, metavar="URL",
              help="Measure on this existing cluster (OpenSearch or Elasticsearch) instead of a fresh local node; "
                   "repeat for a side-by-side run.")
@click.option("--enrich", "enrich", is_flag=False, flag_value="cogr-ingest", default=None, metavar="[PIPELINE]",
              help="Time raw _bulk with and without this ingest pipeline (default cogr-ingest: the one "
                   "`index create --pipelines --run RUN` installs) on --cluster-url, else the local node.")
@json_output
def ingest_bench(data: Path, port: int | None, heap: str, max_items: int | None, urls: tuple[str, ...],
                 enrich: str | None, as_json: bool) -> None:
    """Start a fresh local node (or use --cluster-url ones) and compare the bulk loop with raw _bulk on DATA's items."""
    result = ingest.run(data, settings_from(), port=port, heap=heap, max_items=max_items, urls=urls, enrich=enrich)
    _print(result, as_json)


@bench.command("node")
@click.option("--engine", type=click.Choice(["opensearch", "elasticsearch"]), default="opensearch", show_default=True)
@click.option("--version", "line", default=None, help="Engine line (opensearch: 2.19 or 3.x; elasticsearch: 8.17 or 9.x).")
@click.option("--nodes", type=click.IntRange(min=1, max=9), default=1, show_default=True,
              help="Start a cluster of this many nodes (stock OpenSearch only).")
@click.option("--repeat", type=click.IntRange(min=1), default=3, show_default=True)
@heap_option
@json_output
def node_bench(engine: str, line: str | None, nodes: int, repeat: int, heap: str, as_json: bool) -> None:
    """Start and stop a fresh local node (or cluster) REPEAT times: seconds to yellow, and to stopped."""

    launcher = localnode.engine_line(engine, line) if line else localnode.ENGINES[engine]
    localnode.ensure_built(engine=launcher)
    _print(node.start_times(launcher, nodes, repeat, heap), as_json)


@bench.command("sync")
@click.option("--data", "data", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Catalog directory (BEIR or WANDS layout).")
@port_option
@heap_option
@max_items_option
@config_flags(SyncConfig, [flag("--chunk-size", "chunk_size"), flag("--in-flight", "in_flight")], config_file=False)
@click.option("--copies", type=click.IntRange(min=1), default=1, show_default=True,
              help="Ingest the catalog N times (the same items under new ids), to see what grows with its size.")
@click.option("--write-rate", type=click.FloatRange(min=0), default=20.0, show_default=True,
              help="Writes a second through the alias during each sync (index, overwrite, delete in turn; 0: none).")
@click.option("--raw/--no-raw", default=True, show_default=True, help="Also time raw _bulk of the same documents.")
@click.option("--nodes", type=click.IntRange(min=1, max=9), default=1, show_default=True,
              help="On a fresh loopback cluster of this many nodes, every index (raw too) with one replica.")
@click.option("--warm-up-rounds", type=click.IntRange(min=0), default=4, show_default=True,
              help="Untimed rounds of both methods first (a sync and a raw load of up to 60,000 items each), "
                   "so that the fresh node's JIT warm-up is not counted; 0: measure it cold.")
@json_output
def sync_bench(data: Path, port: int | None, heap: str, max_items: int | None, config_flags: ConfigFlags, copies: int,
               write_rate: float, raw: bool, nodes: int, warm_up_rounds: int, as_json: bool) -> None:
    """Sync DATA's catalog on a fresh node while an app writes: sync_s, freeze_s, and raw _bulk for scale.

    Items the writer adds get their title keyword (--missing title-only)."""
    result = sync.run(data, settings_from(), port=port, heap=heap, max_items=max_items,
                      config=config_flags.build(missing="title-only"), n_copies=copies, write_rate=write_rate, raw=raw,
                      nodes=nodes, warm_up_rounds=warm_up_rounds)
    _print(result, as_json)


@bench.command("expand")
@click.option("--run", "run_name", required=True, help="A run whose round has students (`train distill`).")
@click.option("--round", "round_", type=int, default=None, help="Round (default: the latest complete round).")
@runs_dir
@click.option("--split", type=click.Choice(["val", "train"]), default="val", show_default=True,
              help="The run's queries to time and score (val: held out from training and from the students).")
@click.option("--repeats", type=click.IntRange(min=1), default=5, show_default=True,
              help="Times each query is expanded by the student for its latency percentiles.")
@click.option("--llm-samples", type=click.IntRange(min=0), default=5, show_default=True,
              help="Queries expanded once each by the LLM query generator (0: skip the LLM).")
@click.option("--data", "catalog", type=click.Path(exists=True, path_type=Path), default=None,
              help="The catalog the item student predicts for items/s [default: the run's data].")
@json_output
def expand_bench(run_name: str, round_: int | None, runs_dir: Path | None, split: str, repeats: int,
                 llm_samples: int, catalog: Path | None, as_json: bool) -> None:
    """Student speed (one query, one thread; whole catalog), the LLM's cold expansion on the
    same queries, and fidelity: held-out F1 with student / with teacher query keywords."""
    _print(expand.run(run_name, round_, runs_dir=runs_dir, split=split, repeats=repeats, llm_samples=llm_samples,
                      catalog=catalog, progress=progress_wanted(as_json)), as_json)


def _print(result: dict, as_json: bool) -> None:
    """One JSON object with --json, else one `key: value` line per figure."""
    if as_json:
        emit_json(result)
        return
    width = max(len(key) for key in result)
    for key, value in result.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for n, entry in enumerate(value, 1):  # one line per cluster of a side-by-side run
                click.echo(f"{f'{key}[{n}]':<{width}}  " + ", ".join(f"{k}={v}" for k, v in entry.items()))
            continue
        click.echo(f"{key:<{width}}  {value}")


@bench.command("rewards")
@click.option("--data", "data", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Catalog directory with queries and labels (BEIR or WANDS layout).")
@click.option("--group", type=click.IntRange(min=1), default=8, show_default=True, help="Candidates per GRPO group.")
@click.option("--groups", type=click.IntRange(min=1), default=2000, show_default=True,
              help="GRPO groups timed on each side.")
@click.option("--naive-samples", type=click.IntRange(min=1), default=3, show_default=True,
              help="Item rewards recomputed naively (rebuild + rerun all queries).")
@click.option("--passes", type=click.IntRange(min=1), default=3, show_default=True, help="Timed passes; the best counts.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--scale", is_flag=True,
              help="Sweep catalog sizes (copies of DATA): build time, RSS and reward rates per size.")
@click.option("--scale-items", default="55000,220000,1000000,4000000", show_default=True,
              help="With --scale: comma-separated item counts.")
@click.option("--vocabulary", type=click.Choice(["per-copy", "shared"]), default="per-copy", show_default=True,
              help="With --scale: copies get their own keywords (postings keep their length) or share them.")
@click.option("--max-rss-gib", type=click.FloatRange(min=0.1), default=8.0, show_default=True,
              help="With --scale: stop the sweep when the measuring process passes this resident memory.")
@json_output
def rewards_bench(data: Path, group: int, groups: int, naive_samples: int, passes: int, seed: int, scale: bool,
                  scale_items: str, vocabulary: str, max_rss_gib: float, as_json: bool) -> None:
    """Build the shadow index over DATA (n-gram keywords, no model) and time CoGR rewards."""
    if scale:
        result = reward_scale.run(data, sizes=_item_counts(scale_items), vocabulary=vocabulary, group=group,
                                  groups=groups, passes=passes, seed=seed, max_rss_gib=max_rss_gib)
        _print(result, as_json)
        if result["stopped"] and "RSS" not in result["stopped"]["reason"]:
            raise click.ClickException(f"--scale stopped at {result['stopped']['items']} items: "
                                       f"{result['stopped']['reason']}")
        return
    result = rewards.run(
        data, group=group, query_groups=groups, item_groups=groups, naive_samples=naive_samples, passes=passes, seed=seed
    )
    _print(result, as_json)


def _item_counts(text: str) -> list[int]:
    """`55000,220000` -> [55000, 220000]; a bad entry is a usage error naming it."""
    counts = []
    for part in text.split(","):
        try:
            count = int(part.strip().replace("_", ""))
        except ValueError:
            raise click.BadParameter(f"{part.strip()!r} is not an item count", param_hint="--scale-items") from None
        if count < 1:
            raise click.BadParameter(f"{count} is not a positive item count", param_hint="--scale-items")
        counts.append(count)
    return counts


@bench.command("diversity")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--threshold", type=click.FloatRange(-1, 1), default=0.9, show_default=True,
              help="Cosine above which two keywords of a set count as paraphrases.")
@json_output
def diversity_bench(files: tuple[Path, ...], threshold: float, as_json: bool) -> None:
    """Paraphrase share and Vendi diversity of keyword FILES, on the ids they all hold (MiniLM)."""
    _print(keyword_diversity.run(list(files), threshold), as_json)


@bench.command("generate")
@click.option("--model", default=None, help="Model folder (default: the converted SmolLM2-135M-Instruct).")
@click.option("--data", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Catalog whose items make the prompts (default: the sample catalog).")
@click.option("--backend", default="transformers", show_default=True,
              help="auto, transformers or vllm; a comma list (transformers,vllm) measures the engines side by side "
                   "on query and item prompts: completions/s per backend and side.")
@click.option("--dtype", default="auto", show_default=True, help="auto (float32 on CPU), float32, bfloat16.")
@click.option("--threads", type=int, default=None, help="torch CPU threads (default: COGR_TORCH_THREADS or torch's).")
@click.option("--max-new-tokens", type=int, default=48, show_default=True)
@click.option("--random-init", is_flag=True, help="Measure a randomly initialised model of the same shape.")
@click.option("--decoder", type=click.Choice(["own", "generate"]), default="own", show_default=True,
              help="transformers backend: own decode loop, or transformers' generate (the starting point).")
@click.option("--prefix-cache/--no-prefix-cache", default=True, show_default=True,
              help="transformers backend: prefill the prompts' shared head once.")
@click.option("--prompts", type=click.IntRange(min=1), default=32, show_default=True,
              help="With several backends: prompts per side.")
@click.option("--batch-size", type=click.IntRange(min=1), default=32, show_default=True,
              help="With several backends: prompts per batch (the keyword files' default).")
@click.option("--rounds", type=click.IntRange(min=1), default=2, show_default=True,
              help="With several backends: passes over the prompts, the engines taking turns.")
@json_output
def generate_bench(model: str | None, data: Path | None, backend: str, dtype: str, threads: int | None,
                   max_new_tokens: int, random_init: bool, decoder: str, prefix_cache: bool, prompts: int,
                   batch_size: int, rounds: int, as_json: bool) -> None:
    """Item-generator tokens/s and items/s at batch 1, 8 and 32; greedy vs sampled.

    With --backend transformers,vllm: each engine's completions/s on query and item prompts."""
    if "," in backend:
        result = generate.compare(model, data, settings_from(), backends=generate.parse_backends(backend), dtype=dtype,
                                  threads=threads, max_new_tokens=max_new_tokens, batch_size=batch_size,
                                  prompts=prompts, rounds=rounds, random_init=random_init, decoder=decoder,
                                  prefix_cache=prefix_cache)
        _print(result, as_json)
        return
    result = generate.run(model, data, settings_from(), backend=backend, dtype=dtype, threads=threads,
                          max_new_tokens=max_new_tokens, random_init=random_init, decoder=decoder,
                          prefix_cache=prefix_cache)
    _print(result, as_json)


@bench.command("rl")
@click.option("--run", "run_name", default="demo", show_default=True, help="A run with Phase 1 done (e.g. the demo's).")
@runs_dir
@click.option("--steps", type=click.IntRange(min=2), default=4, show_default=True, help="GRPO steps per side.")
@click.option("--num-generations", type=int, default=4, show_default=True)
@click.option("--prompts-per-step", type=int, default=2, show_default=True)
@click.option("--max-completion-length", type=int, default=48, show_default=True)
@click.option("--train-layers", type=int, default=0, show_default=True, help="Top decoder blocks trained (0: all).")
@click.option("--lora", is_flag=True, help="Train LoRA adapters (the demo's GRPO) instead of the top blocks.")
@click.option("--lora-layers", type=int, default=0, show_default=True,
              help="With --lora: adapters in the top N decoder blocks only (0: all).")
@click.option("--precision", type=click.Choice(["auto", "bf16", "fp32"]), default="auto", show_default=True,
              help="Training arithmetic (auto: bf16 autocast on GPUs and CPUs with native bf16).")
@click.option("--backend", default="auto", show_default=True,
              help="Rollout engine: auto, transformers or vllm; a comma list (transformers,vllm) runs each side "
                   "once per engine, back to back: one entry per backend and side.")
@click.option("--temperature", type=float, default=1.0, show_default=True, help="Rollout sampling temperature.")
@click.option("--top-p", type=float, default=1.0, show_default=True,
              help="Rollout nucleus cut (the demo preset: 0.8). Under a cut trl's vLLM correction is off, as in "
                   "`train rl`, and a step has one forward pass fewer.")
@click.option("--top-k", type=int, default=0, show_default=True, help="Rollout top-k cut (the demo preset: 20).")
@json_output
def rl_bench(run_name: str, runs_dir: Path | None, steps: int, num_generations: int, prompts_per_step: int,
             max_completion_length: int, train_layers: int, lora: bool, lora_layers: int, precision: str,
             backend: str, temperature: float, top_p: float, top_k: int, as_json: bool) -> None:
    """GRPO steps/s, completions/s and the rewards' share of step time, both sides."""


    backends = parse_backends(backend)

    config = GRPOSideConfig(
        learning_rate=1e-5, num_generations=num_generations, prompts_per_step=prompts_per_step,
        max_completion_length=max_completion_length, train_layers=train_layers, lora=lora,
        lora_layers=lora_layers, precision=precision, temperature=temperature, top_p=top_p, top_k=top_k,
    )
    with contextlib.redirect_stdout(sys.stderr):
        result = rl.run(run_name, runs_dir, steps, config, progress=progress_wanted(as_json), backends=backends)
    _print(result, as_json)


@bench.command("sft")
@click.option("--run", "run_name", default="demo", show_default=True,
              help="A run with Phase 1's SFT inputs (e.g. the demo's).")
@runs_dir
@click.option("--side", type=click.Choice(["item", "query"]), default="item", show_default=True)
@click.option("--steps", type=click.IntRange(min=2), default=5, show_default=True, help="SFT steps per pass.")
@click.option("--precision", "precisions", default="fp32,auto,fp32,auto", show_default=True,
              help="Passes, timed alternately: comma-separated auto, bf16 or fp32.")
@json_output
def sft_bench(run_name: str, runs_dir: Path | None, side: str, steps: int, precisions: str, as_json: bool) -> None:
    """SFT step seconds per precision pass, with the run's own examples and SFT settings."""


    chosen = [p.strip() for p in precisions.split(",") if p.strip()]
    unknown = sorted(set(chosen) - {"auto", "bf16", "fp32"})
    if not chosen or unknown:
        raise click.BadParameter(f"expected auto, bf16 or fp32, got {', '.join(unknown) or 'nothing'}",
                                 param_hint="--precision")
    with contextlib.redirect_stdout(sys.stderr):
        result = sft.run(run_name, runs_dir, side, steps, chosen, progress=progress_wanted(as_json))
    _print(result, as_json)


@bench.command("search")
@click.option("--index", "alias", required=True, help="Alias with synced (or enriched) keywords.")
@click.option("--run", "run_name", default=None, help="Run whose query generator the service serves "
              "(required unless --in-cluster).")
@click.option("--round", "round_", type=int, default=None, help="Round (default: the latest complete round).")
@runs_dir
@click.option("--data", type=click.Path(exists=True, path_type=Path), default=None,
              help="Queries to time (default: the run's dataset, else the sample catalog).")
@click.option("--max-queries", type=click.IntRange(min=1), default=200, show_default=True)
@click.option("--passes", type=click.IntRange(min=1), default=5, show_default=True, help="Timed passes over the queries.")
@click.option("--field", default="title", show_default=True, help="Field of the plain BM25 `match`.")
@click.option("--pipeline", default="cogr", show_default=True, help="Search pipeline to time, if installed.")
@click.option("--cold-samples", type=click.IntRange(min=1), default=5, show_default=True,
              help="Uncached expansions timed on the CPU model.")
@click.option("--clients", type=click.IntRange(min=1), default=16, show_default=True)
@click.option("--requests", type=click.IntRange(min=100), default=10_000, show_default=True,
              help="Cached service requests at --clients.")
@click.option("--in-cluster", is_flag=True,
              help="Time plain BM25 against --pipeline when it runs the run's students inside the cluster "
                   "(`index create --pipelines --run RUN`): no service, no --run.")
@opensearch_url
@json_output
def search_bench(alias: str, run_name: str | None, round_: int | None, runs_dir: Path | None, data: Path | None,
                 max_queries: int, passes: int, field: str, pipeline: str, cold_samples: int, clients: int,
                 requests: int, in_cluster: bool, opensearch_url: str | None, as_json: bool) -> None:
    """BM25 vs expanded vs pipeline latencies on --index, and the service's cold and cached paths."""

    cluster = connect(settings_from(opensearch_url=opensearch_url))
    result = search.run(cluster, alias, run_name, round_, runs_dir=runs_dir, data=data, max_queries=max_queries,
                        passes=passes, field=field, pipeline=pipeline, cold_samples=cold_samples, clients=clients,
                        requests=requests, in_cluster=in_cluster)
    _print(result, as_json)
