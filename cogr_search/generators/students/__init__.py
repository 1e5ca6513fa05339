"""Students: fast, non-autoregressive keyword expanders distilled from a run's LLM
generators (DESIGN.md section 5), one per side.

Torch-free on purpose: a serving or sync host loads a student with numpy and the
classifier's wheel only. `distill` fits them from a round's keyword files, `store`
saves and loads them (`round-<r>/students/v1/`), `model` applies one, `featurizer`
turns text into sparse tf-idf n-grams, `backends` wraps the multi-label classifiers.
"""
