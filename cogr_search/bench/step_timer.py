"""The trainer callback both training benches time optimizer steps with."""

from __future__ import annotations

import time


def step_timer(bar: object | None = None):  # noqa: ANN201 - a transformers TrainerCallback
    """A callback that marks the wall clock at training start and at every step end;
    `step_seconds(timer)` turns the marks into per-step seconds. `bar` (a `progress_bar`)
    advances one step at each mark, so a bench shows progress in the project's style
    rather than the trainer's own bar."""
    from transformers import TrainerCallback  # heavy: transformers, off the CLI's start

    class StepTimer(TrainerCallback):
        def __init__(self) -> None:
            self.marks: list[float] = []

        def on_train_begin(self, args, state, control, **kwargs):  # noqa: ANN001, ANN201
            self.marks = [time.perf_counter()]

        def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001, ANN201
            self.marks.append(time.perf_counter())
            if bar is not None:
                bar.update(1)  # type: ignore[attr-defined]

    return StepTimer()


def step_seconds(timer: object) -> list[float]:
    """Seconds of each step after the first, which pays for warm-up (all, when only one ran)."""
    steps = [b - a for a, b in zip(timer.marks, timer.marks[1:])]
    return steps[1:] or steps
