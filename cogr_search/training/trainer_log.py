"""Where a trainer's own log entries go: into the run's `train.log`, never the terminal.

transformers prints every log entry (loss, grad norm, learning rate, rewards, each
`logging_steps`) as a raw dict: `PrinterCallback` with `print` when the bar is off, the
progress bar's `write` when it is on. A demo drew 24 such lines between the lines a
person reads. The figures are still wanted, to see afterwards how a phase went, so each
entry becomes one JSON object a line in the run's log; the terminal keeps the phase's
own lines (`runs/steps.py`) and, on a terminal, the bar.

Imports transformers: only the trainers (`sft.py`, `grpo.py`) import this module.
"""

from __future__ import annotations

import json
from pathlib import Path

from transformers import PrinterCallback, ProgressCallback, TrainerCallback

from cogr_search.runs.run_dir import now_iso


class RunLogCallback(TrainerCallback):
    """Appends each log entry of one training phase to `path` (rank 0 alone), tagged with
    the phase so that the entries of a run's several trainings stay apart."""

    def __init__(self, path: Path, phase: str) -> None:
        self.path = Path(path)
        self.phase = phase

    def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: ANN001, ANN201 - transformers API
        if not logs or not state.is_world_process_zero:
            return control
        entry = {"time": now_iso(), "phase": self.phase, "step": state.global_step,
                 **{key: value for key, value in logs.items() if key != "total_flos"}}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(entry, default=str, ensure_ascii=False) + "\n")
        return control


class BarOnlyProgress(ProgressCallback):
    """transformers' training bar without the log entries it writes under itself."""

    def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: ANN001, ANN201 - transformers API
        return control


def route_trainer_logs(trainer: object, log_path: Path | None, phase: str) -> None:
    """Take the printing of log entries off `trainer` and, with a `log_path`, write them
    there instead; a bar the trainer draws (`disable_tqdm` off) stays, without them."""
    trainer.remove_callback(PrinterCallback)
    if trainer.pop_callback(ProgressCallback) is not None:
        trainer.add_callback(BarOnlyProgress)
    if log_path is not None:
        trainer.add_callback(RunLogCallback(log_path, phase))
