"""`cogr-search bench sft`: how fast SFT steps run on this machine, per precision.

Runs a few real SFT steps of one side of a run's Phase 1 (the demo's by default), on the
examples Phase 1 trained that side on and with its SFT settings, into a throwaway folder:
nothing in the run changes. Several precisions are timed alternately in one process
(`fp32,auto,fp32,auto`), so a shared machine's drift falls on both alike and the ratio
is what to read. The first step of each pass pays for warm-up and is left out.
"""

from __future__ import annotations

import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path

from cogr_search.bench.step_timer import step_seconds, step_timer
from cogr_search.generators.threads import configure_torch_threads
from cogr_search.progress import progress_bar
from cogr_search.runs.run_dir import RunDir
from cogr_search.training.checkpoints import bf16_training
from cogr_search.training.phase1 import sft_examples
from cogr_search.training.sft import train_sft


def run(run_name: str, runs_dir: Path | None, side: str, steps: int, precisions: Sequence[str],
        progress: bool = False) -> dict:
    """Median SFT step seconds of `side` per precision pass, and each pass over the first."""

    run_dir = RunDir.open(run_name, runs_dir)
    config = run_dir.config()
    examples = sft_examples(run_dir, side)
    threads = configure_torch_threads()
    passes = []
    with tempfile.TemporaryDirectory(prefix="cogr-bench-sft-") as tmp:
        for number, precision in enumerate(precisions):
            sft = config.sft.model_copy(
                update={"max_steps": steps, "save_steps": 10_000, "logging_steps": 1, "precision": precision}
            )
            bar = progress_bar(steps, f"bench sft: {precision} pass {number + 1} of {len(precisions)}", "step",
                               progress)
            timer = step_timer(bar)
            result = train_sft(Path(config.model), examples, Path(tmp) / f"{side}-{number}", sft, progress=False,
                               callbacks=[timer])
            bar.close()
            measured = step_seconds(timer)
            passes.append({
                "precision": precision,
                "bf16": bf16_training(precision),
                "sft_step_s": round(statistics.median(measured), 3),
                "first_loss": result.losses[0] if result.losses else None,
                "last_loss": result.losses[-1] if result.losses else None,
            })
    first = passes[0]["sft_step_s"]
    for entry in passes:
        entry["step_s_over_first"] = round(entry["sft_step_s"] / first, 3) if first else None
    return {
        "run": str(run_dir.root),
        "side": side,
        "threads": threads,
        "steps": steps,
        "examples": len(examples),
        "batch_size": config.sft.batch_size,
        "max_length": config.sft.max_length,
        "train_layers": config.sft.train_layers,
        "lora": config.sft.lora,
        "passes": passes,
    }
