"""A PgBouncer of its own in front of one PostgreSQL server, for the ``pooler`` benchmark and the
tests of transaction pooling (:mod:`taskforge.pooling`).

:class:`PgBouncer` writes a configuration into a fresh directory (transaction mode, ``auth_type =
trust``, a pool of ``pool_size`` server connections per database and user, at most that many
per database in all), starts ``pgbouncer`` on a free loopback port and stops it. PgBouncer
refuses to run as root: as root it is started with ``-u postgres`` (the directory is handed to
that user). :func:`available` says why it cannot run here (Debian: ``apt-get install
pgbouncer``; ``scripts/ensure-pgbouncer.sh`` installs it). Times are seconds, monotonic.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from psycopg.conninfo import conninfo_to_dict, make_conninfo

__all__ = ["PgBouncer", "PgBouncerUnavailable", "available"]

#: The user PgBouncer runs as when this process is root (it refuses to run as root).
RUN_AS = "postgres"
#: How long (seconds) :meth:`PgBouncer.start` waits for the port to answer.
START_TIMEOUT_SECONDS = 10.0


class PgBouncerUnavailable(RuntimeError):
    """``pgbouncer`` is not installed, or cannot run as a user of its own here."""


def available() -> str | None:
    """None when PgBouncer can be started here, else the reason (one line)."""
    if shutil.which("pgbouncer") is None:
        return "pgbouncer is not installed (Debian: apt-get install pgbouncer; scripts/ensure-pgbouncer.sh)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(RUN_AS)
        except KeyError:
            return f"running as root and there is no user {RUN_AS!r} for PgBouncer to run as"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PgBouncer:
    """One PgBouncer process (see the module docstring); a context manager that starts and stops it.

    ``server_dsn``: the server PgBouncer connects to (its host, port and user are used; the
    database is each client's). ``pool_size``: server connections per database (and user);
    ``max_client_conn``: client connections accepted; ``pool_mode``: ``transaction`` or
    ``session``. Raises :class:`PgBouncerUnavailable` from :meth:`start` when it cannot run.
    """

    def __init__(
        self, server_dsn: str, *, pool_size: int = 20, max_client_conn: int = 2000, pool_mode: str = "transaction"
    ) -> None:
        params = conninfo_to_dict(server_dsn)
        self.server_host = str(params.get("host") or "127.0.0.1")
        self.server_port = int(str(params.get("port") or 5432))
        self.user = str(params.get("user") or "postgres")
        self.pool_size = pool_size
        self.max_client_conn = max_client_conn
        self.pool_mode = pool_mode
        self.port = 0
        self.directory: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    def dsn(self, dbname: str, **extra: str) -> str:
        """A DSN of database ``dbname`` through this PgBouncer (as its configured user)."""
        return make_conninfo("", host="127.0.0.1", port=str(self.port), user=self.user, dbname=dbname, **extra)

    @property
    def log_path(self) -> Path:
        """PgBouncer's own log file."""
        if self.directory is None:
            raise RuntimeError("PgBouncer: not started")
        return self.directory / "pgbouncer.log"

    def _config(self, directory: Path) -> str:
        users = sorted({self.user, "postgres", "root"})
        (directory / "users.txt").write_text("".join(f'"{u}" ""\n' for u in users), encoding="utf-8")
        return "\n".join(
            [
                "[databases]",
                f"* = host={self.server_host} port={self.server_port}",
                "[pgbouncer]",
                "listen_addr = 127.0.0.1",
                f"listen_port = {self.port}",
                "unix_socket_dir =",
                "auth_type = trust",
                f"auth_file = {directory / 'users.txt'}",
                f"pool_mode = {self.pool_mode}",
                f"default_pool_size = {self.pool_size}",
                f"max_db_connections = {self.pool_size}",
                "min_pool_size = 0",
                "reserve_pool_size = 0",
                f"max_client_conn = {self.max_client_conn}",
                # A client queued for a server connection fails after 15 s (PgBouncer's default is
                # 120 s): a connection held by a client that should have let it go shows quickly.
                "query_wait_timeout = 15",
                f"admin_users = {self.user}",
                f"logfile = {directory / 'pgbouncer.log'}",
                f"pidfile = {directory / 'pgbouncer.pid'}",
                "",
            ]
        )

    def start(self) -> PgBouncer:
        """Write the configuration and start PgBouncer; returns once its port answers. Raises
        :class:`PgBouncerUnavailable` (not installed, or it exited; its log is quoted)."""
        why = available()
        if why is not None:
            raise PgBouncerUnavailable(why)
        self.directory = Path(tempfile.mkdtemp(prefix="taskforge-pgbouncer-"))
        self.port = _free_port()
        ini = self.directory / "pgbouncer.ini"
        ini.write_text(self._config(self.directory), encoding="utf-8")
        argv = ["pgbouncer"]
        if os.geteuid() == 0:
            entry = pwd.getpwnam(RUN_AS)
            for path in (self.directory, *self.directory.iterdir()):
                os.chown(path, entry.pw_uid, entry.pw_gid)
            argv += ["-u", RUN_AS]
        self._proc = subprocess.Popen(
            [*argv, str(ini)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                break
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.05)
        log = self.log_path.read_text(encoding="utf-8", errors="replace") if self.log_path.exists() else ""
        self.stop()
        raise PgBouncerUnavailable(f"pgbouncer did not start: {log.strip().splitlines()[-1:] or 'no log'}")

    def server_connections(self, dbname: str) -> int:
        """Server connections PgBouncer holds to database ``dbname`` now (its admin console's
        ``SHOW SERVERS``, through psql: the console speaks only the simple query protocol)."""
        out = subprocess.run(
            ["psql", "-XAtF", "|", self.dsn("pgbouncer"), "-c", "SHOW SERVERS"],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout
        # SHOW SERVERS: type | user | database | state | ...
        return sum(1 for line in out.splitlines() if line.split("|")[2:3] == [dbname])

    def stop(self) -> None:
        """Stop PgBouncer (SIGTERM, then SIGKILL after 5 s) and remove its directory."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> PgBouncer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
