"""Phase 1 of CoGR (paper section 2.2, Algorithm 1) as a sequence of resumable steps.

    split                        train / validation queries and the items in use
    round-0/query_context        with `query_context`: the top BM25 titles of every query
    round-0/base_item_keywords   the base model writes M keywords per item
    round-0/query_targets        top-N pooled keywords of each training query's relevant items
    round-0/sft_item             SFT of the item generator on (item, keywords)
    round-0/sft_query            SFT of the query generator on (query, target)
    round-0/item_keywords        the SFT item generator's keywords for every item (the index)
    round-0/query_keywords       the SFT query generator's keywords for every query
    round-0                      the round is complete (weights hashes for provenance)

Each step reads only what earlier steps wrote into the run directory, writes its output,
then is recorded in the manifest; a re-run skips recorded steps, and the two bulk
generation steps also resume inside the step (row by row).
"""

from __future__ import annotations

import functools
import random
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cogr_search.data import Dataset, load_dataset
from cogr_search.errors import CogrError, InputError
from cogr_search.generators.backend import INDEX, INIT, EVAL, SamplingParams
from cogr_search.generators.batch_generate import FirstBatch, generate_with_model, item_requests, query_requests
from cogr_search.generators.prompts import PromptSet, assistant_text, load_prompts
from cogr_search.runs.query_context import ContextSource, context_size, write_context_file
from cogr_search.runs.keyword_files import read_keyword_file, write_keyword_file
from cogr_search.runs.config import RESUMABLE_CHANGES, Phase1Config
from cogr_search.runs.steps import StepReport, check_resumed_config, run_steps
from cogr_search.runs.run_dir import RunDir, atomic_write_json, read_json, weights_digest
from cogr_search.ranks import Ranks, join
from cogr_search.training.sft_targets import query_targets
from cogr_search.training.sft import SFTExample, train_sft

STEPS = (
    "split",
    "round-0/query_context",
    "round-0/base_item_keywords",
    "round-0/query_targets",
    "round-0/sft_item",
    "round-0/sft_query",
    "round-0/item_keywords",
    "round-0/query_keywords",
    "round-0",
)

COLLECTIVE_STEPS = frozenset({
    "round-0/base_item_keywords", "round-0/sft_item", "round-0/sft_query", "round-0/item_keywords",
    "round-0/query_keywords",
})
"""Steps every rank takes part in under `accelerate launch` / `--processes N` (sharded
generation, data-parallel SFT); the others run on rank 0 alone."""

Phase1Report = StepReport


@dataclass
class _Context:
    config: Phase1Config
    run: RunDir
    prompts: PromptSet
    dataset: Dataset
    progress: bool
    echo: Callable[[str], None]
    context_source: ContextSource | None = None
    ranks: Ranks = field(default_factory=Ranks)

    def split(self) -> dict:
        return read_json(self.run.split_path)

    def items(self) -> list:
        return [self.dataset.items[i] for i in self.split()["items"]]

    def queries(self, *parts: str) -> list:
        split = self.split()
        return [self.dataset.queries[q] for part in parts for q in split[part]]

    def context(self) -> ContextSource | None:
        """The stored search results of the run's queries (None without query_context)."""
        return self.run.stored_context()


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run_phase1(
    config: Phase1Config,
    run: RunDir,
    progress: bool = True,
    echo: Callable[[str], None] = _stderr,
    context_source: ContextSource | None = None,
    dataset: Dataset | None = None,
) -> Phase1Report:
    """Run (or resume) Phase 1 in `run`; returns which steps ran and their details.

    `context_source` fetches search results (`opensearch.context.bm25_titles`); it is
    needed once, for the `round-0/query_context` step of runs with `query_context`.
    `dataset`: `config.data` as `check_phase1_inputs` loaded it (else loaded here, before
    anything is written)."""
    dataset = dataset or check_phase1_inputs(config)
    ranks = join()
    with ranks.main_only(run.lock()):
        prompts = _prepare(run, config) if ranks.is_main else None
        ranks.barrier()  # the other ranks read the run's own prompts once rank 0 wrote them
        prompts = prompts or load_prompts(run.prompts_path)
        ctx = _Context(config, run, prompts, dataset, progress and ranks.is_main, echo, context_source, ranks)
        steps = [(name, functools.partial(action, ctx)) for name, action in _ACTIONS.items()]
        return run_steps(run, steps, Phase1Report(run=run.root), echo, ranks=ranks,
                         collective=COLLECTIVE_STEPS.__contains__)


def check_phase1_inputs(config: Phase1Config) -> Dataset:
    """The data set, its split and the prompt set, checked before a run folder exists: a
    refused run leaves nothing behind to clean up."""
    dataset = load_dataset(Path(config.data), config.relevance_threshold)
    select_split(dataset, config)
    load_prompts(config.prompts)
    return dataset


def _prepare(run: RunDir, config: Phase1Config) -> PromptSet:
    """Write config.json and prompts.json on the first call; on later calls check that
    the run is continued with the same settings and return the run's own prompts."""
    if run.config_path.exists():
        # validated first: fields added since the run started count at their defaults
        old = run.config().to_json()
        new = config.to_json()
        if not new["prompts_version"]:  # "whatever the run has": only the stored one is known
            new["prompts_version"] = old.get("prompts_version", "")
        check_resumed_config(run.config_path, run, old, new, RESUMABLE_CHANGES, "Phase 1")
        if not run.prompts_path.exists():
            raise CogrError(f"{run.prompts_path}: missing; the run directory is damaged")
        return load_prompts(run.prompts_path)
    prompts = load_prompts(config.prompts)
    if config.prompts_version and config.prompts_version != prompts.version:
        raise InputError(f"prompt set {config.prompts!r} is version {prompts.version}, not {config.prompts_version}")
    config = config.model_copy(update={"prompts_version": prompts.version})
    prompts.save(run.prompts_path)
    run.write_config(config.to_json())
    return prompts


# -- steps ---------------------------------------------------------------------------


def _step_split(ctx: _Context) -> dict:
    split = select_split(ctx.dataset, ctx.config)
    atomic_write_json(ctx.run.split_path, split)
    return {key: len(value) for key, value in split.items() if isinstance(value, list)}


def select_split(dataset: Dataset, config: Phase1Config) -> dict:
    """Training / validation queries (the data package's seeded split, so eval's
    `--split val` scores the same queries) and the items in use, under the caps.

    With `max_items`, items relevant to the chosen queries come first, taken round-robin
    across queries (training ones first in each pass) so that every query keeps some
    relevant items; the rest of the budget is filled with other items (seeded), which act
    as distractors. The validation queries are in because this catalog is the run's whole
    world: picked for the training queries alone, a 2,000-item Crowdflower catalog held 5 of
    the 1,649 items relevant to its validation queries, so every held-out F1, BM25's and
    CoGR's alike, was capped near zero. Only catalog membership depends on them; no
    validation label reaches a reward or a training example.
    With `items_sample` (`--items N`), every item judged for a training query is in
    (relevant or not: the judged non-relevant ones are the hard negatives the rewards
    need), and the rest of the N are a seeded sample of the other items; that sample is
    for training only, as `sync --items all` then writes the item student's keywords for
    the rest of the catalog, where `eval` scores the held-out queries.
    """
    relevant = dataset.relevant()
    if config.val_fraction > 0 and len(dataset.queries) > 1:
        train, val = dataset.split(config.val_fraction, config.seed)
        val_ids = sorted(val.queries)
    else:
        train, val_ids = dataset, []
    rng = random.Random(config.seed)
    train_ids = [q for q in sorted(train.queries) if q in relevant]
    if not train_ids:
        raise InputError(f"{dataset.path}: no training query has a relevant item (check the relevance threshold)")
    if config.max_queries is not None:
        train_ids = _sample(train_ids, config.max_queries, rng)
        val_ids = _sample(val_ids, config.max_queries, rng)
    items = sorted(dataset.items)
    if config.max_items is not None and config.max_items < len(items):
        items = _items_for([*train_ids, *val_ids], relevant, items, config.max_items, rng)
    if config.items_sample is not None and config.items_sample < len(items):
        items = _sample_with_judged(dataset, train_ids, config.items_sample, rng)
    return {"train_queries": train_ids, "val_queries": val_ids, "items": items}


def _sample(ids: list[str], limit: int, rng: random.Random) -> list[str]:
    return ids if len(ids) <= limit else sorted(rng.sample(ids, limit))


def _sample_with_judged(dataset: Dataset, query_ids: Sequence[str], size: int, rng: random.Random) -> list[str]:
    judged = sorted({i for q in query_ids for i in dataset.labels.get(q, {}) if i in dataset.items})
    if len(judged) > size:
        raise InputError(f"--items {size}: the {len(query_ids)} training queries judge {len(judged)} items, "
                         f"which must all be in the sample; give --items {len(judged)} or more, or fewer queries "
                         "(--max-queries)")
    chosen = set(judged)
    rest = [i for i in sorted(dataset.items) if i not in chosen]
    return sorted(chosen | set(rng.sample(rest, size - len(judged))))


def _items_for(
    query_ids: Sequence[str], relevant: Mapping[str, set[str]], all_items: list[str], limit: int, rng: random.Random
) -> list[str]:
    chosen: dict[str, None] = {}
    lists = [sorted(relevant.get(q, ())) for q in query_ids]
    depth = 0
    while len(chosen) < limit and any(depth < len(lst) for lst in lists):
        for lst in lists:
            if depth < len(lst) and len(chosen) < limit:
                chosen.setdefault(lst[depth], None)
        depth += 1
    rest = [i for i in all_items if i not in chosen]
    rng.shuffle(rest)
    for item_id in rest[: limit - len(chosen)]:
        chosen.setdefault(item_id, None)
    return sorted(chosen)


def _sampling(ctx: _Context, base: SamplingParams) -> SamplingParams:
    gen = ctx.config.generation
    return base.with_(max_new_tokens=gen.max_new_tokens, seed=gen.seed)


def _generate(ctx: _Context, model: Path, requests: list, out: Path, params: SamplingParams,
              keep: int | None, desc: str, on_first_batch: FirstBatch | None = None) -> dict:
    gen = ctx.config.generation
    return generate_with_model(
        model, requests, out, params, backend=gen.backend, dtype=gen.dtype, batch_size=gen.batch_size,
        keep=keep, k_max=ctx.config.k_max, progress=ctx.progress, desc=desc, on_first_batch=on_first_batch,
        ranks=ctx.ranks,
    )


def _estimate(ctx: _Context, what: str) -> FirstBatch:
    """Says, after the first batch, how long the rest will take: the base keywords are the
    one step whose length grows with the catalog (2-4 items/s on 2 cores), and a user
    deciding between the whole catalog and `--items N` needs the figure before the wait.

    Time is taken to grow with prompt length (few-shot prompts and long descriptions make
    prefill the larger part), so a first batch of the longest prompts (the transformers
    backend sorts them first) does not inflate the estimate."""

    def tell(done: Sequence, seconds: float, left: Sequence) -> None:
        rest = seconds * _prompt_chars(left) / max(1, _prompt_chars(done))
        took = f"{rest:.0f} s" if rest < 90 else f"{rest / 60:.0f} min"
        sampled = ctx.config.items_sample is not None or ctx.config.max_items is not None
        hint = "; `train sft --items N` trains on a sample of the catalog" if rest > 600 and not sampled else ""
        ctx.echo(f"[{ctx.run.name}] {what}: first {len(done)} in {seconds:.1f} s; the other {len(left):,} "
                 f"will take about {took}{hint}")

    return tell


def _prompt_chars(requests: Sequence) -> int:
    return sum(len(str(m.get("content", ""))) for r in requests for m in r.conversation)


def _step_query_context(ctx: _Context) -> dict:
    k = context_size(ctx.config.query_context)
    if k is None:
        return {"query_context": None}
    if ctx.context_source is None:
        raise InputError(f"run {ctx.run.name!r} uses query_context {ctx.config.query_context}: "
                         "give the catalog index to fetch search results from (--context-index)")
    queries = ctx.queries("train_queries", "val_queries")
    titles = ctx.context_source([q.text for q in queries])
    rows = write_context_file(ctx.run.query_context_path, ((q.id, q.text, t) for q, t in zip(queries, titles)))
    return {"query_context": ctx.config.query_context, "index": ctx.config.context_index, "queries": rows,
            "without_results": sum(1 for t in titles if not t)}


def _step_base_item_keywords(ctx: _Context) -> dict:
    c = ctx.config
    requests = item_requests(ctx.prompts, ctx.items(), c.item_keywords, few_shot=c.few_shot_init)
    out = ctx.run.base_item_keywords_path
    info = _generate(ctx, Path(c.model), requests, out, _sampling(ctx, INIT), c.item_keywords, "base item keywords",
                     _estimate(ctx, "base item keywords"))
    if info["empty_rows"] == len(requests):
        raise CogrError(
            f"{out}: the base model produced no parsable keywords for any item; "
            "try another --model or prompt set"
        )
    return info


def _step_query_targets(ctx: _Context) -> dict:
    split = ctx.split()
    base = read_keyword_file(ctx.run.base_item_keywords_path)
    in_use = set(split["items"])
    relevant = ctx.dataset.relevant()
    pools = {q: relevant.get(q, set()) & in_use for q in split["train_queries"]}
    targets = query_targets(base, pools, ctx.config.query_top_n)
    write_keyword_file(ctx.run.query_targets_path, targets.items())
    return {
        "queries": len(pools),
        "with_target": len(targets),
        "without_target": len(pools) - len(targets),
        "mean_target_size": round(sum(map(len, targets.values())) / max(1, len(targets)), 2),
    }


def _sft(ctx: _Context, side: str, examples: list) -> dict:
    out = ctx.run.checkpoint_path(0, side)
    result = train_sft(Path(ctx.config.model), examples, out, ctx.config.sft, progress=ctx.progress, ranks=ctx.ranks,
                       log_path=ctx.run.train_log_path)
    return {**result.as_dict(), "weights_sha256": weights_digest(out)}


def _step_sft_item(ctx: _Context) -> dict:
    return _sft(ctx, "item", _sft_examples(ctx, "item"))


def _step_sft_query(ctx: _Context) -> dict:
    return _sft(ctx, "query", _sft_examples(ctx, "query"))


def _sft_examples(ctx: _Context, side: str) -> list:
    """One side's SFT examples: item prompts with the base model's keywords, or training
    query prompts with their pooled targets."""
    if side == "item":
        base = read_keyword_file(ctx.run.base_item_keywords_path)
        m = ctx.config.item_keywords
        return [
            SFTExample(ctx.prompts.item_messages(item.title, item.description, m), assistant_text(base[item.id]))
            for item in ctx.items()
            if base.get(item.id)
        ]
    targets = read_keyword_file(ctx.run.query_targets_path)
    queries = [q for q in ctx.queries("train_queries") if targets.get(q.id)]
    return [
        SFTExample(request.conversation, assistant_text(targets[query.id]))
        for query, request in zip(queries, query_requests(ctx.prompts, queries, ctx.config.query_top_n,
                                                          context=ctx.context()))
    ]


def sft_examples(run: RunDir, side: str) -> list:
    """The SFT examples Phase 1 of `run` trained its `side` generator on (its base keywords
    or query targets must exist): what `bench sft` times steps on."""
    config = run.config()
    dataset = load_dataset(Path(config.data), config.relevance_threshold)
    ctx = _Context(config, run, load_prompts(run.prompts_path), dataset, progress=False, echo=_stderr)
    return _sft_examples(ctx, side)


def _step_item_keywords(ctx: _Context) -> dict:
    requests = item_requests(ctx.prompts, ctx.items(), ctx.config.item_keywords)
    return _generate(ctx, ctx.run.checkpoint_path(0, "item"), requests, ctx.run.item_keywords_path(0),
                     _sampling(ctx, INDEX), None, "item keywords (round 0)")


def _step_query_keywords(ctx: _Context) -> dict:
    requests = query_requests(ctx.prompts, ctx.queries("train_queries", "val_queries"), ctx.config.query_top_n,
                              context=ctx.context())
    return _generate(ctx, ctx.run.checkpoint_path(0, "query"), requests, ctx.run.query_keywords_path(0),
                     _sampling(ctx, EVAL), None, "query keywords (round 0)")


def _step_round(ctx: _Context) -> dict:
    hashes = {side: (ctx.run.step_info(f"round-0/sft_{side}") or {}).get("weights_sha256") for side in ("query", "item")}
    return {"weights_sha256": hashes, "phase": "sft"}


_ACTIONS: dict[str, Callable[[_Context], dict]] = {
    "split": _step_split,
    "round-0/query_context": _step_query_context,
    "round-0/base_item_keywords": _step_base_item_keywords,
    "round-0/query_targets": _step_query_targets,
    "round-0/sft_item": _step_sft_item,
    "round-0/sft_query": _step_sft_query,
    "round-0/item_keywords": _step_item_keywords,
    "round-0/query_keywords": _step_query_keywords,
    "round-0": _step_round,
}
assert tuple(_ACTIONS) == STEPS
