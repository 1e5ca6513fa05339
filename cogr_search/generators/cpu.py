"""What this CPU offers, from its /proc/cpuinfo flags: bf16 kernels (AVX-512 BF16, AMX)
decide the transformers backend's dtype, AVX-512 whether `auto` picks vLLM's CPU build."""

from __future__ import annotations


def cpu_flag(*names: str) -> bool:
    """Whether /proc/cpuinfo lists any of the flags (False where it cannot be read)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="ignore") as handle:
            for line in handle:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return any(name in flags for name in names)
    except OSError:
        return False
    return False
