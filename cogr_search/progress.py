"""Progress bars for long steps, in one style everywhere (stderr, tqdm).

A bar is for a person watching a terminal: it is never drawn under `--json` (scripts
read stdout and often keep stderr as a log) nor when stderr is a pipe or a file, where
tqdm's carriage returns turn into pages of half-lines."""

from __future__ import annotations

import os
import sys

from tqdm import tqdm

LIBRARY_SWITCHES = ("HF_HUB_DISABLE_PROGRESS_BARS", "HF_DATASETS_DISABLE_PROGRESS_BARS")
"""The variables that turn off the bars of transformers ("Loading weights"), the hub and
datasets ("Tokenizing train dataset"): read when those libraries are imported."""


def progress_wanted(as_json: bool = False, quiet: bool = False) -> bool:
    """Whether a command draws progress bars: a terminal on stderr, and neither --json nor --quiet."""
    return not as_json and not quiet and sys.stderr.isatty()


def progress_bar(total: int | None, desc: str, unit: str, enabled: bool, initial: int = 0) -> tqdm:
    """The project's bar: on stderr, the terminal's width, removed when done (the command's
    own summary line follows); a disabled bar accepts the same calls and prints nothing."""
    return tqdm(total=total, initial=initial, desc=desc, unit=unit, disable=not enabled, leave=False,
                dynamic_ncols=True, file=sys.stderr)


def quiet_library_bars(as_json: bool = False) -> None:
    """Turn the ML libraries' own bars off where ours would be off (stderr not a terminal,
    or --json), before they are imported: otherwise a log of `train sft` holds hundreds of
    their half-lines. A variable the user set is left as it is."""
    if not progress_wanted(as_json):
        for name in LIBRARY_SWITCHES:
            os.environ.setdefault(name, "1")
