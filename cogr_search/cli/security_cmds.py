"""`cogr-search security roles --print|--apply --alias A`: the least-privilege roles of an alias."""

from __future__ import annotations

import json

import click

from cogr_search.cli.options import opensearch_url, settings_from
from cogr_search.cluster.security_roles import apply_roles, roles_for
from cogr_search.connect import connect


@click.group()
def security() -> None:
    """Roles a service account needs for cogr-search on a secured cluster (docs/security.md)."""


@security.command("roles")
@click.option("--alias", "alias", required=True, help="The alias the roles are for (its versions are ALIAS-*).")
@click.option("--print", "show", is_flag=True, help="Print the role definitions (the engine's REST bodies).")
@click.option("--engine", type=click.Choice(["opensearch", "elasticsearch"]), default=None,
              help="With --print: whose roles (default: $COGR_ENGINE, else opensearch); --apply asks the cluster.")
@click.option("--apply", "apply", is_flag=True, help="Put the roles into the cluster (needs a security admin).")
@click.option("--writer-user", default=None, help="With --apply: map this user to the writer role.")
@click.option("--reader-user", default=None, help="With --apply: map this user to the reader role.")
@opensearch_url
def roles(alias: str, show: bool, engine: str | None, apply: bool, writer_user: str | None, reader_user: str | None,
          opensearch_url: str | None) -> None:
    """cogr_writer_ALIAS (ingest, sync, index create) and cogr_reader_ALIAS (search, eval), for the
    OpenSearch security plugin or Elasticsearch's x-pack security."""
    if show == apply:
        raise click.UsageError("give exactly one of --print and --apply")
    if show:
        configured = settings_from().engine
        chosen = engine or (configured if configured != "auto" else "opensearch")
        click.echo(json.dumps(roles_for(alias, chosen), indent=2))
        return

    users = {k: v for k, v in (("writer", writer_user), ("reader", reader_user)) if v}
    written = apply_roles(connect(settings_from(opensearch_url=opensearch_url)), alias, users,
                          notify=lambda message: click.echo(message, err=True))
    mapped = ", ".join(f"{user} -> cogr_{kind}_{alias}" for kind, user in users.items())
    click.echo(f"roles {', '.join(written)} applied" + (f"; mapped {mapped}" if mapped else ""))
