"""Which weights a CPU-capped training run may change, on the real CPU model: the top N
decoder blocks for full fine-tuning (`train_layers`), adapters in the top N blocks for
LoRA (`lora_layers`). A step must leave everything below untouched, bit for bit."""

from __future__ import annotations

import re

import pytest
import torch

from cogr_search.cli.train_cmds import rl_config_from
from cogr_search.generators.model_cache import ensure_default_model
from cogr_search.training.checkpoints import freeze_lower_layers, lora_config
from cogr_search.runs.config import GRPOSideConfig

pytestmark = pytest.mark.model

BLOCKS = 30  # SmolLM2-135M
# r x (in + out) for each linear layer of a block: hidden 576, 3 kv heads x 64, MLP 1536
ADAPTER_PER_BLOCK = 16 * (2 * (576 + 576) + 2 * (576 + 192) + 3 * (576 + 1536))


def _model():  # noqa: ANN202 - a transformers model
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(ensure_default_model()), dtype=torch.float32)


def _one_step(model) -> None:  # noqa: ANN001
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(trainable, lr=1.0)
    ids = torch.tensor([[1, 2, 3, 4, 5, 6, 7, 8]])
    model(input_ids=ids, labels=ids).loss.backward()
    optimizer.step()


def _changed_blocks(before: dict, after) -> set[int]:  # noqa: ANN001
    changed = set()
    for name, value in after.state_dict().items():
        if not torch.equal(before[name], value):
            match = re.search(r"layers\.(\d+)\.", name)
            changed.add(int(match.group(1)) if match else -1)
    return changed


def test_lora_layers_puts_adapters_in_the_top_blocks_only() -> None:
    from peft import get_peft_model

    model = _model()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    peft_model = get_peft_model(model, lora_config(GRPOSideConfig(lora=True, lora_layers=8), model))
    adapters = [name for name, _ in peft_model.named_parameters() if "lora_A" in name]
    adapted = {int(re.search(r"layers\.(\d+)\.", name).group(1)) for name in adapters}
    assert adapted == set(range(BLOCKS - 8, BLOCKS))
    assert sum(p.numel() for p in peft_model.parameters() if p.requires_grad) == 8 * ADAPTER_PER_BLOCK == 1_302_528
    for _ in range(2):  # LoRA's B starts at zero: the first step moves B, the second the merged weights
        _one_step(peft_model)
    merged = peft_model.merge_and_unload()
    assert _changed_blocks(before, merged) == set(range(BLOCKS - 8, BLOCKS))


def test_lora_without_a_cap_adapts_every_block() -> None:
    from peft import get_peft_model

    model = _model()
    peft_model = get_peft_model(model, lora_config(GRPOSideConfig(lora=True), model))
    assert sum(p.numel() for p in peft_model.parameters() if p.requires_grad) == BLOCKS * ADAPTER_PER_BLOCK


def test_train_layers_freezes_the_lower_blocks_and_the_embeddings() -> None:
    model = _model()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    trainable = freeze_lower_layers(model, 2)
    assert trainable == sum(p.numel() for b in model.model.layers[-2:] for p in b.parameters()) + 576  # + final norm
    _one_step(model)
    assert _changed_blocks(before, model) == {BLOCKS - 2, BLOCKS - 1, -1}  # -1: the final norm, outside the blocks
    assert torch.equal(before["model.embed_tokens.weight"], model.model.embed_tokens.weight)


def test_lora_layers_flag_sets_both_sides() -> None:
    config = rl_config_from({}, {"lora": True, "lora_layers": 8})
    assert config.query.lora_layers == config.item.lora_layers == 8
    assert rl_config_from({}, {}).query.lora_layers == 0
