"""The one way a training phase runs its steps: skip what the manifest says is done, run
the rest in order, record each as done with its details, and say so.

Phase 1 and Phase 2 (and any later phase) are lists of named steps over one run
directory; resuming after a crash is running the same list again. A step is complete
when the manifest says so (`RunDir.mark_done`, written atomically after the step's own
files), never because a file exists.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from cogr_search.errors import InputError
from cogr_search.runs.config import config_differences
from cogr_search.runs.run_dir import RunDir
from cogr_search.ranks import Ranks

Step = tuple[str, Callable[[], dict]]
"""A manifest step name and the action that does it, returning the step's details."""


@dataclass
class StepReport:
    """Which steps ran in this call (with their details) and which were already done."""

    run: Path
    ran: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    details: dict[str, dict] = field(default_factory=dict)


def run_steps(
    run: RunDir,
    steps: Iterable[Step],
    report: StepReport,
    echo: Callable[[str], None],
    summary: Callable[[dict], str] = lambda info: "",
    after_each: Callable[[], object] = lambda: None,
    ranks: Ranks | None = None,
    collective: Callable[[str], bool] = lambda name: False,
) -> StepReport:
    """Run the steps not yet done, in order; `after_each` runs after each step that ran
    (Phase 2 rewrites metrics.json there).

    With several `ranks`, every rank walks the same list: a `collective` step (training,
    bulk generation) runs on all of them, any other on rank 0 alone; rank 0 alone
    records, reports and calls `after_each`, and every rank waits for the others after
    each step, so the next one starts from what rank 0 recorded. Each step records the
    number of processes it ran on."""
    ranks = ranks or Ranks()
    # rank 0's view, taken once: a rank that read the manifest itself could see a step
    # rank 0 has just recorded, skip it, and wait at the wrong barrier
    done = ranks.broadcast(set(run.manifest()["steps"]) if ranks.is_main else None)
    for name, action in steps:
        if name in done:
            report.skipped.append(name)
            continue
        if ranks.is_main:
            echo(f"[{run.name}] {name} ...")
        start = time.perf_counter()
        info = action() if ranks.is_main or collective(name) else {}
        if ranks.is_main:
            info["seconds"] = round(time.perf_counter() - start, 2)
            info["processes"] = ranks.world if collective(name) else 1
            run.mark_done(name, **info)
            report.ran.append(name)
            report.details[name] = info
            after_each()
            echo(f"[{run.name}] {name} done in {info['seconds']:.1f} s{summary(info)}")
        ranks.barrier()
        gc.collect()  # a step may leave a model behind; the next one loads another
    return report


def check_resumed_config(path: Path, run: RunDir, old: dict, new: dict, resumable: frozenset[str], phase: str) -> None:
    """A run is continued with the settings it started with, except the `resumable` ones."""
    diffs = [d for d in config_differences(old, new) if d not in resumable]
    if diffs:
        raise InputError(
            f"{path}: run {run.name!r} started {phase} with other settings ({', '.join(diffs)}); "
            "use the same options to resume, or a new --run"
        )
