"""How many CPU threads torch may use: an explicit value, else the process's request.

Why this exists: on a machine whose cores are shared with other busy processes, torch's
OpenMP threads spin at barriers waiting for each other, and two threads on two
contended cores decode ~8x *slower* than one (measured: 5 vs 42 tokens/s, see
benchmarks/generate.md). One thread per process is then the right setting; on an idle
machine the torch default (one thread per core) is faster.

The request is process-wide, like torch's own setting: the CLI makes it once from
`COGR_TORCH_THREADS` (`request_threads`), and every model this process opens later
(SFT, GRPO, generation) applies it, without reading the environment itself.
"""

from __future__ import annotations

_requested: int | None = None


def request_threads(threads: int | None) -> None:
    """Ask every model opened later in this process to use `threads` (None: torch's default).
    Cheap: torch is not imported until a model applies it."""
    global _requested
    _requested = threads


def requested_threads(explicit: int | None = None) -> int | None:
    """The thread count asked for: the argument first, then the process's request, or None."""
    return explicit or _requested


def configure_torch_threads(explicit: int | None = None) -> int:
    """Apply the requested thread count to torch (if any); returns the count in effect."""
    import torch  # heavy: torch, off the CLI's start

    threads = requested_threads(explicit)
    if threads:
        torch.set_num_threads(threads)
    return torch.get_num_threads()
