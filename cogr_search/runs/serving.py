"""A run's serving spec: the matching settings every consumer of a run must share.

Training rewards keyword sets against a shadow index built with the run's `k_max`,
normalization and prompts. The served index and the served queries must be built the
same way, or the cluster stops being the index that training optimised: a run trained
with `--k-max 20` and served at the default 30 ranks differently from what its rewards
measured. So sync, serve, enrich, eval, search and expand read this one record from the
run (`RunDir.serving_spec`), never a default.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from cogr_search.keywords import NORMALIZATION_VERSION


class ServingSpec(BaseModel):
    """What a round of a run serves with."""

    model_config = ConfigDict(frozen=True)

    run: str
    round: int
    k_max: int = Field(ge=1, description="Keywords kept per set; larger sets are cut to this.")
    normalization: str = Field(NORMALIZATION_VERSION, description="Version of keywords.normalize the run used.")
    prompts_version: str = Field("", description="Version of the prompt templates the generators learned.")
    query_context: str | None = Field(None, description="bm25:K when query prompts show search results.")
    context_index: str | None = Field(None, description="The catalog index those results come from.")
    item_model: str = Field(description="Provenance tag of the item generator (cogr_model in documents).")
    query_model: str = Field(description="Provenance tag of the query generator.")
