"""cogr-search: co-evolving generative keyword retrieval (CoGR) on OpenSearch.

The core modules (`keywords`, `shadow`, `metrics`, `data`) import neither torch nor
opensearch-py, so a serving or sync host needs no ML stack; see docs/architecture.md.
"""

import os

__version__ = "0.1.0"

# Every model the package loads is a local folder (DESIGN.md section 4: no code path may
# need a download), so the Hugging Face hub is offline for the whole package, set once
# here before any of its modules imports huggingface_hub (which reads these at import).
# setdefault: a user who wants the hub in the same process can still say so.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
