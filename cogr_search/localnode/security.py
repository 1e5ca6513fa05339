"""Secured local nodes: the certificates and admin password both engines share, and
OpenSearch's security plugin configuration (`opensearch start --secure`): TLS, an admin
user, no demo. Elasticsearch's x-pack specifics are in `es_security.py`, built on the
shared pieces here (`node_certificates`, `admin_password`, `credentials`).

Why: nearly every production cluster requires TLS and credentials, and what cogr-search
does against one (a wrong password, a missing CA, a missing privilege) must be tested
against the real security plugin, not assumed.

What a secured node gets, in its own config folder, before its first start:

- a private CA made for the node (``ca.pem``; its key stays in the config folder), a node
  certificate for HTTP and transport (``serverAuth`` and ``clientAuth``, SANs ``localhost``
  and ``127.0.0.1``) and an admin certificate (``clientAuth``) for the security index, all
  with PKCS#8 keys, made with the ``openssl`` command;
- ``internal_users.yml`` with one user, ``admin``, whose random password is kept in
  ``<home>/admin-password`` (mode 0600); ``roles_mapping.yml`` mapping ``all_access`` to
  it alone. The plugin ships demo users with well-known passwords and maps ``own_index``
  to every user: both files are replaced, so no demo user or catch-all mapping survives;
- ``opensearch.yml`` settings for TLS on HTTP and transport, the admin and node DNs, and
  ``allow_default_init_securityindex`` (the security index is initialised from these files
  at the first start).
"""

from __future__ import annotations

import os
import secrets
import shutil
import string
import subprocess
from dataclasses import dataclass
from pathlib import Path

from cogr_search.localnode.engine_lines import LocalNodeError

ADMIN = "admin"
CA_NAME = "ca.pem"
PASSWORD_FILE = "admin-password"
NODE_DN = "CN=cogr-node,O=cogr-search"
ADMIN_DN = "CN=cogr-admin,O=cogr-search"
SECURITY_CONFIG = "opensearch-security"


@dataclass(frozen=True)
class Credentials:
    """How a client reaches a secured node: its CA and the admin's user and password."""

    ca_certs: Path
    user: str
    password: str


def credentials(home: Path) -> Credentials | None:
    """The secured node's credentials (None: the home holds no secured node)."""
    try:
        password = (home / PASSWORD_FILE).read_text().strip()
    except OSError:
        return None
    return Credentials(ca_certs=home / CA_NAME, user=ADMIN, password=password)


def prepare(home: Path, config: Path, dist: Path, env: dict[str, str]) -> list[str]:
    """Write what the secured node needs into ``config`` (once); return its yml lines."""
    password = node_certificates(home, config)
    security = config / SECURITY_CONFIG
    if not security.is_dir():
        shutil.copytree(dist / "config" / SECURITY_CONFIG, security)
    (security / "internal_users.yml").write_text(_internal_users(_hash(dist, env, password)))
    (security / "roles_mapping.yml").write_text(_roles_mapping())
    protect_keys(config)
    return [
        "plugins.security.ssl.transport.pemcert_filepath: node.pem",
        "plugins.security.ssl.transport.pemkey_filepath: node-key.pem",
        f"plugins.security.ssl.transport.pemtrustedcas_filepath: {CA_NAME}",
        "plugins.security.ssl.transport.enforce_hostname_verification: false",
        "plugins.security.ssl.http.enabled: true",
        "plugins.security.ssl.http.pemcert_filepath: node.pem",
        "plugins.security.ssl.http.pemkey_filepath: node-key.pem",
        f"plugins.security.ssl.http.pemtrustedcas_filepath: {CA_NAME}",
        # RFC 2253 order: CN first, as the plugin compares them.
        f'plugins.security.authcz.admin_dn: ["{ADMIN_DN}"]',
        f'plugins.security.nodes_dn: ["{NODE_DN}"]',
        "plugins.security.allow_default_init_securityindex: true",
        'plugins.security.restapi.roles_enabled: ["all_access"]',
        "plugins.security.system_indices.enabled: true",
        "plugins.security.audit.type: noop",
    ]


def node_certificates(home: Path, config: Path) -> str:
    """The node's CA and certificates in ``config`` (made once), the CA copied to
    ``<home>/ca.pem`` for clients, and the admin password of ``home``; returns the password."""
    make_certificates(config)
    shutil.copyfile(config / CA_NAME, home / CA_NAME)  # readable by the caller, for clients
    return admin_password(home)


def protect_keys(config: Path) -> None:
    """Private keys readable by their owner only (the node refuses or warns otherwise)."""
    for path in config.rglob("*key*.pem"):
        path.chmod(0o600)


def admin_password(home: Path) -> str:
    """The admin password of ``home`` (made once, mode 0600): strong enough for OpenSearch's
    REST API policy and Elasticsearch's minimum length."""
    path = home / PASSWORD_FILE
    if path.is_file():
        return path.read_text().strip()
    alphabet = string.ascii_letters + string.digits
    password = "Cg-" + "".join(secrets.choice(alphabet) for _ in range(24)) + "-9x"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(password + "\n")
    return password


# The variable the Hasher reads the password from (its ``-env NAME`` option).
HASH_PASSWORD_VARIABLE = "COGR_PASSWORD_TO_HASH"


def _hash(dist: Path, env: dict[str, str], password: str) -> str:
    """The bcrypt hash of ``password`` by the security plugin's own Hasher (its tools/hash.sh).

    The password goes in the Hasher's environment (``-env``), never on its command line: any
    user of the machine may read a process's arguments, only its owner (and root) its
    environment. The Hasher's third way, a console prompt, needs a terminal."""
    java = Path(env[_java_home_key(env)]) / "bin" / "java"
    classpath = f"{dist / 'plugins' / 'opensearch-security'}/*:{dist / 'lib'}/*"
    done = subprocess.run(
        [str(java), "-cp", classpath, "org.opensearch.security.tools.Hasher", "-env", HASH_PASSWORD_VARIABLE],
        capture_output=True, text=True, check=False, env={**env, HASH_PASSWORD_VARIABLE: password},
        stdin=subprocess.DEVNULL,
    )
    hashed = done.stdout.strip().splitlines()[-1:] if done.returncode == 0 else []
    if not hashed or not hashed[0].startswith("$2"):
        raise LocalNodeError(f"the security plugin's Hasher failed (exit {done.returncode}): {done.stderr.strip()[:300]}")
    return hashed[0]


def _java_home_key(env: dict[str, str]) -> str:
    return "OPENSEARCH_JAVA_HOME" if "OPENSEARCH_JAVA_HOME" in env else "JAVA_HOME"


def _internal_users(hashed: str) -> str:
    return (
        '_meta:\n  type: "internalusers"\n  config_version: 2\n'
        f'{ADMIN}:\n  hash: "{hashed}"\n  reserved: true\n  backend_roles: ["admin"]\n'
        '  description: "cogr-search admin of the local node"\n'
    )


def _roles_mapping() -> str:
    return (
        '_meta:\n  type: "rolesmapping"\n  config_version: 2\n'
        f'all_access:\n  reserved: false\n  users: ["{ADMIN}"]\n  description: "the local node\'s admin only"\n'
    )


def make_certificates(config: Path) -> None:
    """CA (``ca.pem``), node (``node.pem``, ``node-key.pem``: a server for ``localhost`` and
    ``127.0.0.1``) and admin certificates (PKCS#8 keys), made once per folder. Also what
    the expansion service's TLS tests serve with."""
    if (config / "node.pem").is_file():
        return
    _openssl(config, "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "ca-key.pem")
    _openssl(config, "req", "-new", "-x509", "-sha256", "-key", "ca-key.pem", "-subj", "/O=cogr-search/CN=cogr-local-ca",
             "-days", "3650", "-out", CA_NAME)
    _signed(config, "node", "/O=cogr-search/CN=cogr-node",
            "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n")
    _signed(config, "admin", "/O=cogr-search/CN=cogr-admin", "extendedKeyUsage=clientAuth\n")


def _signed(config: Path, name: str, subject: str, extensions: str) -> None:
    (config / f"{name}.ext").write_text(extensions)
    _openssl(config, "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", f"{name}-key.pem")
    _openssl(config, "req", "-new", "-key", f"{name}-key.pem", "-subj", subject, "-out", f"{name}.csr")
    _openssl(config, "x509", "-req", "-in", f"{name}.csr", "-CA", CA_NAME, "-CAkey", "ca-key.pem", "-CAcreateserial",
             "-sha256", "-days", "3650", "-extfile", f"{name}.ext", "-out", f"{name}.pem")


def _openssl(cwd: Path, *args: str) -> None:
    if shutil.which("openssl") is None:
        raise LocalNodeError("'openssl' is not on PATH: a secured local node needs it to make its certificates")
    done = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise LocalNodeError(f"openssl {args[0]} failed: {done.stderr.strip()[:300]}")
