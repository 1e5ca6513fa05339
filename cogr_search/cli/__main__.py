"""`python -m cogr_search.cli` runs the same command as the `cogr-search` script."""

from cogr_search.cli.main import cli

cli()
