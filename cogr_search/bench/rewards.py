"""`bench rewards`: how fast the shadow index computes CoGR rewards on a real catalog.

The keyword sets need no model: items get word n-grams of their titles, queries word
n-grams of their text (n = 1..3, unigrams that are stop words or single characters
left out, as a keyword generator would). Rollout candidates are perturbations of
those sets: a random subset, plus n-grams borrowed from related texts (a query's
relevant titles, an item's queries) and from random items, so that candidates both
gain and lose matches, as sampled generations do.

Figures (all from one process, single thread):
- `build_s`, `memory_mib`: building both views; memory is the arrays, vocabularies and
  id strings they hold (BM25 statistics are lazy and not needed for rewards);
- `query_rewards_per_s`: query-side F1 rewards, in GRPO groups of `group` candidates;
- `item_rewards_per_s`: item-side counterfactual rewards (Appendix B.3), same groups;
- `naive_item_rewards_per_s`: Eq. 2.3 by rebuilding the item index and rerunning all
  queries, on `naive_samples` candidates; `item_speedup` is the ratio;
- `max_abs_diff`: the largest difference between cached and naive rewards on those
  samples (a correctness check riding along).
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from cogr_search.data import load_dataset
from cogr_search.keywords import DEFAULT_K_MAX, normalize
from cogr_search.shadow.index import ItemIndex
from cogr_search.shadow.query_view import QueryView

STOP_WORDS = frozenset(
    "a an and are as at by for from in into is it of on or the to with without x w/ per".split()
)


def ngrams(text: str, max_n: int = 3, limit: int = DEFAULT_K_MAX) -> list[str]:
    """Word n-grams of a normalized text, unigrams first, at most `limit` of them."""
    words = [w for w in (normalize(w) for w in normalize(text).split(" ")) if w]
    grams: list[str] = []
    seen: set[str] = set()
    for n in range(1, max_n + 1):
        for start in range(len(words) - n + 1):
            gram_words = words[start : start + n]
            if n == 1 and (gram_words[0] in STOP_WORDS or len(gram_words[0]) < 2):
                continue
            gram = " ".join(gram_words)
            if gram not in seen:
                seen.add(gram)
                grams.append(gram)
    return grams[:limit]


def _perturb(base: Sequence[str], donors: Sequence[Sequence[str]], rng: random.Random, size: int) -> list[str]:
    """A candidate: part of `base`, plus a few n-grams of donor keyword sets."""
    keep = [k for k in base if rng.random() < 0.6]
    extra: list[str] = []
    for donor in donors:
        if donor:
            extra.extend(rng.sample(list(donor), min(len(donor), rng.randint(1, 3))))
    candidate = list(dict.fromkeys(keep + extra))
    rng.shuffle(candidate)
    return candidate[:size]


def _rate(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else float("inf")


def run(
    data: Path,
    group: int = 8,
    query_groups: int = 2000,
    item_groups: int = 2000,
    naive_samples: int = 3,
    seed: int = 0,
    k_max: int = DEFAULT_K_MAX,
) -> dict:
    """Build the views over DATA and time rewards; returns the figures and settings."""
    rng = random.Random(seed)
    dataset = load_dataset(Path(data))
    relevant = dataset.relevant()
    titles = {item_id: item.title for item_id, item in dataset.items.items()}
    query_texts = {query_id: query.text for query_id, query in dataset.queries.items()}
    item_keywords = {item_id: ngrams(title, limit=k_max) for item_id, title in titles.items()}
    query_keywords = {query_id: ngrams(text, limit=k_max) for query_id, text in query_texts.items()}

    start = time.perf_counter()
    item_index = ItemIndex.build(item_keywords, titles, k_max=k_max)
    view = QueryView.build(query_keywords, query_texts, item_index, relevant, k_max=k_max)
    build_s = time.perf_counter() - start
    memory = item_index.memory_bytes() + view.memory_bytes()

    item_ids = list(titles)
    queries_of_item: dict[str, list[str]] = {}
    for query_id, items in relevant.items():
        for item_id in items:
            queries_of_item.setdefault(item_id, []).append(query_id)

    # query side: GRPO groups for random queries with relevant items
    scored_queries = [q for q in query_texts if q in relevant]
    q_batches = []
    for _ in range(query_groups):
        query_id = rng.choice(scored_queries)
        donors = [item_keywords[i] for i in rng.sample(sorted(relevant[query_id]), min(2, len(relevant[query_id])))]
        donors.append(item_keywords[rng.choice(item_ids)])
        q_batches.append((query_id, [_perturb(query_keywords[query_id], donors, rng, 15) for _ in range(group)]))
    start = time.perf_counter()
    for query_id, candidates in q_batches:
        view.query_rewards(query_id, candidates)
    query_s = time.perf_counter() - start

    # item side: GRPO groups for random items (half of them with labelled queries)
    labelled = sorted(queries_of_item)
    i_batches = []
    for n in range(item_groups):
        item_id = rng.choice(labelled) if n % 2 == 0 else rng.choice(item_ids)
        donors = [query_keywords[q] for q in queries_of_item.get(item_id, [])[:2]]
        donors.append(item_keywords[rng.choice(item_ids)])
        i_batches.append((item_id, [_perturb(item_keywords[item_id], donors, rng, 20) for _ in range(group)]))
    start = time.perf_counter()
    rewards = [view.item_rewards(item_id, candidates) for item_id, candidates in i_batches]
    item_s = time.perf_counter() - start

    # naive: rebuild + rerun everything, on a few of the same candidates
    samples = [(i_batches[n][0], i_batches[n][1][0], rewards[n][0]) for n in range(min(naive_samples, len(i_batches)))]
    start = time.perf_counter()
    naive = [view.naive_item_reward(item_id, candidate) for item_id, candidate, _ in samples]
    naive_s = time.perf_counter() - start
    max_abs_diff = max((abs(a - c) for a, (_, _, c) in zip(naive, samples)), default=0.0)

    item_rate = _rate(item_groups * group, item_s)
    naive_rate = _rate(len(samples), naive_s)
    all_rewards = np.concatenate(rewards) if rewards else np.zeros(0)
    return {
        "data": str(data),
        "items": len(item_index),
        "queries": len(view),
        "keywords_items": len(item_index.terms),
        "keywords_queries": len(view.postings.terms),
        "group": group,
        "k_max": k_max,
        "seed": seed,
        "build_s": round(build_s, 3),
        "memory_mib": round(memory / 2**20, 1),
        "query_rewards": query_groups * group,
        "query_rewards_per_s": round(_rate(query_groups * group, query_s)),
        "item_rewards": item_groups * group,
        "item_rewards_per_s": round(item_rate),
        "item_rewards_nonzero": float(np.mean(all_rewards != 0)) if len(all_rewards) else 0.0,
        "naive_samples": len(samples),
        "naive_item_rewards_per_s": round(naive_rate, 3),
        "item_speedup": round(item_rate / naive_rate) if naive_rate > 0 else None,
        "max_abs_diff": max_abs_diff,
    }
