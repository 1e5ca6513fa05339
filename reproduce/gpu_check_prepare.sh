#!/usr/bin/env bash
# Run HERE (no GPU needed), in the repository root, before reproduce/gpu_check.sh runs on a
# GPU machine: fills .gpu/ (git-ignored through .git/info/exclude) with what that machine
# lacks, to be carried with the working tree (64 MiB in all):
#   .gpu/wheels/      cp312 manylinux wheels of the Python packages missing there
#                     (its image has torch, accelerate, peft, numpy, pandas, pyarrow, but an older
#                     huggingface_hub without httpx2, and older click, regex, typing_extensions;
#                     /work/.library/device/KINDS.md), pinned to this venv's versions
#   .gpu/tiny-model/  a randomly initialised 4-block model with the CPU model's tokenizer
#                     (no download possible there)
# vLLM (~400 MB with its CUDA kernels) does not fit a carry: the vLLM tests skip there with
# their reason unless the machine has vLLM.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
PY=${PY:-.venv/bin/python}
EXCLUDE=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$EXCLUDE")"
grep -qx '/.gpu/' "$EXCLUDE" 2>/dev/null || echo '/.gpu/' >> "$EXCLUDE"
rm -rf .gpu && mkdir -p .gpu/wheels
pins=$("$PY" -m pip list --format=freeze 2>/dev/null | grep -i -E '^(trl|datasets|dill|multiprocess|fsspec|huggingface[-_]hub|transformers|tokenizers|pydantic|pydantic[-_]core|pydantic[-_]settings|annotated[-_]types|typing[-_]inspection|python[-_]dotenv|tenacity|opensearch[-_]py|events|xxhash|httpx2|httpcore2|truststore|typing[-_]extensions|click|regex)==')
# shellcheck disable=SC2086
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .gpu/wheels $pins
PYTHONPATH=$PWD "$PY" -c "
from pathlib import Path
from cogr_search.generators.model_cache import build_random_model, ensure_default_model
import torch
from transformers import AutoModelForCausalLM
folder = build_random_model(Path('.gpu/tiny-model'), ensure_default_model())
# bf16 halves the carry (the GPU trains in bf16 anyway)
AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.bfloat16).save_pretrained(str(folder))
"
du -sh .gpu/wheels .gpu/tiny-model
