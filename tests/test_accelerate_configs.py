"""The accelerate configs shipped for an 8-GPU node (docs/training.md) load with
accelerate's own reader, and each asks for the layout the recipe says it does."""

from __future__ import annotations

from importlib.resources import files

import pytest

CASES = {"ddp-8gpu.yaml": "MULTI_GPU", "fsdp-8gpu.yaml": "FSDP", "zero2-8gpu.yaml": "DEEPSPEED"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_shipped_accelerate_config_loads(name: str) -> None:
    from accelerate.commands.config.config_args import ClusterConfig

    path = files("cogr_search") / "resources" / "accelerate" / name
    config = ClusterConfig.from_yaml_file(str(path))
    assert config.num_processes == 8 and config.num_machines == 1
    assert str(config.distributed_type).endswith(CASES[name])
    if name.startswith("fsdp"):
        assert config.fsdp_config["fsdp_version"] == 2
        assert config.fsdp_config["fsdp_state_dict_type"] == "FULL_STATE_DICT"
