"""Keyword generators: prompt templates (data), generation backends (transformers, vLLM),
resumable bulk generation into keyword files, and the default CPU model cache.

Importing this package loads nothing heavy; torch, transformers and vLLM are imported by
the modules that need them, when they are used."""
