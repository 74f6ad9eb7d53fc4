"""A Patroni cluster of the test's own: one etcd and two Patroni nodes on loopback ports
(``make ha``, tests/ha; the page is docs/operations.md, "Failover").

:class:`PatroniCluster` makes a folder under the system's temporary directory, starts an etcd
3.4 member there (its v3 API on a free port of 127.0.0.1) and two Patroni 3.0 nodes (REST API and
PostgreSQL on free ports of 127.0.0.1), node ``ha1`` first so that it bootstraps the cluster
(initdb) and becomes the leader, then ``ha2``, which copies it (``pg_basebackup``) and streams
from it. With ``synchronous=True`` the cluster runs in Patroni's ``synchronous_mode``: a commit
on the primary returns once the synchronous standby has its WAL, and only that standby may be
promoted. :meth:`PatroniCluster.start` returns once a leader answers and the replica streams (in
synchronous mode: once Patroni has made it the synchronous standby).

PostgreSQL refuses to run as root: run as root, etcd and Patroni (and so PostgreSQL, which
Patroni starts) run as the system user ``postgres`` (Debian's PostgreSQL packages create it),
and the folder is handed to that user; otherwise they run as the current user. The PostgreSQL
binaries are those :func:`taskforge.private_server.find_bindir` finds (Debian's PostgreSQL 15 here);
``patroni`` and ``etcd`` come from Debian's packages (``scripts/ensure-patroni.sh``).

Authentication is ``trust`` on 127.0.0.1 and the nodes' Unix sockets (a throwaway cluster on
loopback), superuser ``postgres``, replication user ``replicator``. ``fsync`` is off on both nodes
and etcd's writes are not synced: the faults here are process kills, after which the operating
system still holds every write, so what survives is the same and the runs are lighter on a
shared machine.

:meth:`PatroniNode.kill` is the failure: SIGKILL, at once, to the node's Patroni process, its
postmaster and every child of the postmaster (backends, WAL sender, checkpointer, ...), as when
the node's machine dies. Its etcd leader key then expires after ``ttl`` seconds and the other
node promotes itself within ``loop_wait`` more.

``replication_lag`` (seconds): the replica receives the primary's WAL through a
:class:`DelayLine` on the primary's advertised address (Patroni's ``connect_address``, which only
replication uses; clients use the listen ports): each chunk of WAL is passed on ``lag`` seconds
after it arrives. The line belongs to the primary's node: killing the node discards what is still
in it, as WAL a lagging asynchronous replica has not received is lost with its primary.

Times are seconds; waits use the monotonic clock.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import selectors
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from pathlib import Path
from typing import Any

import psycopg

from taskforge.private_server import find_bindir, free_port

__all__ = ["DelayLine", "Etcd", "PatroniCluster", "PatroniNode", "multi_host_dsn"]

#: Run as this system user when the tests run as root (PostgreSQL refuses root).
SERVICE_USER = "postgres"
SCOPE = "taskforge-ha"
#: Patroni's timing (dynamic configuration, seconds): the leader key lives ``TTL`` seconds
#: unless renewed; a node's loop runs every ``LOOP_WAIT``; DCS and PostgreSQL calls are
#: retried for ``RETRY_TIMEOUT``. Patroni wants loop_wait + 2 * retry_timeout <= ttl.
TTL = 10
LOOP_WAIT = 2
RETRY_TIMEOUT = 4


def multi_host_dsn(ports: list[int], dbname: str, **extra: str) -> str:
    """A libpq DSN naming 127.0.0.1 at each of ``ports``, ``target_session_attrs=read-write``:
    libpq tries the hosts in turn and keeps the first one that accepts writes."""
    params = {
        "host": ",".join("127.0.0.1" for _ in ports),
        "port": ",".join(str(p) for p in ports),
        "dbname": dbname,
        "user": "postgres",
        "target_session_attrs": "read-write",
        "connect_timeout": "2",
        **extra,
    }
    return " ".join(f"{key}={value}" for key, value in params.items())


class _Service:
    """Where the cluster's processes run: as SERVICE_USER when we are root, else as ourselves."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.as_root = os.geteuid() == 0
        self.uid = self.gid = None
        if self.as_root:
            try:
                user = pwd.getpwnam(SERVICE_USER)
            except KeyError:
                raise RuntimeError(
                    f"running as root, the Patroni cluster needs the system user {SERVICE_USER!r} "
                    "(Debian's PostgreSQL packages create it)"
                ) from None
            self.uid, self.gid = user.pw_uid, user.pw_gid

    def own(self, path: Path) -> None:
        if self.as_root:
            os.chown(path, self.uid or 0, self.gid or 0)

    def mkdir(self, path: Path) -> Path:
        path.mkdir(parents=True, exist_ok=True)
        self.own(path)
        return path

    def popen(self, argv: list[str], log: Path, cwd: Path) -> subprocess.Popen[bytes]:
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOME": str(cwd)}
        with open(log, "ab") as out:
            return subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env=env,
                start_new_session=True,
                user=self.uid if self.as_root else None,
                group=self.gid if self.as_root else None,
                extra_groups=[] if self.as_root else None,
            )


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _stop(proc: subprocess.Popen[bytes] | None, timeout: float = 20) -> None:
    """SIGTERM, then SIGKILL after ``timeout`` seconds."""
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait(10)


class Etcd:
    """One etcd member (v3 API on ``client_port``), data under ``base/etcd``."""

    def __init__(self, service: _Service) -> None:
        self.service = service
        self.dir = service.mkdir(service.base / "etcd")
        self.log = service.base / "etcd.log"
        self.client_port = free_port()
        self.peer_port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 30) -> None:
        peer = f"http://127.0.0.1:{self.peer_port}"
        client = f"http://127.0.0.1:{self.client_port}"
        argv = [
            shutil.which("etcd") or "etcd",
            "--name=etcd0",
            f"--data-dir={self.dir / 'data'}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=etcd0={peer}",
            "--initial-cluster-state=new",
            "--unsafe-no-fsync",
        ]
        self.proc = self.service.popen(argv, self.log, self.dir)
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"{client}/health", timeout=2) as answer:
                    if json.loads(answer.read()).get("health") == "true":
                        return
            except (OSError, ValueError):
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"etcd did not start (exit {self.proc.poll()}):\n{_tail(self.log)}")
            time.sleep(0.2)

    def stop(self) -> None:
        _stop(self.proc)


class DelayLine:
    """A TCP relay on ``port`` (127.0.0.1) to ``target_port`` that passes what the target sends
    on ``lag`` seconds after it arrived (what clients send goes through at once). :meth:`cut`
    closes every relayed connection and discards what is still in the line. One thread."""

    def __init__(self, target_port: int, lag: float) -> None:
        self.target_port = target_port
        self.lag = lag
        self.port = free_port()
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._listener.setblocking(False)
        self._sel = selectors.DefaultSelector()
        self._sel.register(self._listener, selectors.EVENT_READ, None)
        #: Open relays: client socket -> (server socket, queue of (due, bytes) for the client).
        self._pairs: dict[socket.socket, tuple[socket.socket, deque[tuple[float, bytes]]]] = {}
        self._stop = threading.Event()
        self._cut = threading.Event()
        self.bytes_delayed = 0
        self.bytes_discarded = 0
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"delay-line-{self.port}")
        self._thread.start()

    def cut(self) -> None:
        """Drop every connection now and whatever it still holds (the node died)."""
        self._cut.set()
        deadline = time.monotonic() + 5
        while self._cut.is_set() and time.monotonic() < deadline:
            time.sleep(0.01)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _open(self) -> None:
        try:
            client, _ = self._listener.accept()
        except BlockingIOError:
            return
        try:
            server = socket.create_connection(("127.0.0.1", self.target_port), timeout=2)
        except OSError:
            client.close()
            return
        client.setblocking(False)
        server.setblocking(False)
        queue: deque[tuple[float, bytes]] = deque()
        self._pairs[client] = (server, queue)
        self._sel.register(client, selectors.EVENT_READ, ("client", client))
        self._sel.register(server, selectors.EVENT_READ, ("server", client))

    def _drop(self, client: socket.socket, *, discard: bool = False) -> None:
        pair = self._pairs.pop(client, None)
        if pair is None:
            return
        server, queue = pair
        if discard:
            self.bytes_discarded += sum(len(chunk) for _, chunk in queue)
        for sock in (client, server):
            with contextlib.suppress(KeyError, ValueError):
                self._sel.unregister(sock)
            with contextlib.suppress(OSError):
                sock.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            if self._cut.is_set():
                for client in list(self._pairs):
                    self._drop(client, discard=True)
                self._cut.clear()
            now = time.monotonic()
            for client, (_server, queue) in list(self._pairs.items()):
                try:
                    while queue and queue[0][0] <= now:
                        due, chunk = queue[0]
                        sent = client.send(chunk)
                        if sent < len(chunk):
                            queue[0] = (due, chunk[sent:])
                            break
                        queue.popleft()
                except BlockingIOError:
                    continue
                except OSError:
                    self._drop(client)
            for key, _ in self._sel.select(timeout=0.005):
                if key.data is None:
                    self._open()
                    continue
                side, client = key.data
                pair = self._pairs.get(client)
                if pair is None:
                    continue
                server, queue = pair
                try:
                    data = key.fileobj.recv(65536)  # type: ignore[union-attr]
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    self._drop(client)
                    continue
                if side == "server":
                    self.bytes_delayed += len(data)
                    queue.append((time.monotonic() + self.lag, data))
                else:
                    try:
                        server.sendall(data)
                    except OSError:
                        self._drop(client)
        for client in list(self._pairs):
            self._drop(client)
        self._listener.close()


class PatroniNode:
    """One Patroni node: its configuration, data directory and logs under ``base/<name>``."""

    def __init__(self, service: _Service, name: str, etcd: Etcd, *, synchronous: bool, bindir: Path) -> None:
        self.service = service
        self.name = name
        self.dir = service.mkdir(service.base / name)
        self.data = self.dir / "data"
        self.log = service.base / f"{name}.patroni.log"
        self.pg_log_dir = service.mkdir(self.dir / "log")
        self.port = free_port()
        self.api_port = free_port()
        self.etcd = etcd
        self.synchronous = synchronous
        self.bindir = bindir
        self.proc: subprocess.Popen[bytes] | None = None
        self.line: DelayLine | None = None
        self.killed_at: float | None = None

    def config(self, advertised_port: int) -> dict[str, Any]:
        """Patroni's configuration (YAML; JSON is YAML)."""
        parameters = {
            "max_connections": 100,
            "wal_level": "replica",
            "hot_standby": "on",
            "max_wal_senders": 10,
            "max_replication_slots": 10,
            "wal_log_hints": "on",
            "fsync": "off",
            "synchronous_commit": "on",
        }
        return {
            "scope": SCOPE,
            "name": self.name,
            "log": {"level": "INFO"},
            "restapi": {"listen": f"127.0.0.1:{self.api_port}", "connect_address": f"127.0.0.1:{self.api_port}"},
            "etcd3": {"hosts": [f"127.0.0.1:{self.etcd.client_port}"], "protocol": "http"},
            "bootstrap": {
                "dcs": {
                    "ttl": TTL,
                    "loop_wait": LOOP_WAIT,
                    "retry_timeout": RETRY_TIMEOUT,
                    # In asynchronous mode a replica further behind than this is not promoted;
                    # large here so that the rig measures what a lagging promotion loses.
                    "maximum_lag_on_failover": 1 << 30,
                    "synchronous_mode": self.synchronous,
                    "synchronous_mode_strict": False,
                    "postgresql": {"use_pg_rewind": True, "use_slots": True, "parameters": parameters},
                },
                "initdb": [{"encoding": "UTF8"}, {"locale": "C.UTF-8"}, {"auth": "trust"}, "no-sync"],
            },
            "postgresql": {
                "listen": f"127.0.0.1:{self.port}",
                "connect_address": f"127.0.0.1:{advertised_port}",
                "data_dir": str(self.data),
                "bin_dir": str(self.bindir),
                "pgpass": str(self.dir / "pgpass"),
                "use_unix_socket": True,
                "authentication": {
                    "superuser": {"username": "postgres"},
                    "replication": {"username": "replicator"},
                    "rewind": {"username": "postgres"},
                },
                "parameters": {
                    "unix_socket_directories": str(self.dir),
                    "logging_collector": "on",
                    "log_directory": str(self.pg_log_dir),
                    "log_filename": "postgresql.log",
                    "log_line_prefix": "%m [%p] %a ",
                },
                "pg_hba": [
                    "local all all trust",
                    "host all all 127.0.0.1/32 trust",
                    "local replication all trust",
                    "host replication all 127.0.0.1/32 trust",
                ],
            },
        }

    def start(self, lag: float | None = None) -> None:
        """Start Patroni (which starts PostgreSQL). ``lag``: advertise a :class:`DelayLine` to
        this node (replicas stream through it) instead of its own port."""
        advertised = self.port
        if lag is not None:
            self.line = DelayLine(self.port, lag)
            advertised = self.line.port
        path = self.dir / "patroni.yml"
        path.write_text(json.dumps(self.config(advertised), indent=2))
        self.service.own(path)
        self.killed_at = None
        self.proc = self.service.popen([shutil.which("patroni") or "patroni", str(path)], self.log, self.dir)

    # --- state -----------------------------------------------------------------------------------

    def api(self, path: str, timeout: float = 2) -> tuple[int, Any]:
        """GET ``path`` of the REST API: (HTTP status, JSON body); (0, None) when nothing answers."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.api_port}{path}", timeout=timeout) as answer:
                return answer.status, json.loads(answer.read() or b"null")
        except urllib.error.HTTPError as exc:
            with contextlib.suppress(ValueError):
                return exc.code, json.loads(exc.read() or b"null")
            return exc.code, None
        except (OSError, ValueError):
            return 0, None

    def role(self) -> str | None:
        """``primary``/``master`` or ``replica`` as Patroni reports it; None when it does not answer."""
        status, body = self.api("/patroni")
        return body.get("role") if status and isinstance(body, dict) else None

    def writable(self) -> bool:
        """The node's PostgreSQL accepts a read-write session now."""
        try:
            with psycopg.connect(
                host="127.0.0.1", port=self.port, user="postgres", dbname="postgres",
                target_session_attrs="read-write", connect_timeout=1,
            ):  # fmt: skip
                return True
        except psycopg.Error:
            return False

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().splitlines()[0])
        except (OSError, ValueError, IndexError):
            return None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    # --- faults ----------------------------------------------------------------------------------

    def kill(self) -> list[int]:
        """SIGKILL Patroni, the postmaster and the postmaster's children at once; discard what
        is in this node's delay line. Returns the pids killed."""
        pids: list[int] = []
        if self.proc is not None and self.proc.poll() is None:
            pids.append(self.proc.pid)
        postmaster = self.postmaster_pid()
        if postmaster is not None:
            pids.append(postmaster)
            pids.extend(_children(postmaster))
        self.killed_at = time.time()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if self.line is not None:
            self.line.cut()
        if self.proc is not None:
            self.proc.wait(10)
        return pids

    def stop(self) -> None:
        """Stop Patroni gracefully (it stops PostgreSQL), then any PostgreSQL it left running."""
        _stop(self.proc, timeout=30)
        postmaster = self.postmaster_pid()
        if postmaster is not None and _exists(postmaster):
            with contextlib.suppress(ProcessLookupError):
                os.kill(postmaster, signal.SIGQUIT)
            deadline = time.monotonic() + 10
            while _exists(postmaster) and time.monotonic() < deadline:
                time.sleep(0.1)
            with contextlib.suppress(ProcessLookupError):
                os.kill(postmaster, signal.SIGKILL)
        if self.line is not None:
            self.line.close()

    def pg_log_tail(self, lines: int = 30) -> str:
        return _tail(self.pg_log_dir / "postgresql.log", lines)


def _children(pid: int) -> list[int]:
    """The pids whose parent is ``pid`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses.
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1 and int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class PatroniCluster:
    """etcd and two Patroni nodes (see the module docstring). ``workdir``: where :meth:`close`
    copies the logs."""

    def __init__(self, workdir: Path, *, synchronous: bool, replication_lag: float | None = None) -> None:
        self.workdir = workdir
        self.synchronous = synchronous
        self.replication_lag = replication_lag
        self.base = Path(tempfile.mkdtemp(prefix="taskforge-ha-"))
        self.service = _Service(self.base)
        self.service.own(self.base)
        self.bindir = find_bindir()
        self.etcd = Etcd(self.service)
        self.nodes = [
            PatroniNode(self.service, name, self.etcd, synchronous=synchronous, bindir=self.bindir)
            for name in ("ha1", "ha2")
        ]

    def start(self, timeout: float = 120) -> None:
        """etcd, then ha1 until it leads, then ha2 until it streams (and is the synchronous
        standby in synchronous mode)."""
        for tool in ("patroni", "etcd"):
            if shutil.which(tool) is None:
                raise RuntimeError(f"{tool} not found: run scripts/ensure-patroni.sh (Debian: patroni, etcd-server)")
        self.etcd.start()
        first, second = self.nodes
        first.start(lag=self.replication_lag)
        self.wait(lambda: first.role() in ("primary", "master") and first.writable(), "ha1 to lead", timeout)
        second.start(lag=self.replication_lag)
        self.wait(self.replica_ready, "ha2 to stream from ha1", timeout)

    def dsn(self, dbname: str) -> str:
        """The multi-host DSN of both nodes (read-write sessions only)."""
        return multi_host_dsn([n.port for n in self.nodes], dbname)

    def node_dsn(self, node: PatroniNode, dbname: str = "postgres") -> str:
        return f"host=127.0.0.1 port={node.port} user=postgres dbname={dbname} connect_timeout=2"

    def members(self) -> list[dict[str, Any]]:
        """``GET /cluster`` of the first node that answers: Patroni's view of every member."""
        for node in self.nodes:
            status, body = node.api("/cluster")
            if status == 200 and isinstance(body, dict):
                return list(body.get("members", []))
        return []

    def replica_ready(self) -> bool:
        """Every running member but the leader streams (is the sync standby, in synchronous mode)."""
        members = self.members()
        if len(members) < 2:
            return False
        wanted = "sync_standby" if self.synchronous else "replica"
        others = [m for m in members if m.get("role") != "leader"]
        return bool(others) and all(
            m.get("role") == wanted and m.get("state") in ("running", "streaming") for m in others
        )

    def primary(self) -> PatroniNode:
        """The node that leads now (AssertionError when none does)."""
        for node in self.nodes:
            if node.alive() and node.role() in ("primary", "master"):
                return node
        raise AssertionError(f"no Patroni node leads: {self.members()}")

    def other(self, node: PatroniNode) -> PatroniNode:
        return self.nodes[1] if node is self.nodes[0] else self.nodes[0]

    def wait(self, predicate: Any, message: str, timeout: float = 120) -> float:
        """Poll ``predicate`` until it is truthy; the seconds waited (AssertionError on timeout,
        with the logs of every node)."""
        start = time.monotonic()
        while not predicate():
            if time.monotonic() - start > timeout:
                raise AssertionError(f"timed out after {timeout:.0f} s waiting for {message}:\n{self.logs()}")
            time.sleep(0.2)
        return time.monotonic() - start

    def logs(self) -> str:
        parts = [f"--- etcd ---\n{_tail(self.etcd.log, 10)}"]
        for node in self.nodes:
            parts.append(f"--- {node.name} patroni ---\n{_tail(node.log)}")
            parts.append(f"--- {node.name} postgresql ---\n{node.pg_log_tail()}")
        return "\n".join(parts)

    def version(self) -> str:
        out = subprocess.run([str(self.bindir / "postgres"), "--version"], capture_output=True, text=True).stdout
        return out.strip()

    def close(self) -> None:
        """Stop both nodes and etcd, copy their logs to ``workdir``, delete the folder."""
        for node in self.nodes:
            with contextlib.suppress(Exception):
                node.stop()
        self.etcd.stop()
        self.workdir.mkdir(parents=True, exist_ok=True)
        for src, name in [(self.etcd.log, "etcd.log")] + [
            item
            for node in self.nodes
            for item in (
                (node.log, f"{node.name}.patroni.log"),
                (node.pg_log_dir / "postgresql.log", f"{node.name}.postgresql.log"),
            )
        ]:
            with contextlib.suppress(OSError):
                shutil.copyfile(src, self.workdir / name)
        shutil.rmtree(self.base, ignore_errors=True)
