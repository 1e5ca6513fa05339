"""The settings of a sync, apart from the sync itself.

Why a module of its own: the CLI builds its `sync` and `bench sync` flags from this model
when it starts, and every command starts faster when that does not import the cluster
clients (opensearch-py, elasticsearch-py) and the shadow index behind `cluster.sync`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from cogr_search.keywords import DEFAULT_K_MAX

DEFAULT_LEASE_S = 60.0
"""How long a sync's lease on its alias lasts unless renewed (the lease renews it well before)."""

Missing = Literal["refuse", "keep", "title-only"]


class SyncConfig(BaseModel):
    """How a sync treats the catalog and the versions it leaves; the `sync` flags' defaults."""

    model_config = ConfigDict(frozen=True)

    k_max: int = Field(DEFAULT_K_MAX, ge=1, description="Keywords per item kept at serving time.")
    keep: int = Field(3, ge=1, description="Versions to keep for rollback.")
    missing: Missing = Field(
        "refuse",
        description="Items without keywords: refuse the sync, keep the previous version's keywords, or title only.",
    )
    unknown_tolerance: float = Field(
        0.01, ge=0, le=1, description="Share of keyword ids allowed to be unknown to the index (listed, then ignored)."
    )
    chunk_size: int = Field(1000, ge=1, le=10_000, description="Documents per _bulk request.")
    in_flight: int = Field(2, ge=1, le=16, description="_bulk requests sent at once while copying.")
    lease_s: float = Field(DEFAULT_LEASE_S, gt=0, description="Lease of the sync on its alias, renewed while it runs.")
    catch_up_rounds: int = Field(5, ge=0, description="Catch-ups while writes continue, before the final freeze.")
    freeze_below: int = Field(
        1000, ge=0, description="Freeze once a catch-up found at most this many changed documents."
    )
