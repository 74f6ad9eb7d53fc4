"""Which PostgreSQL server the test suite runs against, and pgTAP in it (used by conftest.py).

In order:

1. ``$TASKFORGE_TEST_DSN`` when it is set: it must answer (a failure says so, never a skip);
2. the local server, ``$TASKFORGE_TEST_LOCAL_DSN`` (default ``host=127.0.0.1 port=5432
   user=postgres dbname=postgres``), when it answers;
3. otherwise a server started for the session and removed after it: a ``postgres`` container
   through testcontainers when a Docker engine answers, else the embedded PostgreSQL of the demo
   (:mod:`taskforge.embedded`, pgserver) under a temporary directory.

pgTAP: ``CREATE EXTENSION pgtap`` when the server has the extension; otherwise its SQL script
is run in the test database (the extension is plain SQL). The script is
``$TASKFORGE_PGTAP_SQL``, else the newest ``pgtap--X.Y.Z.sql`` under
``/usr/share/postgresql/*/extension`` (Debian's ``postgresql-NN-pgtap``); one built for another
major version works too.

The embedded server's data directory is a directory of its own under the system's temporary
directory, not pytest's: pytest makes ``/tmp/pytest-of-<user>`` private (mode 0700) at the start
of every session, which would lock the server's own user (``pgserver`` when run as root) out of
its data directory while another session starts, and PostgreSQL shuts down when it can no
longer see its lock file there.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg.conninfo import make_conninfo

__all__ = ["DEFAULT_LOCAL_DSN", "SuiteServer", "choose_server", "install_pgtap"]

DEFAULT_LOCAL_DSN = "host=127.0.0.1 port=5432 user=postgres dbname=postgres"
#: Image of the container started when Docker is there (the PostgreSQL major of the design).
CONTAINER_IMAGE = "postgres:15"


class NoServer(RuntimeError):
    """No server could be reached or started; the message says what was tried."""


@dataclass
class SuiteServer:
    """The session's server: ``admin_dsn`` may create databases and roles."""

    admin_dsn: str
    description: str
    stop: Callable[[], None] = lambda: None


def unreachable(dsn: str, timeout: int = 3) -> str | None:
    """None when ``dsn`` answers ``SELECT 1``, else the first line of the error."""
    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=timeout) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return None


def _docker_answers() -> bool:
    try:
        import docker  # installed with testcontainers
    except ImportError:
        return False
    try:
        docker.from_env(timeout=5).ping()
    except (docker.errors.DockerException, OSError):  # no engine (requests' errors are OSErrors)
        return False
    return True


def _container() -> SuiteServer:
    try:
        from testcontainers.community.postgres import PostgresContainer
    except ImportError:  # releases before the community namespace
        from testcontainers.postgres import PostgresContainer

    container = PostgresContainer(
        CONTAINER_IMAGE, username="postgres", password="postgres", dbname="postgres", driver=None
    )
    # The tests log in as roles they create, without passwords (as on the local server).
    container.with_env("POSTGRES_HOST_AUTH_METHOD", "trust")
    container.start()
    dsn = make_conninfo(
        host=container.get_container_host_ip(),
        port=int(container.get_exposed_port(5432)),
        user="postgres",
        dbname="postgres",
    )
    return SuiteServer(dsn, f"a {CONTAINER_IMAGE} container (testcontainers)", container.stop)


def _embedded() -> SuiteServer:
    from taskforge import embedded

    home = Path(tempfile.mkdtemp(prefix="taskforge-test-postgres-"))
    try:
        server = embedded.start(home / "pgdata", cleanup_mode="delete")
    except embedded.EmbeddedError as exc:
        shutil.rmtree(home, ignore_errors=True)
        raise NoServer(str(exc)) from exc
    with psycopg.connect(server.admin_dsn, autocommit=True) as conn:
        version = conn.execute("SHOW server_version").fetchone()[0]

    def stop() -> None:
        server.stop()
        shutil.rmtree(home, ignore_errors=True)

    return SuiteServer(server.admin_dsn, f"the embedded PostgreSQL {version} (pgserver) in {server.pgdata}", stop)


def choose_server() -> SuiteServer:
    """The server of the session (see the module docstring). Raises :class:`NoServer`."""
    explicit = os.environ.get("TASKFORGE_TEST_DSN")
    if explicit:
        problem = unreachable(explicit, timeout=5)
        if problem:
            raise NoServer(f"cannot reach the test server $TASKFORGE_TEST_DSN ({explicit}): {problem}")
        return SuiteServer(explicit, f"$TASKFORGE_TEST_DSN ({explicit})")
    local = os.environ.get("TASKFORGE_TEST_LOCAL_DSN") or DEFAULT_LOCAL_DSN
    problem = unreachable(local)
    if problem is None:
        return SuiteServer(local, f"the local server ({local})")
    if _docker_answers():
        return _container()
    return _embedded()


def pgtap_script() -> Path | None:
    """The pgTAP SQL script to run when the server lacks the extension (see the module docstring)."""
    configured = os.environ.get("TASKFORGE_PGTAP_SQL")
    if configured:
        return Path(configured)

    def version(path: Path) -> tuple[int, ...]:
        match = re.fullmatch(r"pgtap--(\d+(?:\.\d+)*)\.sql", path.name)
        return tuple(int(p) for p in match.group(1).split(".")) if match else ()

    scripts = [p for p in Path("/usr/share/postgresql").glob("*/extension/pgtap--*.sql") if version(p)]
    return max(scripts, key=version, default=None)


def install_pgtap(conn: psycopg.Connection) -> str:
    """Make pgTAP's functions available in ``conn``'s database; returns how (for the report).
    Raises :class:`NoServer` when neither the extension nor a script is there."""
    available = conn.execute("SELECT count(*) FROM pg_available_extensions WHERE name = 'pgtap'").fetchone()
    if available and available[0]:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pgtap")
        return "CREATE EXTENSION pgtap"
    script = pgtap_script()
    if script is None or not script.is_file():
        raise NoServer(
            "pgTAP is neither installed on the test server nor found as a script "
            "(Debian: apt-get install postgresql-15-pgtap, which `make test` does as root; "
            "or set TASKFORGE_PGTAP_SQL to a pgtap--X.Y.Z.sql)"
        )
    conn.execute(script.read_text(encoding="utf-8"))
    return f"pgTAP from {script}"
