"""A secured local Elasticsearch node (`elasticsearch start --secure`): x-pack security with
TLS on HTTP and transport, the superuser ``admin`` and the reserved ``elastic``, no other user.

The certificates (a CA made for the node, a node certificate for ``localhost`` and
``127.0.0.1``) and the random admin password in ``<home>/admin-password`` (0600) are the
ones `security.py` makes for the secured OpenSearch node; only the engine's settings and
how the users are added differ.

Two users, one password. ``elastic`` gets it the way Elasticsearch's own docs set it: the
keystore's ``bootstrap.password``, which the node writes into the ``.security`` index at its
first start (later starts keep the index's password). ``admin`` is a superuser of the file
realm, whose users need no index, so the admin can log in before that index exists; that
index's ``email`` analyzer comes from the analysis-common module, which the integ-test-zip
lacks, and the project's es-node plugin adds the three components it needs, so native
users, roles and API keys work on the local node. ``bin/elasticsearch-users useradd`` (the
distribution's own tool, run as the node's user with the node's ``ES_PATH_CONF``) writes the
bcrypt hash into ``config/users`` and the role into ``config/users_roles``, as an operator
would. ``admin`` is the name the secured OpenSearch's user has too, so the two nodes'
credentials read alike, and it is the one the node's record and `start` name. The other
built-in users (``kibana_system``, ...) have no password and cannot log in.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from cogr_search.localnode import security
from cogr_search.localnode.engine_lines import ELASTICSEARCH_SECURE, EngineLine, LocalNodeError
from cogr_search.localnode.service_user import NodeUser

SUPERUSER_ROLE = "superuser"
# The file realm's files and the file-based roles: empty in the distribution, the node's own here.
REALM_FILES = ("users", "users_roles", "roles.yml", "role_mapping.yml")


def prepare(home: Path, config: Path, dist: Path) -> list[str]:
    """The node's certificates and realm files in ``config`` (once); return its yml lines."""
    security.node_certificates(home, config)
    security.protect_keys(config)
    for name in REALM_FILES:
        if not (config / name).exists():
            shutil.copyfile(dist / "config" / name, config / name)
    tls = {
        "certificate": "node.pem",
        "key": "node-key.pem",
        "certificate_authorities": f"[{security.CA_NAME}]",
    }
    return [
        "xpack.security.enabled: true",
        "xpack.security.authc.realms.file.file1.order: 0",
        "xpack.security.http.ssl.enabled: true",
        *(f"xpack.security.http.ssl.{key}: {value}" for key, value in tls.items()),
        "xpack.security.transport.ssl.enabled: true",
        # The node certificate names 127.0.0.1 and localhost; the CA is the node's own.
        "xpack.security.transport.ssl.verification_mode: full",
        *(f"xpack.security.transport.ssl.{key}: {value}" for key, value in tls.items()),
    ]


def secure_settings(home: Path) -> dict[str, str]:
    """The keystore entries of a secured node: ``elastic``'s first password, the admin's."""
    return {"bootstrap.password": security.admin_password(home)}


def add_admin(home: Path, dist: Path, config: Path, env: Mapping[str, str], user: NodeUser, engine: EngineLine) -> None:
    """``admin`` as a superuser of the file realm, by ``bin/elasticsearch-users useradd`` run
    as the node's user; the password goes on stdin, never on a command line. An ``admin``
    already there gets the home's password again (``passwd``): a home deleted and made anew
    has a new password, while the node's runtime folder, and its ``users`` file, stay."""
    password = security.admin_password(home)
    if _has_user(config, security.ADMIN):
        _tool(dist, config, env, user, ["passwd", security.ADMIN], stdin=f"{password}\n{password}\n", engine=engine)
    else:
        _useradd(dist, config, env, user, engine, security.ADMIN, password, [SUPERUSER_ROLE])


def _useradd(dist: Path, config: Path, env: Mapping[str, str], user: NodeUser, engine: EngineLine, name: str,
             password: str, roles: list[str]) -> None:
    _tool(dist, config, env, user, ["useradd", name, "-r", ",".join(roles)], stdin=f"{password}\n{password}\n",
          engine=engine)
    if not _has_user(config, name):
        raise LocalNodeError(f"elasticsearch-users useradd {name} wrote no user into {config / 'users'}")
    for realm_file in ("users", "users_roles"):  # password hashes: the node's user only
        (config / realm_file).chmod(0o600)


def _tool(dist: Path, config: Path, env: Mapping[str, str], user: NodeUser, args: list[str], stdin: str = "",
          engine: EngineLine = ELASTICSEARCH_SECURE) -> None:
    """``bin/elasticsearch-users ARGS`` as the node's user on its config folder; one line on failure."""
    tool = dist / "bin" / "elasticsearch-users"
    tool_env = {**env, engine.conf_variable: str(config)}
    if user.home is not None:
        tool_env["HOME"] = str(user.home)
    done = subprocess.run([str(tool), *args], input=stdin, env=tool_env, capture_output=True, text=True,
                          check=False, **user.popen_args())
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or ["(no output)"]
        raise LocalNodeError(f"{tool.name} {' '.join(args[:2])} failed (exit {done.returncode}): {last[0]}")


def _has_user(config: Path, name: str) -> bool:
    """Whether the file realm's ``users`` file holds ``name`` (a restart keeps it)."""
    try:
        lines = (config / "users").read_text().splitlines()
    except OSError:
        return False
    return any(line.split(":", 1)[0] == name for line in lines)
