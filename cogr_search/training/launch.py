"""`--processes N`: start the same command in N data-parallel processes through
accelerate's launcher (torch elastic underneath: NCCL on GPUs, gloo on CPU), as
`accelerate launch --num_processes N -m cogr_search.cli ...` would.

Why own the launch at all: a person should not need to know the launcher's flags to
use a GPU node, and a failed rank must end the run with one line that names it (torch
elastic stops the other ranks, then prints a page of tables and tracebacks).
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Sequence

from cogr_search.errors import CogrError
import signal
from cogr_search.settings import load_settings

LAUNCHED_ENV = "COGR_LAUNCHED_PROCESSES"
"""Set in the launched processes (`Settings.launched_processes`): the flag they inherited
must not launch again."""


def should_launch(processes: int) -> bool:
    """Whether this call must start the processes: more than one asked for, and not
    already running under a launcher (accelerate launch, torchrun, `--processes`)."""
    return processes > 1 and "WORLD_SIZE" not in os.environ and load_settings().launched_processes is None


def launch(processes: int, argv: Sequence[str]) -> None:
    """Run `python -m cogr_search.cli <argv>` in `processes` processes and wait; a failed
    rank becomes one `CogrError` naming it and its exit status (the others are stopped)."""
    from accelerate.commands.launch import launch_command, launch_command_parser  # heavy: torch, accelerate, off the CLI's start
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError  # heavy: torch, off the CLI's start

    args = launch_command_parser().parse_args([
        "--multi_gpu",  # torch elastic's multi-process launcher; accelerate falls back to gloo without GPUs
        "--num_processes", str(processes),
        "--num_machines", "1",
        "--mixed_precision", "no",  # the trainers pick bf16 from the run's config, not the launcher
        "--dynamo_backend", "no",
        "--main_process_port", str(_free_port()),
        "--monitor_interval", "1",
        "-m", "cogr_search.cli", *argv,
    ])
    logging.getLogger("torch.distributed.elastic").setLevel(logging.CRITICAL)
    os.environ.update({LAUNCHED_ENV: str(processes)})  # read by the launched processes' settings
    try:
        launch_command(args)
    except ChildFailedError as err:
        rank, failure = _root_failure(err.failures)
        raise CogrError(
            f"rank {rank} of {processes} failed ({_describe(failure.exitcode)}); the other ranks were stopped. "
            "Run the same command again to resume (with any --processes)"
        ) from None
    finally:
        os.environ.pop(LAUNCHED_ENV, None)


def _root_failure(failures: dict) -> tuple[int, object]:
    """The rank whose failure ended the run: one that exited with an error or was killed
    from outside comes before one the launcher itself stopped with SIGTERM, then the
    earliest, then the lowest rank."""
    return min(failures.items(), key=lambda kv: (kv[1].exitcode == -signal.SIGTERM, kv[1].timestamp, kv[0]))


def _describe(exitcode: int) -> str:
    """`exit status 1`, or `killed by SIGKILL` for a negative (signal) status."""
    if exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit status {exitcode}"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def argv_without_processes(argv: Sequence[str]) -> list[str]:
    """The command line with `--processes N` / `--processes=N` taken out."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--processes":
            skip = True
        elif not arg.startswith("--processes="):
            out.append(arg)
    return out
