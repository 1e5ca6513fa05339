"""A training run on disk: its typed config, serving spec, presets, steps and keyword files."""
