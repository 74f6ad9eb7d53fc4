"""A PostgreSQL server of the caller's own: ``initdb`` in a temporary folder, a free port on
127.0.0.1, started, restarted and stopped with ``pg_ctl``.

The chaos tests (tests/chaos) restart and crash it, and ``taskforge bench soak`` runs on one
with settings of its own (autovacuum on); neither touches a shared server. It lives in the
package (not under tests/) so that the benchmark can use it; the tests import it from here.

The binaries come from ``$TASKFORGE_PG_BINDIR``, else the newest Debian
``/usr/lib/postgresql/<version>/bin`` (15 or later), else ``pg_config --bindir``. PostgreSQL
refuses to run as root: run as root, the server runs as the system user ``postgres`` (created by
Debian's PostgreSQL packages) through ``runuser``, and the folder is handed to that user.

Authentication is ``trust`` for the superuser ``postgres``, on TCP (127.0.0.1) and on a Unix
socket in the folder. With ``netns``, every command (and so the server) runs in that network
namespace (``ip netns exec``): it then listens on the addresses of ``settings`` there, the
``hba`` lines are added to pg_hba.conf, and :meth:`dsn` names the Unix socket, which processes
of any network namespace reach (tests/helpers/netns.py).

``fsync`` is off: the faults are process crashes and restarts, after which the operating system
still holds every write, so durability is the same and the tests run faster on a busy machine.
Timeouts are seconds.

Replication: initdb's own pg_hba.conf lets the superuser connect for replication (``trust``, on
the socket and on 127.0.0.1), and the defaults (``wal_level = replica``, ``max_wal_senders =
10``) allow streaming, so any private server can be a primary. ``PrivateServer(standby_of=p)``
makes a hot standby of ``p``: its first ``start()`` runs ``pg_basebackup -R`` (streaming the
WAL, writing ``primary_conninfo`` and ``standby.signal``) from ``p`` instead of initdb.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg

__all__ = ["PrivateServer", "find_bindir"]

#: Oldest major version TaskForge supports.
MIN_MAJOR = 15
#: The system user that runs the server when the tests run as root.
SERVER_USER = "postgres"


def find_bindir() -> Path:
    """The folder of ``initdb``/``pg_ctl``/``postgres`` (see the module docstring); fails with a
    message saying what to install."""
    configured = os.environ.get("TASKFORGE_PG_BINDIR")
    if configured:
        return Path(configured)
    versions = []
    for path in Path("/usr/lib/postgresql").glob("*/bin/initdb"):
        with contextlib.suppress(ValueError):
            versions.append((int(path.parent.parent.name), path.parent))
    versions = [v for v in versions if v[0] >= MIN_MAJOR]
    if versions:
        return max(versions)[1]
    pg_config = shutil.which("pg_config")
    if pg_config:
        bindir = Path(
            subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=True).stdout.strip()
        )
        if (bindir / "initdb").exists():
            return bindir
    raise RuntimeError(
        "no PostgreSQL server binaries (initdb, pg_ctl) found: install them (Debian: apt-get install "
        f"postgresql-{MIN_MAJOR}) or set TASKFORGE_PG_BINDIR to their folder"
    )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PrivateServer:
    """One throwaway cluster (a hot standby of ``standby_of`` when given). ``start()`` runs
    initdb (or pg_basebackup) once, then starts it; ``dsn(dbname)`` names a
    database on it; ``restart(mode)``, ``stop(mode)`` (``fast`` or ``immediate``: a crash, with
    recovery at the next start) and ``destroy()`` (stop and delete the folder)."""

    def __init__(
        self,
        bindir: Path | None = None,
        *,
        settings: dict[str, str] | None = None,
        standby_of: PrivateServer | None = None,
        netns: str | None = None,
        hba: tuple[str, ...] = (),
    ) -> None:
        self.standby_of = standby_of
        self.bindir = bindir or find_bindir()
        self.netns = netns
        self.hba = hba
        self.base = Path(tempfile.mkdtemp(prefix="taskforge-pg-"))
        self.data = self.base / "data"
        self.log = self.base / "server.log"
        self.port = free_port()
        self.settings = {
            "listen_addresses": "127.0.0.1",
            "unix_socket_directories": str(self.base),
            "fsync": "off",
            "max_connections": "100",
            **(settings or {}),
        }
        self._as_root = os.geteuid() == 0
        if self._as_root:
            try:
                user = pwd.getpwnam(SERVER_USER)
            except KeyError:
                raise RuntimeError(
                    f"running as root, the private PostgreSQL server needs the system user {SERVER_USER!r} "
                    "(Debian's PostgreSQL packages create it)"
                ) from None
            os.chown(self.base, user.pw_uid, user.pw_gid)
        self._initialised = False

    # --- commands -------------------------------------------------------------------------------

    def _run(self, tool: str, *args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess[str]:
        argv = [str(self.bindir / tool), *args]
        if self._as_root:
            argv = ["runuser", "-u", SERVER_USER, "--", *argv]
        if self.netns:
            argv = ["ip", "netns", "exec", self.netns, *argv]
        result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=self.base)
        if check and result.returncode != 0:
            raise RuntimeError(
                f"{tool} {' '.join(args)} failed ({result.returncode}):\n{result.stdout}{result.stderr}\n"
                f"server log:\n{self.log_tail()}"
            )
        return result

    def _options(self) -> str:
        return " ".join(f"-c {name}={value}" for name, value in self.settings.items()) + f" -p {self.port}"

    def start(self, timeout: float = 60) -> None:
        """initdb (the first time), then start and wait until it accepts connections."""
        if not self._initialised:
            if self.standby_of is not None:
                primary = self.standby_of
                self._run(
                    "pg_basebackup",
                    *("-D", str(self.data), "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres"),
                    *("-R", "-X", "stream", "-c", "fast", "--no-sync"),
                    timeout=timeout + 120,
                )
            else:
                self._run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
            if self.hba:
                with open(self.data / "pg_hba.conf", "a") as hba:
                    hba.write("".join(f"{line}\n" for line in self.hba))
            self._initialised = True
        self._run(
            "pg_ctl",
            "start",
            "-w",
            "-t",
            str(int(timeout)),
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-o",
            self._options(),
            timeout=timeout + 10,
        )
        self.wait_ready(timeout)

    def in_recovery(self) -> bool:
        """``pg_is_in_recovery()``: True for a hot standby."""
        with psycopg.connect(self.dsn(), connect_timeout=5) as conn:
            row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
        return bool(row and row[0])

    def stop(self, mode: str = "fast", timeout: float = 60) -> None:
        """pg_ctl stop -m MODE (``immediate``: every server process quits at once, as in a crash)."""
        self._run(
            "pg_ctl", "stop", "-w", "-t", str(int(timeout)), "-D", str(self.data), "-m", mode, timeout=timeout + 10
        )

    def restart(self, mode: str = "fast", down_seconds: float = 0.0) -> None:
        """Stop with ``mode``, stay down ``down_seconds``, start again."""
        self.stop(mode)
        if down_seconds:
            time.sleep(down_seconds)
        self.start()

    def running(self) -> bool:
        return self._run("pg_ctl", "status", "-D", str(self.data), check=False).returncode == 0

    def destroy(self) -> None:
        """Stop the server (immediate) if it runs and delete its folder."""
        if self._initialised and self.running():
            with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
                self.stop("immediate")
        shutil.rmtree(self.base, ignore_errors=True)

    # --- connecting ------------------------------------------------------------------------------

    def dsn(self, dbname: str = "postgres") -> str:
        """127.0.0.1 over TCP; the Unix socket when the server runs in a network namespace."""
        host = str(self.base) if self.netns else "127.0.0.1"
        return self.tcp_dsn(dbname, host)

    def tcp_dsn(self, dbname: str, host: str) -> str:
        """The database ``dbname`` at the address ``host`` (one of its listen_addresses)."""
        return f"host={host} port={self.port} user=postgres dbname={dbname}"

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with psycopg.connect(self.dsn(), connect_timeout=2) as conn:
                    conn.execute("SELECT 1")
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def version(self) -> str:
        out = self._run("postgres", "--version").stdout.strip()
        match = re.search(r"\d+(\.\d+)?", out)
        return match.group(0) if match else out

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""
