#!/usr/bin/env bash
# The GPU checks of training, in one short script for a borrowed GPU machine (the device
# `run` tool), run in the repository root with .gpu/ carried (reproduce/gpu_check_prepare.sh
# fills it here first). Under 6 minutes; logs go to $OUT (at most 8 files):
#   env.txt             GPUs, torch / transformers / trl / accelerate / vllm versions
#   test_grpo_vllm.log  tests/test_grpo_vllm.py: one rank with colocated vLLM, and two ranks
#                       where two GPUs exist (each skips with its reason otherwise)
#   sft.log, rl.log     `train sft` then `train rl` (one round) with the tiny random model on
#                       the sample catalog, --processes 2 with two GPUs or more (NCCL puts one
#                       rank on each GPU), --processes 1 on a single GPU
#   manifest.json       the run's manifest (what ran, on how many processes, how long)
#   scale.log           step 3: the same commands at Qwen3-1.7B's shape (random weights):
#                       `train sft` on 64 items, then `bench sft` and `bench rl` (JSON)
#   summary.txt         one line per check: ok / FAIL / skipped, with the reason
# COGR_GPU_CHECK_ON_CPU=1 rehearses it on a CPU machine, with a small shape for step 3.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-check}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
summary() { echo "$*" | tee -a "$OUT/summary.txt"; }
if [ ! -d .gpu/wheels ] || [ ! -d .gpu/tiny-model ]; then
    summary "FAIL: .gpu/ missing: run reproduce/gpu_check_prepare.sh here and carry .gpu"; exit 1
fi
# (a rehearsal runs with the venv's python3 first on PATH, which has them all)
if [ "${COGR_GPU_CHECK_ON_CPU:-0}" != 1 ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        .gpu/wheels/*.whl > "$OUT/env.txt" 2>&1 || { summary "FAIL: installing the carried wheels"; exit 1; }
fi
export PYTHONPATH="$PWD:/tmp/site" COGR_HOME=/tmp/cogr-home COGR_TINY_MODEL="$PWD/.gpu/tiny-model"
{
    nvidia-smi -L
    python3 -c "import torch, transformers, trl, accelerate; print('torch', torch.__version__, 'gpus', torch.cuda.device_count(), 'transformers', transformers.__version__, 'trl', trl.__version__, 'accelerate', accelerate.__version__)"
    python3 -c "import vllm; print('vllm', vllm.__version__)" 2>/dev/null || echo "vllm: not installed"
    python3 -m pip list 2>/dev/null | grep -iE '^(pyarrow|pandas|anyio|h11|peft|numpy) '
} >> "$OUT/env.txt" 2>&1
GPUS=$(python3 -c "import torch; print(torch.cuda.device_count())" 2>/dev/null || echo 0)
if [ "${COGR_GPU_CHECK_ON_CPU:-0}" = 1 ]; then
    SHAPE_DIMS="64,128,2,4,2,16"   # a rehearsal: hidden, intermediate, layers, heads, KV heads, head dim
else
    [ "$GPUS" -ge 1 ] || { summary "FAIL: no CUDA GPU visible"; exit 1; }
    SHAPE_DIMS="2048,6144,28,16,8,128"   # Qwen3-1.7B (its config.json)
fi

# 1. GRPO with vLLM rollouts: one rank, and two ranks colocated (two GPUs)
timeout 240 python3 -m pytest -q -rs -p no:cacheprovider -o addopts="" tests/test_grpo_vllm.py \
    > "$OUT/test_grpo_vllm.log" 2>&1
rc=$?
summary "test_grpo_vllm: exit $rc: $(grep -E 'passed|failed|skipped|error' "$OUT/test_grpo_vllm.log" | tail -1)"
grep '^SKIPPED' "$OUT/test_grpo_vllm.log" | sed 's/^/  /' | tee -a "$OUT/summary.txt"

# 2. train sft + rl on the GPU, data-parallel where there are two GPUs
N=$(( GPUS >= 2 ? 2 : 1 ))
[ "$N" -eq 2 ] || summary "train: one GPU, so --processes 1 (two ranks need two GPUs under NCCL)"
RUNS=/tmp/gpu-runs
SAMPLE=$(python3 -c "from cogr_search.data import sample_catalog_path; print(sample_catalog_path())")
timeout 150 python3 -m cogr_search.cli train sft --data "$SAMPLE" --run gpu --runs-dir "$RUNS" \
    --model .gpu/tiny-model --max-items 16 --max-queries 16 --val-fraction 0.25 --max-steps 2 --batch-size 4 \
    --item-keywords 6 --top-n 6 --max-length 128 --gen-batch-size 16 --max-new-tokens 24 --quiet \
    --processes "$N" > "$OUT/sft.log" 2>&1
rc=$?
summary "train sft --processes $N: exit $rc: $(grep -v '^\s*$' "$OUT/sft.log" | tail -1)"
if [ "$rc" -eq 0 ]; then
    timeout 180 python3 -m cogr_search.cli train rl --run gpu --runs-dir "$RUNS" --rounds 1 --query-steps 2 \
        --item-steps 2 --num-generations 2 --prompts-per-step 2 --max-completion-length 24 --gen-batch-size 16 \
        --max-new-tokens 24 --quiet --processes "$N" > "$OUT/rl.log" 2>&1
    rc=$?
    summary "train rl --processes $N: exit $rc: $(grep -v '^\s*$' "$OUT/rl.log" | tail -1)"
fi
cp "$RUNS/gpu/manifest.json" "$OUT/manifest.json" 2>/dev/null || true
python3 - "$RUNS/gpu/manifest.json" <<'PY' 2>/dev/null | tee -a "$OUT/summary.txt"
import json, sys
steps = json.load(open(sys.argv[1]))["steps"]
for name, info in steps.items():
    if "processes" in info:
        print(f"  {name}: processes {info['processes']}, {info.get('seconds')} s"
              + (f", used_vllm {info['used_vllm']}" if "used_vllm" in info else ""))
PY

# 3. Step times at Qwen3-1.7B's shape: random weights (nothing can be downloaded there), the
# CPU model's 49k-token vocabulary instead of Qwen's 152k, transformers' generate (no vLLM).
# A random model rarely stops early, so every completion runs to its cap: an upper bound.
SHAPE=/tmp/qwen3-1.7b-shape
timeout 120 python3 - "$SHAPE" "$COGR_TINY_MODEL" "$SHAPE_DIMS" <<'PY' > "$OUT/scale.log" 2>&1
import sys
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, Qwen3Config
folder, tokenizer_from, dims = sys.argv[1], sys.argv[2], [int(d) for d in sys.argv[3].split(",")]
tokenizer = AutoTokenizer.from_pretrained(tokenizer_from)
hidden, intermediate, layers, heads, kv_heads, head_dim = dims
config = Qwen3Config(vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=intermediate,
                     num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
                     head_dim=head_dim, max_position_embeddings=4096, tie_word_embeddings=True,
                     bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                     pad_token_id=tokenizer.pad_token_id)
with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
print(f"shape {dims}: {sum(p.numel() for p in model.parameters()) / 1e9:.2f} B parameters", flush=True)
model.save_pretrained(folder)
tokenizer.save_pretrained(folder)
PY
rc=$?
summary "step 3 model at shape $SHAPE_DIMS: exit $rc: $(grep parameters "$OUT/scale.log")"
if [ "$rc" -eq 0 ]; then
    SECONDS=0
    timeout 200 python3 -m cogr_search.cli train sft --data "$SAMPLE" --run shape --runs-dir "$RUNS" \
        --model "$SHAPE" --max-items 64 --max-queries 32 --val-fraction 0.25 --max-steps 3 --batch-size 8 \
        --item-keywords 10 --top-n 15 --max-length 256 --gen-batch-size 64 --max-new-tokens 64 --quiet \
        >> "$OUT/scale.log" 2>&1
    summary "step 3 train sft (64 items, 3 steps a side): exit $? in ${SECONDS} s"
    SECONDS=0
    echo "== bench sft" >> "$OUT/scale.log"
    timeout 120 python3 -m cogr_search.cli bench sft --run shape --runs-dir "$RUNS" --side item --steps 4 \
        --precision bf16,auto --json >> "$OUT/scale.log" 2>&1
    summary "step 3 bench sft: exit $? in ${SECONDS} s"
    SECONDS=0
    echo "== bench rl" >> "$OUT/scale.log"
    timeout 240 python3 -m cogr_search.cli bench rl --run shape --runs-dir "$RUNS" --steps 3 --num-generations 8 \
        --prompts-per-step 8 --max-completion-length 64 --json >> "$OUT/scale.log" 2>&1
    summary "step 3 bench rl (8 prompts x 8 completions x 64 tokens a step): exit $? in ${SECONDS} s"
fi
