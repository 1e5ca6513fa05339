"""Phase 2 of CoGR (paper section 2.3, Figure 2): co-evolving GRPO rounds.

Round r (1..R) starts from round r-1's generators and keyword files:

    round-<r>/rl_query        query-side GRPO; reward: F_beta against the frozen item
                              index built from round r-1's item keywords
    round-<r>/query_keywords  the new query generator rewrites every training and
                              validation query (evaluation sampling)
    round-<r>/rl_item         item-side GRPO; reward: counterfactual change in total
                              training-query F_beta against the frozen query view of
                              round r's query keywords (never a rebuild of the index)
    round-<r>/item_keywords   the new item generator rewrites the catalog in use
                              (index sampling)
    round-<r>                 the round is complete (weights hashes for provenance)
    round-<r>/sync            optional: the round's item keywords into a new index version

Validation queries never reach a reward: the query view holds training queries only.
After each side's phase the shadow index's validation and training P/R/F1 are recorded
with the phase's mean reward, its share of zero-variance groups and its keyword space;
`metrics.json` is rewritten from the manifest, so it can never disagree with it.
Resuming works as in Phase 1: recorded steps are skipped, a GRPO phase continues from
its newest trainer checkpoint, bulk generation continues row by row.
"""

from __future__ import annotations

import functools
import random
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cogr_search.data import Dataset, load_dataset
from cogr_search.errors import CogrError
from cogr_search.generators.backend import EVAL, INDEX, SamplingParams
from cogr_search.generators.batch_generate import generate_with_model, item_requests, query_requests
from cogr_search.generators.prompts import PromptSet, load_prompts
from cogr_search.runs.keyword_files import read_keyword_file
from cogr_search.metrics import f1
from cogr_search.shadow.index import ItemIndex
from cogr_search.shadow.query_view import QueryView
from cogr_search.runs.config import (
    RL_RESUMABLE_CHANGES,
    GRPOSideConfig,
    Phase1Config,
    Phase2Config,
)
from cogr_search.runs.steps import Step, StepReport, check_resumed_config, run_steps
from cogr_search.training.keyword_space import keyword_space
from cogr_search.training.learning_check import no_learning_note
from cogr_search.training.rewards import ItemMarginalReward, QueryF1Reward
from cogr_search.ranks import Ranks, join
from cogr_search.training.screening import screen_rows
from cogr_search.runs.run_dir import RunDir, atomic_write_json, read_json, weights_digest
from cogr_search.training.grpo import train_grpo

Syncer = Callable[[RunDir, int], dict]
"""Publishes a finished round (`workflows.round_sync.run_round_syncer`): (run, round) -> what the sync did."""

RL_CONFIG_FILE = "rl_config.json"
METRICS_FORMAT = 1


ROUND_ACTIONS = ("rl_query", "query_keywords", "query_metrics", "rl_item", "item_keywords", "item_metrics", "round")
"""One round's steps. The metrics are steps of their own, after the keyword files they
measure: a crash while measuring never regenerates keywords."""


def step_name(round_: int, action: str) -> str:
    """`round-<r>/<action>`, and plain `round-<r>` for the step that completes the round."""
    return f"round-{round_}" if action == "round" else f"round-{round_}/{action}"


@dataclass
class Phase2Report(StepReport):
    phases: list[dict] = field(default_factory=list)


@dataclass
class _Context:
    config: Phase2Config
    phase1: Phase1Config
    run: RunDir
    prompts: PromptSet
    dataset: Dataset
    split: dict
    progress: bool
    echo: Callable[[str], None]
    syncer: Syncer | None
    callbacks: Sequence[object] = ()
    ranks: Ranks = field(default_factory=Ranks)

    @property
    def k_max(self) -> int:
        return self.phase1.k_max

    def titles(self) -> dict[str, str]:
        """Every catalog item's title: items outside the run's subset match by title alone,
        exactly as their documents do in OpenSearch."""
        return {item_id: item.title for item_id, item in self.dataset.items.items()}

    def texts(self, part: str) -> dict[str, str]:
        return {q: self.dataset.queries[q].text for q in self.split[part]}

    def item_index(self, round_: int) -> ItemIndex:
        return ItemIndex.build(read_keyword_file(self.run.item_keywords_path(round_)), self.titles(), self.k_max)

    def query_view(self, round_: int, part: str, items: ItemIndex) -> QueryView:
        keywords = read_keyword_file(self.run.query_keywords_path(round_))
        texts = self.texts(part)
        return QueryView.build({q: keywords.get(q, []) for q in texts}, texts, items, self.dataset.relevant(), self.k_max)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run_phase2(
    config: Phase2Config,
    run: RunDir,
    syncer: Syncer | None = None,
    progress: bool = True,
    echo: Callable[[str], None] = _stderr,
    callbacks: Sequence[object] = (),
) -> Phase2Report:
    """Run (or resume) `config.rounds` rounds of Phase 2 in `run` (Phase 1 must be done)."""
    ranks = join()
    with ranks.main_only(run.lock()):
        if not run.is_done("round-0"):
            raise CogrError(f"run {run.name!r}: Phase 1 is not complete (run `cogr-search train sft` first)")
        ctx = open_context(run, config, syncer, progress and ranks.is_main, echo, callbacks, ranks)  # reads and checks before writing
        if ranks.is_main:
            _check_config(run, config)
        ranks.barrier()
        report = run_steps(run, _steps(ctx), Phase2Report(run=run.root), echo, _summary,
                           after_each=lambda: write_metrics(run), ranks=ranks, collective=_collective)
        report.phases = write_metrics(run) if ranks.is_main else []
        return report


COLLECTIVE_ACTIONS = frozenset({"metrics", "rl_query", "query_keywords", "query_metrics", "rl_item", "item_keywords",
                                "item_metrics"})
"""Steps every rank takes part in under `accelerate launch` / `--processes N`: GRPO and
the (sharded) keyword generation, with the metrics that may generate extra samples; the
round record and the sync run on rank 0 alone."""


def _collective(step: str) -> bool:
    return step.rsplit("/", 1)[-1] in COLLECTIVE_ACTIONS


def _steps(ctx: _Context) -> Iterator[Step]:
    """The SFT metrics, then every round's steps (and its sync, with a syncer), in order."""
    yield "round-0/metrics", functools.partial(_sft_metrics, ctx)
    actions = (*ROUND_ACTIONS, *(("sync",) if ctx.syncer is not None else ()))
    for round_ in range(1, ctx.config.rounds + 1):
        for action in actions:
            yield step_name(round_, action), functools.partial(_ACTIONS[action], ctx, round_)


def open_context(
    run: RunDir,
    config: Phase2Config,
    syncer: Syncer | None = None,
    progress: bool = False,
    echo: Callable[[str], None] = _stderr,
    callbacks: Sequence[object] = (),
    ranks: Ranks | None = None,
) -> _Context:
    """Everything a Phase 2 step reads: the run's Phase 1 config, data, split, prompts."""
    phase1 = run.config()
    dataset = load_dataset(Path(phase1.data), phase1.relevance_threshold)
    return _Context(config, phase1, run, load_prompts(run.prompts_path), dataset, read_json(run.split_path),
                    progress, echo, syncer, callbacks, ranks or Ranks())


def _summary(info: dict) -> str:
    phase = info.get("phase_metrics")
    if phase:
        return f" (val F1 {phase['val']['F1']:.4f}, train F1 {phase['train']['F1']:.4f})"
    if "mean_reward" in info:
        return f" ({info['steps']} steps, mean reward {info['mean_reward']})"
    return ""


def _check_config(run: RunDir, config: Phase2Config) -> None:
    """The first call saves the RL config; later calls must continue the same run."""
    path = run.root / RL_CONFIG_FILE
    if not path.exists():
        atomic_write_json(path, config.to_json())
        return
    saved = Phase2Config.from_json(read_json(path), origin=str(path)).to_json()  # new fields at their defaults
    check_resumed_config(path, run, saved, config.to_json(), RL_RESUMABLE_CHANGES, "Phase 2")
    atomic_write_json(path, config.to_json())  # only resumable fields (e.g. rounds) changed


# -- prompts for each side -----------------------------------------------------------


def rl_query_rows(ctx: _Context) -> list[dict]:
    """Training queries (a seeded sample under `max_queries`) as GRPO prompts."""
    ids = _capped(list(ctx.split["train_queries"]), ctx.config.max_queries, ctx.config.query.seed)
    requests = query_requests(ctx.prompts, [ctx.dataset.queries[q] for q in ids], ctx.phase1.query_top_n,
                              context=ctx.run.stored_context())
    return [{"prompt": r.conversation, "query_id": r.id} for r in requests]


def rl_item_rows(ctx: _Context, view: QueryView) -> list[dict]:
    """Items whose keywords can change some training query's F1 (relevant to one, or
    retrieved by one now), then the rest of the catalog in use, under `max_items`.

    An item no query can reach gets the same reward for every rollout: a group with no
    signal, a wasted step."""
    in_use = list(ctx.split["items"])
    rng = random.Random(ctx.config.item.seed)
    rng.shuffle(in_use)
    positions = view.item_index.position
    reachable = [
        i for i in in_use
        if len(view.reference_query_positions(positions(i))) or len(view.relevant_query_positions(positions(i)))
    ]
    chosen = set(reachable)
    ids = (reachable + [i for i in in_use if i not in chosen])[: ctx.config.max_items]
    requests = item_requests(ctx.prompts, [ctx.dataset.items[i] for i in sorted(ids)], ctx.phase1.item_keywords)
    return [{"prompt": r.conversation, "item_id": r.id} for r in requests]


def _capped(ids: list[str], limit: int | None, seed: int) -> list[str]:
    return ids if limit is None or len(ids) <= limit else sorted(random.Random(seed).sample(ids, limit))


# -- steps ---------------------------------------------------------------------------


def _grpo(ctx: _Context, side: str, round_: int, rows: list[dict], reward, config: GRPOSideConfig) -> dict:  # noqa: ANN001
    out = ctx.run.checkpoint_path(round_, side)
    start_model = ctx.run.checkpoint_path(round_ - 1, side)
    screening = {}
    if config.screen:
        record = ctx.run.round_dir(round_) / f"screen_{side}.json"
        # rank 0 screens and writes the record; every rank trains on the prompts it kept
        screened = (screen_rows(start_model, rows, f"{side}_id", reward, config, ctx.config.generation, record)
                    if ctx.ranks.is_main else None)
        rows, screening = ctx.ranks.broadcast(screened)
        reward.reset_counters()
        if ctx.ranks.is_main:
            ctx.echo(f"[{ctx.run.name}] {side} screening kept {screening['kept']} of {screening['candidates']} prompts")
    result = train_grpo(start_model, rows, reward, out, config, progress=ctx.progress, callbacks=ctx.callbacks,
                        ranks=ctx.ranks, log_path=ctx.run.train_log_path, backend=ctx.config.generation.backend)
    figures = result.as_dict()
    note = no_learning_note(side, figures, config.prompts_per_step * config.gradient_accumulation_steps)
    if note and ctx.ranks.is_main:
        ctx.echo(f"[{ctx.run.name}] round {round_}: {note}")
    # each rank rewarded its own share of the completions
    counters = ctx.ranks.gather((reward.seconds, reward.completions))
    return {
        **figures,
        "no_learning": note,
        **({"screening": screening} if screening else {}),
        "reward_seconds": round(max(seconds for seconds, _ in counters), 3),
        "reward_completions": sum(count for _, count in counters),
        **reward.summary(),  # rank 0's share of the completions under several ranks
        "weights_sha256": weights_digest(out) if ctx.ranks.is_main else None,
    }


def query_side(ctx: _Context, round_: int) -> tuple[list[dict], QueryF1Reward]:
    """Round r's query-side prompts and reward: the frozen item index of round r-1."""
    items = ctx.item_index(round_ - 1)
    view = ctx.query_view(round_ - 1, "train_queries", items)
    return rl_query_rows(ctx), QueryF1Reward(view, beta=ctx.config.reward_beta, k_max=ctx.k_max,
                                             diversity_weight=ctx.config.diversity_weight)


def item_side(ctx: _Context, round_: int, query_round: int | None = None) -> tuple[list[dict], ItemMarginalReward]:
    """Round r's item-side prompts and reward: round r's query keywords (or
    `query_round`'s) over the frozen reference item index of round r-1 (the reference
    S_i of Eq. 2.3)."""
    items = ctx.item_index(round_ - 1)
    view = ctx.query_view(round_ if query_round is None else query_round, "train_queries", items)
    reward = ItemMarginalReward(view, beta=ctx.config.reward_beta, k_max=ctx.k_max,
                                transposed=ctx.config.item_reward == "transposed")
    return rl_item_rows(ctx, view), reward


def _step_rl_query(ctx: _Context, round_: int) -> dict:
    rows, reward = query_side(ctx, round_)
    return _grpo(ctx, "query", round_, rows, reward, ctx.config.query)


def _query_requests(ctx: _Context) -> list:
    queries = [ctx.dataset.queries[q] for part in ("train_queries", "val_queries") for q in ctx.split[part]]
    return query_requests(ctx.prompts, queries, ctx.phase1.query_top_n, context=ctx.run.stored_context())


def query_sample_paths(run: RunDir, round_: int, samples: int) -> list[Path]:
    """Round r's query keyword file, then the extra samples (other seeds) kept for metrics."""
    extra = [run.round_dir(round_) / f"query_keywords.sample-{k}.jsonl" for k in range(1, samples)]
    return [run.query_keywords_path(round_), *extra]


def item_sample_paths(run: RunDir, round_: int, samples: int) -> list[Path]:
    """Round r's item keyword file (the index), then the extra index samples for metrics."""
    extra = [run.round_dir(round_) / f"item_keywords.sample-{k}.jsonl" for k in range(1, samples)]
    return [run.item_keywords_path(round_), *extra]


def _generate_extra_samples(ctx: _Context, round_: int) -> None:
    """The extra query keyword samples of `eval_samples` (resumable, like every keyword file)."""
    requests = _query_requests(ctx)
    for k, path in enumerate(query_sample_paths(ctx.run, round_, ctx.config.eval_samples)[1:], start=1):
        _generate(ctx, ctx.run.checkpoint_path(round_, "query"), requests, path, EVAL,
                  f"query keywords (round {round_}, sample {k})", seed_offset=k)


def _generate_item_samples(ctx: _Context, round_: int) -> None:
    """The extra item index samples of `item_samples`: the same item generator sampled
    with other seeds, since one index sample moves F1 as much as a phase does."""
    paths = item_sample_paths(ctx.run, round_, ctx.config.item_samples)[1:]
    if not paths:
        return
    requests = item_requests(ctx.prompts, [ctx.dataset.items[i] for i in ctx.split["items"]], ctx.phase1.item_keywords)
    for k, path in enumerate(paths, start=1):
        _generate(ctx, ctx.run.checkpoint_path(round_, "item"), requests, path, INDEX,
                  f"item keywords (round {round_}, sample {k})", seed_offset=k)


def _sft_metrics(ctx: _Context) -> dict:
    _generate_extra_samples(ctx, 0)
    _generate_item_samples(ctx, 0)
    return {"phase_metrics": _phase_entry(ctx, "sft", 0, 0, 0, {})}


def _step_query_keywords(ctx: _Context, round_: int) -> dict:
    return _generate(ctx, ctx.run.checkpoint_path(round_, "query"), _query_requests(ctx),
                     ctx.run.query_keywords_path(round_), EVAL, f"query keywords (round {round_})")


def _step_query_metrics(ctx: _Context, round_: int) -> dict:
    """The shadow index's F1 after the query side: round r's queries against round r-1's items."""
    _generate_extra_samples(ctx, round_)
    _generate_item_samples(ctx, round_ - 1)  # present unless --item-samples grew on a resume
    grpo = ctx.run.step_info(f"round-{round_}/rl_query") or {}
    return {"phase_metrics": _phase_entry(ctx, f"rl-query-{round_}", round_, round_ - 1, round_, grpo)}


def _step_rl_item(ctx: _Context, round_: int) -> dict:
    rows, reward = item_side(ctx, round_)
    return _grpo(ctx, "item", round_, rows, reward, ctx.config.item)


def _step_item_keywords(ctx: _Context, round_: int) -> dict:
    items = [ctx.dataset.items[i] for i in ctx.split["items"]]
    requests = item_requests(ctx.prompts, items, ctx.phase1.item_keywords)
    return _generate(ctx, ctx.run.checkpoint_path(round_, "item"), requests,
                     ctx.run.item_keywords_path(round_), INDEX, f"item keywords (round {round_})")


def _step_item_metrics(ctx: _Context, round_: int) -> dict:
    """The shadow index's F1 after the item side: round r's queries against round r's items."""
    _generate_item_samples(ctx, round_)
    grpo = ctx.run.step_info(f"round-{round_}/rl_item") or {}
    return {"phase_metrics": _phase_entry(ctx, f"rl-item-{round_}", round_, round_, round_, grpo)}


def _step_round(ctx: _Context, round_: int) -> dict:
    hashes = {side: (ctx.run.step_info(f"round-{round_}/rl_{side}") or {}).get("weights_sha256") for side in ("query", "item")}
    return {"weights_sha256": hashes, "phase": "rl"}


def _step_sync(ctx: _Context, round_: int) -> dict:
    assert ctx.syncer is not None
    return ctx.syncer(ctx.run, round_)


_ACTIONS: dict[str, Callable[[_Context, int], dict]] = {
    "rl_query": _step_rl_query,
    "query_keywords": _step_query_keywords,
    "query_metrics": _step_query_metrics,
    "rl_item": _step_rl_item,
    "item_keywords": _step_item_keywords,
    "item_metrics": _step_item_metrics,
    "round": _step_round,
    "sync": _step_sync,
}


def _generate(ctx: _Context, model: Path, requests: list, out: Path, params: SamplingParams, desc: str,
              seed_offset: int = 0) -> dict:
    gen = ctx.config.generation
    return generate_with_model(
        model, requests, out, params.with_(max_new_tokens=gen.max_new_tokens, seed=gen.seed + seed_offset),
        backend=gen.backend, dtype=gen.dtype, batch_size=gen.batch_size, k_max=ctx.k_max,
        progress=ctx.progress, desc=desc, ranks=ctx.ranks,
    )


# -- metrics -------------------------------------------------------------------------


def set_metrics(view: QueryView) -> dict:
    """Macro P, R, F1 of the view's queries over their full retrieved sets (queries
    without a relevant item skipped), from the counts the view already caches."""
    scored = [(int(t), int(r), int(n)) for t, r, n in zip(view.n_tp, view.n_ret, view.n_rel) if n > 0]
    if not scored:
        return {"P": 0.0, "R": 0.0, "F1": 0.0, "queries": 0}
    count = len(scored)
    return {
        "P": round(sum(t / r if r else 0.0 for t, r, _ in scored) / count, 4),
        "R": round(sum(t / n for t, _, n in scored) / count, 4),
        "F1": round(sum(f1(t, r, n) for t, r, n in scored) / count, 4),
        "queries": count,
    }


def _phase_entry(ctx: _Context, phase: str, round_: int, item_round: int, query_round: int, grpo: Mapping) -> dict:
    """The shadow index's view of one phase's result, for metrics.json.

    `val` and `train` score the round's query keyword file against the round's item
    keyword file (what sync and eval use). With `eval_samples` > 1 or `item_samples` > 1,
    every (item index sample, query sample) pair is scored too, item-major, and
    `{val,train}_F1_mean` is their mean: the figure to compare phases by."""
    query_paths = query_sample_paths(ctx.run, query_round, ctx.config.eval_samples)
    item_paths = item_sample_paths(ctx.run, item_round, ctx.config.item_samples)
    return {**_scored_entry(ctx, phase, round_, query_paths, item_paths, grpo),
            "item_keywords_round": item_round, "query_keywords_round": query_round}


def _pair_scores(ctx: _Context, query_keywords: Sequence[Mapping[str, list[str]]],
                 item_paths: Sequence[Path]) -> dict[str, list[dict]]:
    """Validation and training `set_metrics` of every (item index sample, query sample)
    pair, item-major."""
    scores: dict[str, list[dict]] = {"val": [], "train": []}
    for item_path in item_paths:
        items = ItemIndex.build(read_keyword_file(item_path), ctx.titles(), ctx.k_max)
        for keywords in query_keywords:
            for part, name in (("val_queries", "val"), ("train_queries", "train")):
                texts = ctx.texts(part)
                view = QueryView.build({q: keywords.get(q, []) for q in texts}, texts, items, ctx.dataset.relevant(),
                                       ctx.k_max)
                scores[name].append(set_metrics(view))
    return scores


def _mean_val_f1(ctx: _Context, query_paths: Sequence[Path], item_paths: Sequence[Path]) -> float:
    """Mean validation F1 over every pair of the given query and item keyword samples."""
    f1s = [v["F1"] for v in _pair_scores(ctx, [read_keyword_file(p) for p in query_paths], item_paths)["val"]]
    return round(sum(f1s) / len(f1s), 4)


def _scored_entry(ctx: _Context, phase: str, round_: int, query_paths: Sequence[Path], item_paths: Sequence[Path],
                  grpo: Mapping) -> dict:
    """Every (item index sample, query sample) pair of keyword files scored on the shadow index."""
    query_keywords = [read_keyword_file(path) for path in query_paths]
    scores = _pair_scores(ctx, query_keywords, item_paths)
    entry = {
        "phase": phase,
        "round": round_,
        "val": scores["val"][0],
        "train": scores["train"][0],
        "mean_reward": grpo.get("mean_reward"),
        "zero_std_share": grpo.get("zero_std_share"),
        "no_learning": grpo.get("no_learning"),
        "grpo_steps": grpo.get("steps"),
        "grpo_seconds": grpo.get("seconds"),
        "keyword_space": keyword_space(query_keywords[0], read_keyword_file(item_paths[0])),
    }
    if len(scores["val"]) > 1:
        entry["samples"] = {"query": len(query_paths), "item": len(item_paths)}
        for name, values in scores.items():
            f1s = [v["F1"] for v in values]
            entry[f"{name}_F1_samples"] = f1s
            entry[f"{name}_F1_mean"] = round(sum(f1s) / len(f1s), 4)
    return entry


def remeasure(
    run: RunDir, samples: int, item_samples: int = 1, progress: bool = False, echo: Callable[[str], None] = _stderr,
    ranks: Ranks | None = None,
) -> list[dict]:
    """Recompute every recorded phase's metrics with `samples` query keyword samples and
    `item_samples` item index samples.

    Why: whether a phase's change in F1 is more than sampling noise is only known from
    several samples; a finished run can be measured again without retraining. Extra
    samples are generated once (and resumed) next to the round's keyword file."""
    path = run.root / RL_CONFIG_FILE
    config = Phase2Config.from_json(read_json(path), origin=str(path)) if path.exists() else Phase2Config()
    update = {"eval_samples": samples, "item_samples": item_samples}
    ranks = ranks or Ranks()
    ctx = open_context(run, config.model_copy(update=update), progress=progress, echo=echo, ranks=ranks)
    with ranks.main_only(run.lock()):
        for step, info in run.manifest()["steps"].items():
            phase = info.get("phase_metrics")
            if not phase:
                continue
            if ranks.is_main:
                echo(f"[{run.name}] measuring {phase['phase']} with {samples} query x {item_samples} item sample(s) ...")
            _generate_extra_samples(ctx, phase["query_keywords_round"])
            _generate_item_samples(ctx, phase["item_keywords_round"])
            if not ranks.is_main:
                continue  # rank 0 scores and records; the others only shared the generation
            grpo = {} if phase["phase"] == "sft" else (run.step_info(_grpo_step(phase)) or {})
            entry = _phase_entry(ctx, phase["phase"], phase["round"], phase["item_keywords_round"],
                                 phase["query_keywords_round"], grpo)
            run.mark_done(step, **{**{k: v for k, v in info.items() if k != "completed_at"}, "phase_metrics": entry})
        return write_metrics(run) if ranks.is_main else []


def curve(phases: Sequence[Mapping]) -> dict[str, dict]:
    """Each phase's held-out F1 over its (query x item) samples: mean, min and max, and the
    training queries' mean. What a learning curve plots: one sample moves F1 as much as
    a few GRPO steps do, so phases are compared by the mean with its range beside it."""
    points = {}
    for p in phases:
        samples = p.get("val_F1_samples") or [p["val"]["F1"]]
        points[p["phase"]] = {"mean": round(sum(samples) / len(samples), 4), "min": min(samples),
                              "max": max(samples), "samples": len(samples),
                              "train_mean": p.get("train_F1_mean", p["train"]["F1"]),
                              **({"against_zero_shot": p["against_zero_shot"]} if "against_zero_shot" in p else {})}
    return points


ZERO_SHOT = "zero-shot"


def zero_shot_files(run: RunDir, samples: int, item_samples: int = 1, progress: bool = False,
                    echo: Callable[[str], None] = _stderr,
                    ranks: Ranks | None = None) -> tuple[_Context, dict[str, list[Path]]]:
    """The prompting baseline's keyword files: the run's base model (no SFT, no RL) writes
    both sides' keywords with the run's prompts (few-shot where Phase 1 prompted it so),
    sampled as the trained generators are, into round-0/zero-shot/ (resumable). Returns the
    measuring context with the files, `{"query": [...], "item": [...]}`.

    Why: recent work finds that prompting alone often matches RL-trained rewriting, so a
    learning curve means something only next to this point."""
    path = run.root / RL_CONFIG_FILE
    config = Phase2Config.from_json(read_json(path), origin=str(path)) if path.exists() else Phase2Config()
    ctx = open_context(run, config.model_copy(update={"eval_samples": samples, "item_samples": item_samples}),
                       progress=progress, echo=echo, ranks=ranks)
    folder, base, few_shot = run.round_dir(0) / ZERO_SHOT, Path(ctx.phase1.model), ctx.phase1.few_shot_init
    queries = [ctx.dataset.queries[q] for part in ("train_queries", "val_queries") for q in ctx.split[part]]
    sides = {
        "query": (query_requests(ctx.prompts, queries, ctx.phase1.query_top_n, few_shot=few_shot,
                                 context=run.stored_context()), EVAL, samples),
        "item": (item_requests(ctx.prompts, [ctx.dataset.items[i] for i in ctx.split["items"]],
                               ctx.phase1.item_keywords, few_shot=few_shot), INDEX, item_samples),
    }
    paths: dict[str, list[Path]] = {}
    with ctx.ranks.main_only(run.lock()):
        for side, (requests, params, count) in sides.items():
            paths[side] = [folder / f"{side}_keywords{f'.sample-{k}' if k else ''}.jsonl" for k in range(count)]
            for k, out in enumerate(paths[side]):
                _generate(ctx, base, requests, out, params, f"zero-shot {side} keywords (sample {k})", seed_offset=k)
    return ctx, paths


def against_zero_shot(ctx: _Context, phase: Mapping, zero_shot: Mapping[str, Sequence[Path]],
                      scored: dict[tuple[str, int], float] | None = None) -> dict[str, float]:
    """Each side of a trained phase against the prompting baseline's other side: `query`
    is the mean val F1 of the phase's query samples on the zero-shot item index, `item`
    of the zero-shot queries on the phase's item index.

    Why: a point below zero-shot does not say which generator lost ground; one side
    above its baseline could still be deployed alone (the other side's keywords from the
    base model). `scored` keeps each (side, keyword round) across calls: a round's query
    files serve rl-query-k and rl-item-k alike, so a curve scores each one once."""
    scored = {} if scored is None else scored
    query_round, item_round = phase["query_keywords_round"], phase["item_keywords_round"]
    if ("query", query_round) not in scored:
        queries = query_sample_paths(ctx.run, query_round, ctx.config.eval_samples)
        scored["query", query_round] = _mean_val_f1(ctx, queries, zero_shot["item"])
    if ("item", item_round) not in scored:
        items = item_sample_paths(ctx.run, item_round, ctx.config.item_samples)
        scored["item", item_round] = _mean_val_f1(ctx, zero_shot["query"], items)
    return {"query": scored["query", query_round], "item": scored["item", item_round]}


def metrics_report(run: RunDir, samples: int, item_samples: int = 1, zero_shot: bool = False,
                   ranks: Ranks | None = None) -> dict | None:
    """`train metrics`: every phase measured again (`remeasure`), with its curve point; with
    `zero_shot`, the prompting baseline first and each trained phase's sides against it
    (`against_zero_shot`); `settings.items` is the run's catalog size (what `reproduce`
    checks as documents).

    Under several `ranks` every rank writes its share of the missing keyword samples (the
    files are the same bytes at any process count) and rank 0 alone scores them and
    returns the report; the others return None."""
    ranks = ranks or Ranks()
    phases = remeasure(run, samples, item_samples, ranks=ranks)
    if zero_shot:
        ctx, files = zero_shot_files(run, samples, item_samples, ranks=ranks)
        if not ranks.is_main:
            return None
        baseline = _scored_entry(ctx, ZERO_SHOT, 0, files["query"], files["item"], {})
        scored: dict[tuple[str, int], float] = {}
        phases = [baseline, *({**p, "against_zero_shot": against_zero_shot(ctx, p, files, scored)} for p in phases)]
    if not ranks.is_main:
        return None
    return {"run": str(run.root), "eval_samples": samples, "item_samples": item_samples, "phases": phases,
            "curve": curve(phases), "settings": {"items": len(read_json(run.split_path)["items"])}}


def _grpo_step(phase: Mapping) -> str:
    side = "query" if phase["phase"].startswith("rl-query") else "item"
    return step_name(phase["round"], f"rl_{side}")


def write_metrics(run: RunDir) -> list[dict]:
    """Rewrite `metrics.json` from the phase entries the manifest holds, in phase order."""
    phases = [info["phase_metrics"] for info in run.manifest()["steps"].values() if "phase_metrics" in info]
    phases.sort(key=lambda p: (p["round"], 0 if p["phase"] == "sft" else 1 if p["phase"].startswith("rl-query") else 2))
    atomic_write_json(run.metrics_path, {"format": METRICS_FORMAT, "run": run.name, "phases": phases})
    return phases
