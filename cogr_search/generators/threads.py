"""How many CPU threads torch may use, from `COGR_TORCH_THREADS` or an explicit value.

Why this exists: on a machine whose cores are shared with other busy processes, torch's
OpenMP threads spin at barriers waiting for each other, and two threads on two
contended cores decode ~8x *slower* than one (measured: 5 vs 42 tokens/s, see
benchmarks/generate.md). One thread per process is then the right setting; on an idle
machine the torch default (one thread per core) is faster.
"""

from __future__ import annotations





def requested_threads(explicit: int | None = None) -> int | None:
    """The thread count asked for (argument first, then the environment), or None."""
    if explicit:
        return explicit
    from cogr_search.settings import load_settings

    return load_settings().torch_threads  # COGR_TORCH_THREADS, validated there (a positive integer)


def configure_torch_threads(explicit: int | None = None) -> int:
    """Apply the requested thread count to torch (if any); returns the count in effect."""
    import torch

    threads = requested_threads(explicit)
    if threads:
        torch.set_num_threads(threads)
    return torch.get_num_threads()
