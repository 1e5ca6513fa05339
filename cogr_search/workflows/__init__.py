"""Run-aware glue: what joins a run (runs/, generators/) to a cluster (cluster/).

Why a package of its own: cluster/ is the engine adapter that everything else relies on,
and must not know about runs; the code that reads a run's keyword files, opens its
expanders or applies its serving spec to a cluster sits here, above both, so that the
CLI, the demo and the Python API share one copy of each policy:

- `context`: the query generator's search-results context from the catalog index;
- `enrich`: items' keywords from a run's expander, written into an index;
- `round_sync`: which keyword files a round syncs, checked against the run's serving spec
  (`sync --round`, the round syncer of `train`);
- `eval_options`: which `eval` options go together, and the run's k_max.
- `data_subsets`: `data subset`, by seeded queries or to a run's catalog.
"""
