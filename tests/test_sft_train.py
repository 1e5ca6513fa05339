"""SFT with trl on the real CPU model: it teaches the raw model the keyword list format,
LoRA adapters are merged on save, and a crash in the middle of training resumes from the
trainer's last checkpoint."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from transformers import TrainerCallback

from cogr_search.generators.backend import GREEDY
from cogr_search.generators.backend_choice import load_backend
from cogr_search.generators.model_cache import ensure_default_model
from cogr_search.generators.prompts import assistant_text, load_prompts
from cogr_search.runs.config import SFTConfig
from cogr_search.training.sft import SFTExample, train_sft

pytestmark = pytest.mark.model


class CrashAtStep(TrainerCallback):
    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001, ANN201 - transformers API
        if state.global_step == self.step:
            raise RuntimeError(f"simulated crash at step {self.step}")
        return control


def _examples() -> list[SFTExample]:
    prompts = load_prompts()
    rows = [("Oak dining table", ["oak table", "dining table"]), ("Blue velvet chair", ["velvet chair", "blue chair"]),
            ("Wool area rug 8x10", ["area rug", "wool rug"]), ("Ceramic table lamp", ["table lamp", "ceramic lamp"])]
    return [SFTExample(prompts.item_messages(title, "", 10), assistant_text(kw)) for title, kw in rows]


@pytest.mark.slow
def test_lora_sft_resumes_after_a_crash_and_saves_a_plain_model(
    tmp_path: Path,
) -> None:
    config = SFTConfig(lora=True, lora_r=4, lora_alpha=8, max_steps=3, batch_size=2, max_length=96,
                       save_steps=1, learning_rate=1e-3, logging_steps=1)
    out = tmp_path / "item"
    with pytest.raises(RuntimeError, match="simulated crash at step 2"):
        train_sft(ensure_default_model(), _examples(), out, config, progress=False, callbacks=[CrashAtStep(2)])
    assert not out.exists()  # no half-saved checkpoint
    assert (tmp_path / "item.work" / "checkpoint-1").is_dir()

    result = train_sft(ensure_default_model(), _examples(), out, config, progress=False)
    assert result.resumed_from == "checkpoint-1"
    assert result.steps == 3 and len(result.losses) == 3  # the history of step 1 came back with the checkpoint
    names = {p.name for p in out.iterdir()}
    assert "model.safetensors" in names and "config.json" in names
    assert not any(name.startswith("adapter") for name in names)  # LoRA merged into the weights
    assert not (tmp_path / "item.work").exists()


def _is_keyword_list(text: str) -> bool:
    """Three or more comma-separated pieces of at most four words each (the last piece may
    be cut by the token budget): the list format, not prose that happens to hold commas."""
    pieces = [p.strip() for p in text.split(",") if p.strip()]
    return len(pieces) >= 3 and sum(len(p.split()) <= 4 for p in pieces) >= 0.8 * len(pieces)


def _item_outputs(model: Path, titles: list[str]) -> list[str]:
    prompts = load_prompts()
    params = dataclasses.replace(GREEDY, max_new_tokens=32)
    with load_backend(model, "transformers", dtype="float32") as backend:
        return [g.text for g in backend.generate([prompts.item_messages(t, "", 10) for t in titles], params, batch_size=4)]


@pytest.mark.slow
def test_full_sft_teaches_the_raw_model_the_keyword_list_format(tmp_path: Path) -> None:
    """What Phase 1 relies on: the raw CPU model answers an item prompt in prose, and four
    full fine-tuning steps on four examples make it write keyword lists for unseen titles."""
    unseen = ["Walnut coffee table", "Linen sofa", "Brass floor lamp", "Jute doormat"]
    raw = _item_outputs(ensure_default_model(), unseen)
    assert sum(map(_is_keyword_list, raw)) <= 1, raw
    config = SFTConfig(max_steps=4, batch_size=2, max_length=96, learning_rate=5e-4, save_steps=100, logging_steps=1)
    train_sft(ensure_default_model(), _examples(), tmp_path / "item", config, progress=False)
    trained = _item_outputs(tmp_path / "item", unseen)
    assert sum(map(_is_keyword_list, trained)) >= 3, trained


class LinearOutputDtypes(TrainerCallback):
    """Records the dtype of every decoder linear layer's output during training steps."""

    def __init__(self) -> None:
        self.dtypes: set = set()
        self.handles: list = []

    def on_train_begin(self, args, state, control, model=None, **kwargs):  # noqa: ANN001, ANN201 - transformers API
        import torch

        for module in model.modules():
            if isinstance(module, torch.nn.Linear):
                self.handles.append(module.register_forward_hook(lambda _m, _i, out: self.dtypes.add(out.dtype)))
        return control

    def on_train_end(self, args, state, control, **kwargs):  # noqa: ANN001, ANN201
        for handle in self.handles:
            handle.remove()
        return control


@pytest.mark.parametrize(("precision", "expected"), [("bf16", "torch.bfloat16"), ("fp32", "torch.float32")])
def test_precision_sets_the_arithmetic_of_training_steps(
    tmp_path: Path, tiny_model: Path, precision: str, expected: str
) -> None:
    """`precision: bf16` trains under bf16 autocast with float32 weights (what `auto` picks on
    CPUs with native bf16); `fp32` keeps every matmul in float32. The saved weights stay float32."""
    from safetensors import safe_open

    seen = LinearOutputDtypes()
    config = SFTConfig(max_steps=1, batch_size=2, max_length=96, save_steps=100, logging_steps=1, precision=precision)
    train_sft(tiny_model, _examples(), tmp_path / "item", config, progress=False, callbacks=[seen])
    assert {str(d) for d in seen.dtypes} == {expected}
    with safe_open(str(tmp_path / "item" / "model.safetensors"), "pt") as weights:
        assert {str(weights.get_tensor(k).dtype) for k in weights.keys()} == {"torch.float32"}


def test_auto_precision_follows_the_cpu() -> None:
    from cogr_search.generators.hf_backend import cpu_has_fast_bf16
    from cogr_search.training.checkpoints import bf16_training

    assert bf16_training("auto") is cpu_has_fast_bf16()
    assert bf16_training("fp32") is False and bf16_training("bf16") is True
