"""Two data-parallel processes train the same model as one (issue 35, part 3).

The real CPU model (SmolLM2-135M-Instruct), its top 2 blocks trained in float32: 2 SFT
steps, then 2 GRPO steps, once in one process and once in two (gloo, started by torch's
launcher); both GRPO runs start from the single process's SFT weights, so the GRPO
comparison holds GRPO's own differences only (its rollouts included: other completions
would move the weights by an update's size). Checked: (a) the two-process weights equal the
single process's within the tolerance below, while training moved them far more than
that; (b) the two ranks hold identical weights (their state digests, as the manifest
records them, are equal).

Tolerance. What may differ between N processes and one is the order of float
reductions: one process sums a weight's gradient over the step's B x L token terms in
one pass; N processes sum N partial sums, then all-reduce them. Summing n fp32 terms
in two orders gives results within 2 gamma_n sum|x_i|, gamma_n = n u / (1 - n u),
u = 2^-24; relative to the gradient that is delta = 2 n u (for a sum without heavy
cancellation). AdamW turns a gradient into an update lr * m_hat / (sqrt(v_hat) + eps),
homogeneous of degree 0 in the gradients: a relative error delta in both moments moves
the update by at most 2 delta of its size, so step t moves the weights apart by at most
2 delta ||update_t||. Over T steps (the second-order term, the gradient at weights that
already differ by that much, is smaller again by the same factor):

    ||w_N - w_1||_2  <=  2 delta * sum_t ||update_t||_2  <=  2 delta * T * lr * sqrt(P)

with |m_hat / sqrt(v_hat)| <= 1 per weight in the first steps and P trainable weights,
plus one rounding of each weight per step (T ulp(w) per weight, the last term below).
Here n = the tokens of one optimizer step (batch x max_length), T = 2, lr = 5e-4 for
SFT and 1e-5 for GRPO. A component whose gradient cancels to near zero has a larger
relative error but an update bounded by its eps term, which the norm absorbs. A real
difference in training (other data order, another loss normalisation, other rollouts)
moves the weights by the size of an update, orders of magnitude above this bound: the
test also asserts the weights moved by more than 100 x the bound.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.model, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
FP32_UNIT = 2.0 ** -24
SFT_STEPS, SFT_BATCH, SFT_LENGTH, SFT_LR = 2, 4, 96, 5e-4
GRPO_STEPS, GRPO_PROMPTS, GRPO_GENERATIONS, GRPO_LENGTH, GRPO_LR = 2, 2, 2, 12, 1e-5
TRAIN_LAYERS = 2


def _title_reward(prompts, completions, title, **_):  # noqa: ANN001, ANN201 - trl's reward shape
    """Share of the item title's words in the completion (continuous, so a group's two
    completions almost always differ and GRPO has something to learn)."""
    scores = []
    for completion, name in zip(completions, title):
        text = completion[0]["content"] if isinstance(completion, list) else str(completion)
        words = set(name.lower().split())
        scores.append(len(words & set(text.lower().split())) / max(1, len(words)) + 0.01 * len(text.split()))
    return scores


def _worker(out: Path, grpo_start: Path | None) -> None:
    """One rank of the training run (started by torch's launcher, or alone); GRPO starts
    from `grpo_start` (another run's SFT weights), else from this run's."""
    from cogr_search.data import load_dataset, sample_catalog_path
    from cogr_search.generators.model_cache import ensure_default_model
    from cogr_search.generators.prompts import load_prompts
    from cogr_search.generators.threads import request_threads
    from cogr_search.runs.config import GRPOSideConfig, SFTConfig
    from cogr_search.training.grpo import train_grpo
    from cogr_search.ranks import join
    from cogr_search.training.sft import SFTExample, train_sft

    request_threads(1)
    ranks = join()
    dataset = load_dataset(sample_catalog_path())
    items = [dataset.items[i] for i in sorted(dataset.items)[: SFT_BATCH * SFT_STEPS]]
    prompts = load_prompts()
    examples = [SFTExample(prompts.item_messages(it.title, it.description, 6),
                           "\n".join(f"{k + 1}. {w}" for k, w in enumerate(it.title.lower().split()[:6])))
                for it in items]
    sft = train_sft(ensure_default_model(), examples, out / "sft", SFTConfig(
        learning_rate=SFT_LR, max_steps=SFT_STEPS, batch_size=SFT_BATCH, max_length=SFT_LENGTH,
        warmup_ratio=0.0, train_layers=TRAIN_LAYERS, precision="fp32", save_steps=100, logging_steps=1, seed=3,
    ), progress=False, ranks=ranks)
    rows = [{"prompt": prompts.item_messages(it.title, it.description, 6), "title": it.title}
            for it in items[: GRPO_PROMPTS * GRPO_STEPS]]
    grpo = train_grpo(grpo_start or out / "sft", rows, _title_reward, out / "grpo", GRPOSideConfig(
        learning_rate=GRPO_LR, max_steps=GRPO_STEPS, num_generations=GRPO_GENERATIONS,
        prompts_per_step=GRPO_PROMPTS, max_completion_length=GRPO_LENGTH, train_layers=TRAIN_LAYERS,
        precision="fp32", save_steps=100, seed=3,
    ), progress=False, use_vllm=False, ranks=ranks)
    if ranks.is_main:
        (out / "result.json").write_text(json.dumps({"sft": sft.as_dict(), "grpo": grpo.as_dict()}))


def _train(out: Path, processes: int, grpo_start: Path | None = None) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO), "COGR_TORCH_THREADS": "1", "COGR_RANK_TIMEOUT_S": "300",
           "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(processes),
               "--master-port", str(_free_port()), __file__, str(out), str(grpo_start or "")]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads((out / "result.json").read_text())


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _weights(folder: Path) -> dict:
    from safetensors.torch import load_file

    return {name: t.double() for path in sorted(folder.glob("*.safetensors")) for name, t in load_file(path).items()}


def _distance(a: dict, b: dict) -> float:
    return math.sqrt(sum(float(((a[k] - b[k]) ** 2).sum()) for k in a))


def _bound(tokens: int, steps: int, lr: float, weights: dict, moved: set[str]) -> float:
    """The docstring's bound: 2 delta T lr sqrt(P), delta = 2 n u, plus T ulps of each
    trained weight (in the 2-norm)."""
    trained = sum(weights[k].numel() for k in moved)
    delta = 2 * tokens * FP32_UNIT
    ulps = math.sqrt(sum(float((weights[k].abs() * 2 * FP32_UNIT).pow(2).sum()) for k in moved))
    return 2 * delta * steps * lr * math.sqrt(trained) + steps * ulps


def test_two_processes_train_the_weights_of_one_within_the_reduction_order_bound(tmp_path: Path) -> None:
    from cogr_search.generators.model_cache import ensure_default_model

    one = _train(tmp_path / "one", 1)
    two = _train(tmp_path / "two", 2, grpo_start=tmp_path / "one" / "sft")  # GRPO alone compared

    # (b) every rank ends with the same weights, recorded by each rank
    for phase in ("sft", "grpo"):
        digests = two[phase]["rank_weights_sha256"]
        assert len(digests) == 2 and digests[0] == digests[1], (phase, digests)
        assert len(one[phase]["rank_weights_sha256"]) == 1

    base = _weights(ensure_default_model())
    for phase, start, tokens, steps, lr in (
        ("sft", base, SFT_BATCH * SFT_LENGTH, SFT_STEPS, SFT_LR),
        # GRPO's tokens: every completion with its prompt (~128 tokens)
        ("grpo", _weights(tmp_path / "one" / "sft"), GRPO_PROMPTS * GRPO_GENERATIONS * (GRPO_LENGTH + 128),
         GRPO_STEPS, GRPO_LR),
    ):
        single, double = _weights(tmp_path / "one" / phase), _weights(tmp_path / "two" / phase)
        moved = {k for k in single if not bool((single[k] == start[k]).all())}
        assert moved, f"{phase}: training changed no weight"
        bound = _bound(tokens, steps, lr, single, moved)
        apart, travelled = _distance(single, double), _distance(single, start)
        print(f"{phase}: |w2 - w1| = {apart:.3e}, bound {bound:.3e}, |w1 - w0| = {travelled:.3e}, "
              f"identical tensors {sum(bool((single[k] == double[k]).all()) for k in single)}/{len(single)}")
        # (a) the same model, up to the order of float reductions
        assert apart <= bound, (phase, apart, bound)
        assert travelled > 100 * bound, (phase, travelled, bound)  # the bound is far below a real difference


if __name__ == "__main__":
    _worker(Path(sys.argv[1]), Path(sys.argv[2]) if sys.argv[2] else None)
