"""`bench rewards --scale`: how build time, memory and reward rates grow with the catalog.

Paper Appendix B claims an item-side reward costs one lookup plus constant work per
affected query, whatever the catalog size; the shadow index should also hold memory
linear in the catalog. Each size is measured in a fresh process (spawned), so the
resident memory of one size does not linger into the next and the RSS delta around the
build is the index's own. The parent watches the child's RSS and stops the sweep when
it passes `max_rss_gib` (the machine is shared): that is reported, not hidden.

The catalog is the base catalog copied (`scaled_catalog`); candidates are made on the
base catalog exactly as in `bench rewards` and handed to random complete copies, so
every size times comparable rollouts.
"""

from __future__ import annotations

import gc
import json
import math
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import psutil

from cogr_search.bench.rewards import (
    ITEM_BATCH_GROUPS,
    Batches,
    KeywordCatalog,
    _best_of,
    _rate,
    build_views,
    item_batches,
    query_batches,
    time_rewards,
)
from cogr_search.bench.scaled_catalog import ScaledCatalog, copy_id, scale
from cogr_search.data import load_dataset
from cogr_search.errors import InputError
from cogr_search.keywords import DEFAULT_K_MAX
from cogr_search.shadow.query_view import QueryView

DEFAULT_SIZES = (55_000, 220_000, 1_000_000, 4_000_000)
SIZE_SAMPLES = 200
"""Candidates per side whose retrieved set / Q_cand is counted, to explain the rates."""

_MIB = 2**20
_POLL_S = 0.5


def _to_copies(batches: Batches, catalog: ScaledCatalog, copies: int, rng: random.Random) -> Batches:
    """Each base group handed to a random complete copy, ids and keywords as it spells them."""
    out = []
    for base_id, candidates in batches:
        copy = rng.randrange(copies)
        out.append((copy_id(base_id, copy), [catalog.tag_keywords(keywords, copy) for keywords in candidates]))
    return out


def _mean_sizes(view: QueryView, catalog: ScaledCatalog, q_batches: Batches, i_batches: Batches) -> tuple[float, float]:
    """Mean |I_ret| of query-side candidates and mean |Q_cand| of item-side candidates."""
    q_rows = [
        view.item_index.postings.lookup([*keywords, catalog.query_texts[query_id]])
        for query_id, candidates in q_batches[:SIZE_SAMPLES] for keywords in candidates[:1]
    ]
    i_rows = [
        view.postings.lookup([*keywords, catalog.titles[item_id]])
        for item_id, candidates in i_batches[:SIZE_SAMPLES] for keywords in candidates[:1]
    ]
    retrieved = view.item_index.postings.union(q_rows).sizes() if q_rows else np.zeros(1)
    affected = view.postings.union(i_rows).sizes() if i_rows else np.zeros(1)
    return float(np.mean(retrieved)), float(np.mean(affected))


def measure(
    data: Path, n_items: int, vocabulary: str, groups: int, group: int, passes: int, seed: int, k_max: int
) -> dict:
    """One size: build the views over the copied catalog and time both sides' rewards."""
    process = psutil.Process()
    base = KeywordCatalog.load(data, k_max)
    rng = random.Random(seed)
    q_base = query_batches(base, rng, groups, group)
    i_base = item_batches(base, rng, groups, group)
    catalog = scale(base, n_items, vocabulary)
    copies = max(1, min(n_items // len(base.titles), catalog.n_queries // len(base.query_texts)))
    q_batches, i_batches = _to_copies(q_base, catalog, copies, rng), _to_copies(i_base, catalog, copies, rng)
    gc.collect()
    rss_before = process.memory_info().rss
    build_cpu, build_wall, (item_index, view) = _best_of(1, lambda: build_views(catalog, k_max))
    gc.collect()
    rss_built = process.memory_info().rss
    timed = time_rewards(view, q_batches, i_batches, passes)
    rss_used = process.memory_info().rss
    retrieved, affected = _mean_sizes(view, catalog, q_batches, i_batches)
    n_rewards = groups * group
    query_rate, item_rate = _rate(n_rewards, timed["query_cpu"]), _rate(n_rewards, timed["item_cpu"])
    return {
        "items": len(item_index),
        "queries": len(view),
        "copies": catalog.copies,
        "vocabulary": vocabulary,
        "keywords_items": len(item_index.terms),
        "keywords_queries": len(view.postings.terms),
        "build_s": round(build_cpu, 2),
        "build_wall_s": round(build_wall, 2),
        "rss_build_mib": round((rss_built - rss_before) / _MIB, 1),
        "rss_after_rewards_mib": round((rss_used - rss_before) / _MIB, 1),
        "rss_bytes_per_item": round((rss_used - rss_before) / len(item_index)),
        "memory_mib": round((item_index.memory_bytes() + view.memory_bytes()) / _MIB, 1),
        "query_rewards_per_s": round(query_rate),
        "item_rewards_per_s": round(item_rate),
        "item_rewards_batched_per_s": round(_rate(n_rewards, timed["mixed_cpu"])),
        "mean_retrieved_items": round(retrieved, 1),
        "mean_affected_queries": round(affected, 1),
        "ns_per_retrieved_item": round(1e9 / query_rate / max(retrieved, 1.0), 1),
        "ns_per_affected_query": round(1e9 / item_rate / max(affected, 1.0), 1),
        "max_abs_diff_batched": timed["batched_diff"],
        "load_average": round(os.getloadavg()[0], 2),
        "peak_rss_mib": round(_own_peak_rss() / _MIB, 1),
    }


def _own_peak_rss() -> int:
    """This process's peak RSS in bytes since it exec'd.

    Why not `getrusage(...).ru_maxrss`: Linux carries the forking parent's high-water mark
    across fork and exec into it, so a child of a 9 GiB process (a test run that loaded
    models) reported 9 GiB and stopped the sweep at its first size. /proc's VmHWM belongs
    to the new address space alone; ru_maxrss only where there is no /proc.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def _tree_rss(process: psutil.Process) -> int:
    try:
        return process.memory_info().rss + sum(c.memory_info().rss for c in process.children(recursive=True))
    except psutil.NoSuchProcess:
        return 0


def _measure_in_child(kwargs: dict, max_rss: int) -> tuple[str, object, int]:
    """(status, result or message, peak RSS) of `measure(**kwargs)` in a fresh interpreter.

    A subprocess rather than multiprocessing: spawn re-imports the caller's main
    module, which a console script or `python -c` does not survive. Kills the child
    the moment its RSS passes `max_rss`: status "stopped".
    """
    argument = json.dumps({**kwargs, "data": str(kwargs["data"])})
    with tempfile.TemporaryFile(mode="w+") as out, tempfile.TemporaryFile(mode="w+") as err:
        child = subprocess.Popen([sys.executable, "-m", __name__, argument], stdout=out, stderr=err)
        watched, peak = psutil.Process(child.pid), 0
        try:
            while True:
                try:
                    code = child.wait(timeout=_POLL_S)
                    break
                except subprocess.TimeoutExpired:
                    pass
                rss = _tree_rss(watched)
                peak = max(peak, rss)
                if rss > max_rss:
                    child.kill()
                    return "stopped", f"RSS reached {rss / 2**30:.2f} GiB (limit {max_rss / 2**30:.1f} GiB)", peak
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        out.seek(0)
        err.seek(0)
        if code != 0:
            lines = err.read().strip().splitlines() or [f"exit code {code}"]
            return "error", f"the measuring process failed: {lines[-1]}", peak
        result = json.loads(out.read())
        peak = max(peak, int(result["peak_rss_mib"] * _MIB))  # a peak between two polls counts too
        if peak > max_rss:
            return "stopped", f"RSS reached {peak / 2**30:.2f} GiB (limit {max_rss / 2**30:.1f} GiB)", peak
        return "ok", result, peak


def count_items(data: Path) -> int:
    return len(load_dataset(Path(data)).items)


def growth(points: Sequence[dict]) -> list[dict]:
    """Exponent k in figure ~ items^k between consecutive sizes: 1 linear, 0 constant.

    Per-reward times are the inverse of the rates, so a constant time per reward shows
    as k = 0 for `query_time_per_reward` and `item_time_per_reward`.
    """
    figures = {
        "build_s": lambda p: p["build_s"],
        "rss_after_rewards_mib": lambda p: p["rss_after_rewards_mib"],
        "memory_mib": lambda p: p["memory_mib"],
        "query_time_per_reward": lambda p: 1.0 / p["query_rewards_per_s"],
        "item_time_per_reward": lambda p: 1.0 / p["item_rewards_per_s"],
    }
    out = []
    for small, large in zip(points, points[1:]):
        size = math.log(large["items"] / small["items"])
        row: dict = {"from_items": small["items"], "to_items": large["items"]}
        for name, figure in figures.items():
            a, b = figure(small), figure(large)
            row[name] = round(math.log(b / a) / size, 2) if a > 0 and b > 0 and size > 0 else None
        out.append(row)
    return out


def run(
    data: Path,
    sizes: Sequence[int] = DEFAULT_SIZES,
    vocabulary: str = "per-copy",
    group: int = 8,
    groups: int = 500,
    passes: int = 2,
    seed: int = 0,
    k_max: int = DEFAULT_K_MAX,
    max_rss_gib: float = 8.0,
) -> dict:
    """Measure each size in turn (ascending); stop at the first size that passes the RSS limit.

    Sizes start at the base catalog: smaller ones would drop queries the candidates need.
    """
    base_items = count_items(data)
    too_small = [n for n in sizes if n < base_items]
    if too_small:
        raise InputError(f"--scale-items: {too_small[0]} is smaller than {data} ({base_items} items)")
    points: list[dict] = []
    stopped: dict | None = None
    started = time.perf_counter()
    for n_items in sorted(sizes):
        kwargs = dict(data=Path(data), n_items=n_items, vocabulary=vocabulary, groups=groups, group=group,
                      passes=passes, seed=seed, k_max=k_max)
        status, payload, peak = _measure_in_child(kwargs, int(max_rss_gib * 2**30))
        if status == "ok":
            points.append(payload)
            continue
        stopped = {"items": n_items, "reason": payload, "peak_rss_mib": round(peak / _MIB, 1)}
        break
    return {
        "data": str(data),
        "vocabulary": vocabulary,
        "group": group,
        "groups": groups,
        "passes": passes,
        "item_batch_groups": ITEM_BATCH_GROUPS,
        "max_rss_gib": max_rss_gib,
        "points": points,
        "growth": growth(points),
        "stopped": stopped,
        "sweep_wall_s": round(time.perf_counter() - started, 1),
        "timing": "CPU seconds of the measuring process, best of `passes`; RSS deltas around the build",
    }


if __name__ == "__main__":  # the measuring process of `_measure_in_child`
    options = json.loads(sys.argv[1])
    print(json.dumps(measure(**{**options, "data": Path(options["data"])})))
