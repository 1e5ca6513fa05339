"""The connection settings a new user gets wrong, checked before any request is sent.

Why: a URL without a scheme or a CA path with a typo is not a cluster that is down, yet
the clients treat both as connection failures: the retry policy then spends seconds on
attempts that cannot succeed and ends in a client's repr. Checked here first, each is
one line naming the variable (or flag) and the value at fault, at once.
"""

from __future__ import annotations

import ssl
from pathlib import Path
from urllib.parse import urlsplit

from cogr_search.errors import CogrError

URL_SOURCE = "COGR_CLUSTER_URL (or --cluster-url)"
CA_VARIABLE = "COGR_CLUSTER_CA_CERTS"


def check_url(url: str, source: str = URL_SOURCE) -> str:
    """`url` when it is an http:// or https:// URL with a host; else a one-line refusal
    naming where it came from (`localhost:9200` parses as scheme `localhost`, no host)."""
    parts = urlsplit(url)
    if parts.scheme in ("http", "https") and parts.hostname:
        return url
    bare = url.split("://", 1)[-1].lstrip("/")
    raise CogrError(f"{source} {url!r} is not an http:// or https:// URL: use http://{bare} "
                    f"(https://{bare} for a secured cluster)")


def check_ca_certs(path: Path | None) -> str | None:
    """The CA file as the clients take it, once it is known to be a readable PEM file
    holding a certificate; a one-line refusal naming COGR_CLUSTER_CA_CERTS otherwise."""
    if path is None:
        return None
    if not path.is_file():
        what = "is a folder, not a PEM file" if path.is_dir() else "no such file"
        raise CogrError(f"{CA_VARIABLE}={path}: {what} (it names the CA certificate, PEM, that signed the "
                        "cluster's certificate)")
    try:
        ssl.create_default_context(cafile=str(path))
    except ssl.SSLError as err:  # an OSError too: caught first
        raise CogrError(f"{CA_VARIABLE}={path}: not a PEM CA certificate ({err.reason or err}); it names the CA "
                        "certificate that signed the cluster's certificate") from None
    except OSError as err:
        raise CogrError(f"{CA_VARIABLE}={path}: cannot read it ({err.strerror or err})") from None
    return str(path)
