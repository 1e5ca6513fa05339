"""`bench generate`: item-generator throughput at batch sizes 1, 8 and 32, and greedy
against sampled decoding, on the CPU model (or any model folder, or vLLM on a GPU).

What is counted: generated tokens up to and including each row's end token, never the
padding a finished row keeps "generating" while the rest of its batch runs. The ratio
of those real tokens to the decode slots the batch paid for (`slot_use_b<n>`) shows how
much compute early-finishing rows waste. Prompts are the trained item prompt (no
few-shot turns) over the first items of the catalog, cycled if the catalog is smaller.

With several backends (`--backend transformers,vllm`, `compare`) it measures each engine
on both generators' prompts (query and item) at one batch size, the engines taking turns
on the same prompts, and reports one entry per backend and side (`completions_per_s`).
"""

from __future__ import annotations

import os
import platform
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from cogr_search.data import load_dataset, sample_catalog_path
from cogr_search.generators.backend import EVAL, GREEDY, GeneratorBackend, SamplingParams
from cogr_search.generators.backend_choice import load_backend, resolve_backend
from cogr_search.generators.prompts import load_prompts
from cogr_search.settings import Settings
from cogr_search.generators.model_cache import resolve_model
from cogr_search.errors import InputError

BATCH_SIZES = (1, 8, 32)


def _prompts_per_batch_size(batch_size: int) -> int:
    """Enough prompts for a stable figure without minutes per point on 2 cores."""
    return {1: 4, 8: 16}.get(batch_size, batch_size)


def measure(
    backend: GeneratorBackend, conversations: Sequence, params: SamplingParams, batch_size: int
) -> dict[str, float]:
    """Tokens/s, items/s and slot use for one batch size and one decoding mode."""
    tokens = slots = 0
    start = time.perf_counter()
    for batch in backend.iter_batches(conversations, params, batch_size=batch_size):
        lengths = [generation.n_tokens for _, generation in batch]
        tokens += sum(lengths)
        slots += max(lengths) * len(lengths)
    seconds = time.perf_counter() - start
    return {
        "tokens_per_s": round(tokens / seconds, 2),
        "items_per_s": round(len(conversations) / seconds, 3),
        "slot_use": round(tokens / slots, 3) if slots else 0.0,
        "tokens": tokens,
        "seconds": round(seconds, 2),
    }


def run(
    model: str | None = None,
    data: Path | None = None,
    settings: Settings | None = None,
    backend: str = "transformers",
    dtype: str = "auto",
    threads: int | None = None,
    max_new_tokens: int = 48,
    batch_sizes: Sequence[int] = BATCH_SIZES,
    random_init: bool = False,
    seed: int = 0,
    decoder: str = "own",
    prefix_cache: bool = True,
) -> dict:
    """Measure and return one flat dict of figures and the settings that produced them."""
    folder = resolve_model(model, settings)
    with tempfile.TemporaryDirectory(prefix="cogr-bench-model-") as scratch:
        if random_init:
            folder = random_model_like(folder, Path(scratch))
        backend = resolve_backend(backend)
        engine = load_backend(folder, backend, **_engine_options(backend, dtype, threads, decoder, prefix_cache))
        try:
            result = _measure_all(engine, folder, data, dtype, max_new_tokens, batch_sizes, random_init, seed)
            if engine.name == "transformers":
                result.update(decoder=decoder, prefix_cache=prefix_cache)
            return result
        finally:
            engine.close()


def _engine_options(backend: str, dtype: str, threads: int | None, decoder: str, prefix_cache: bool) -> dict:
    options: dict = {"dtype": dtype, "num_threads": threads}
    if backend == "transformers":
        options.update(decoder=decoder, prefix_cache=prefix_cache)
    return options


def parse_backends(text: str) -> list[str]:
    """`transformers,vllm` -> the engines, `auto` resolved (`resolve_backend`); an engine
    named twice (also through `auto`) is refused."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise InputError("--backend: name at least one of auto, transformers, vllm")
    resolved = [resolve_backend(name) for name in names]
    if len(set(resolved)) != len(resolved):
        raise InputError(f"--backend {text}: an engine is named twice ({', '.join(resolved)} after resolving auto)")
    return resolved


SIDES = ("query", "item")


def side_conversations(data: Path | None, count: int) -> dict[str, list]:
    """`count` trained prompts of each generator (no few-shot turns): the query generator's
    over the catalog's first queries, the item generator's over its first items (cycled)."""
    dataset = load_dataset(data or sample_catalog_path())
    items = [dataset.items[i] for i in sorted(dataset.items)]
    queries = [dataset.queries[q] for q in sorted(dataset.queries)]
    prompts = load_prompts()
    return {
        "query": [prompts.query_messages(queries[i % len(queries)].text, 15) for i in range(count)],
        "item": [prompts.item_messages(items[i % len(items)].title, items[i % len(items)].description, 10)
                 for i in range(count)],
    }


def compare(
    model: str | None = None,
    data: Path | None = None,
    settings: Settings | None = None,
    backends: Sequence[str] = ("transformers", "vllm"),
    dtype: str = "auto",
    threads: int | None = None,
    max_new_tokens: int = 48,
    batch_size: int = 32,
    prompts: int = 32,
    rounds: int = 2,
    seed: int = 0,
    random_init: bool = False,
    decoder: str = "own",
    prefix_cache: bool = True,
) -> dict:
    """Completions/s of each engine on each side, the engines loaded side by side and taking
    turns (round by round, side by side) on the same prompts, so that a change in the
    machine's load falls on all of them alike. Sampled with the eval preset (seed `seed`)."""
    folder = resolve_model(model, settings)
    conversations = side_conversations(data, prompts)
    sampled = EVAL.with_(max_new_tokens=max_new_tokens, seed=seed)
    with tempfile.TemporaryDirectory(prefix="cogr-bench-model-") as scratch:
        if random_init:
            folder = random_model_like(folder, Path(scratch))
        engines: list[GeneratorBackend] = []
        try:
            for backend in backends:  # transformers first: a CPU vLLM engine freezes torch's thread count
                engines.append(load_backend(folder, backend, **_engine_options(backend, dtype, threads, decoder, prefix_cache)))
                engines[-1].generate(conversations["item"][:2], GREEDY.with_(max_new_tokens=4), batch_size=2)  # warm-up
            totals = {(e.name, side): {"tokens": 0, "completions": 0, "seconds": 0.0} for e in engines for side in SIDES}
            load = []
            for _ in range(rounds):
                for side in SIDES:
                    for engine in engines:
                        load.append(os.getloadavg()[0])
                        figures = measure(engine, conversations[side], sampled, batch_size)
                        total = totals[(engine.name, side)]
                        total["tokens"] += figures["tokens"]
                        total["completions"] += len(conversations[side])
                        total["seconds"] += figures["seconds"]
            results = [_side_entry(engine, side, totals[(engine.name, side)]) for engine in engines for side in SIDES]
        finally:
            for engine in engines:
                engine.close()
    result: dict = {
        "model": str(folder) if not random_init else f"random init, shaped like {Path(folder).name}",
        "backends": [engine.name for engine in engines],
        "batch_size": batch_size,
        "prompts_per_side": prompts,
        "rounds": rounds,
        "max_new_tokens": max_new_tokens,
        "sampling": "eval (T 0.7, top-p 0.8, top-k 20)",
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "load_avg_1m": [round(min(load), 2), round(max(load), 2)] if load else None,
        "results": results,
    }
    result.update(speedups(results, "completions_per_s"))
    return result


def _side_entry(engine: GeneratorBackend, side: str, total: dict) -> dict:
    seconds = total["seconds"]
    return {
        "backend": engine.name,
        "side": side,
        "completions_per_s": round(total["completions"] / seconds, 3) if seconds else 0.0,
        "tokens_per_s": round(total["tokens"] / seconds, 2) if seconds else 0.0,
        "tokens_per_completion": round(total["tokens"] / max(1, total["completions"]), 1),
        "completions": total["completions"],
        "seconds": round(seconds, 2),
        "dtype": str(getattr(engine, "dtype", "")).replace("torch.", ""),
        "threads": getattr(engine, "threads", None),
    }


def speedups(results: Sequence[dict], figure: str) -> dict:
    """`vllm_over_transformers_<side>`: vLLM's `figure` over transformers' on each side,
    where both engines were measured."""
    by = {(entry["backend"], entry["side"]): entry[figure] for entry in results}
    return {
        f"vllm_over_transformers_{side}": round(by[("vllm", side)] / by[("transformers", side)], 3)
        for side in SIDES
        if by.get(("transformers", side)) and ("vllm", side) in by
    }


def _measure_all(engine: GeneratorBackend, folder: Path, data: Path | None, dtype: str, max_new_tokens: int,
                 batch_sizes: Sequence[int], random_init: bool, seed: int) -> dict:
    dataset = load_dataset(data or sample_catalog_path())
    items = [dataset.items[i] for i in sorted(dataset.items)]
    prompts = load_prompts()
    largest = max(batch_sizes)
    needed = max(_prompts_per_batch_size(b) for b in batch_sizes)
    conversations = [
        prompts.item_messages(items[i % len(items)].title, items[i % len(items)].description, 10)
        for i in range(needed)
    ]
    sampled = EVAL.with_(max_new_tokens=max_new_tokens, seed=seed)
    greedy = GREEDY.with_(max_new_tokens=max_new_tokens)
    engine.generate(conversations[:2], greedy.with_(max_new_tokens=4), batch_size=2)  # warm-up
    result: dict = {
        "model": str(folder) if not random_init else f"random init, shaped like {folder.name}",
        "backend": engine.name,
        "device": getattr(engine, "device", "cuda"),
        "dtype": str(getattr(engine, "dtype", dtype)).replace("torch.", ""),
        "threads": getattr(engine, "threads", None),
        "max_new_tokens": max_new_tokens,
        "sampling": "eval (T 0.7, top-p 0.8, top-k 20)",
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "load_avg_1m": round(os.getloadavg()[0], 2),
        "prompt_tokens_mean": _mean_prompt_tokens(engine, conversations),
    }
    for batch_size in batch_sizes:
        subset = conversations[: _prompts_per_batch_size(batch_size)]
        figures = measure(engine, subset, sampled, batch_size)
        for key, value in figures.items():
            result[f"{key}_b{batch_size}"] = value
    subset = conversations[: _prompts_per_batch_size(largest)]
    for key, value in measure(engine, subset, greedy, largest).items():
        result[f"{key}_b{largest}_greedy"] = value
    return result


def _mean_prompt_tokens(engine: GeneratorBackend, conversations: Sequence) -> float | None:
    if engine.tokenizer is None:
        return None
    return round(sum(len(engine.render(c)) for c in conversations) / len(conversations), 1)


def random_model_like(folder: Path, out: Path) -> Path:
    """A randomly initialised model with `folder`'s architecture and tokenizer: a clean
    throughput subject (it never emits its end token, so every row runs to the cap)."""
    import torch  # heavy: torch, off the CLI's start
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer  # heavy: transformers, off the CLI's start

    torch.manual_seed(0)
    config = AutoConfig.from_pretrained(str(folder))
    model = AutoModelForCausalLM.from_config(config)
    target = out / f"random-{folder.name}"
    model.save_pretrained(str(target))
    AutoTokenizer.from_pretrained(str(folder)).save_pretrained(str(target))
    return target
