"""Installing and running peers: a virtualenv per Python peer, an npm prefix per Node peer.

Every peer lives in ``<peer dir>/<name>/`` (default ``<out>/peers``; ``--peer-dir`` to reuse
one between runs), never in TaskForge's environment. An environment whose installed versions
are the pinned ones is reused; otherwise the harness installs them (``pip install`` into the
virtualenv, ``npm install --prefix DIR --save-exact``). Installs into one directory are
serialised with a lock file, so two runs sharing a peer directory do not interleave.

A peer app (``bench/peer/<app>``) takes the same three commands in every language::

    APP schema           apply the peer's schema to $TASKFORGE_BENCH_PEER_DSN
    APP enqueue COUNT    enqueue COUNT no-op jobs in one transaction; print {"ids": [...]}
    APP worker SETTINGS  run one worker with SETTINGS (a JSON object) until SIGTERM, exit 0

``$TASKFORGE_BENCH_PEER_DSN`` is a ``postgresql://`` URL (every peer's driver reads that form).
"""

from __future__ import annotations

import abc
import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import ClassVar
from urllib.parse import quote, urlencode

from psycopg.conninfo import conninfo_to_dict

from ...progress import Progress
from ..database import bench_dir
from .base import Batch, Installed, Mode, Peer, PeerError, PeerUnavailable

__all__ = [
    "AppPeer",
    "NodePeer",
    "PythonPeer",
    "dsn_url",
    "find_python",
    "node_versions",
    "run_app",
]

#: Seconds an install (pip, npm; each retries a failed download twice, 60 s a try) or an app
#: command (schema, enqueue) may take.
INSTALL_TIMEOUT_SECONDS = 600.0
APP_TIMEOUT_SECONDS = 300.0
#: Environment variable naming the interpreter for peers that need a newer Python.
PYTHON_OVERRIDE = "TASKFORGE_BENCH_PEER_PYTHON"


def dsn_url(dsn: str) -> str:
    """A libpq DSN (keywords or URL) as a ``postgresql://user:password@host:port/dbname?...`` URL.
    A socket directory as host goes into the query (``?host=/run/postgresql``)."""
    params = {k: str(v) for k, v in conninfo_to_dict(dsn).items() if v is not None}
    user, password = params.pop("user", ""), params.pop("password", None)
    host, port, dbname = params.pop("host", ""), params.pop("port", None), params.pop("dbname", "")
    if host.startswith("/"):
        params["host"], host = host, ""
    auth = quote(user, safe="") + (f":{quote(password, safe='')}" if password is not None else "")
    netloc = (f"{auth}@" if auth else "") + host + (f":{port}" if port else "")
    query = f"?{urlencode(params)}" if params else ""
    return f"postgresql://{netloc}/{quote(dbname, safe='')}{query}"


def run_app(argv: Sequence[str], env: dict[str, str], what: str, timeout: float = APP_TIMEOUT_SECONDS) -> str:
    """Run a peer app command to completion; its stdout. Raises PeerError naming ``what``."""
    try:
        done = subprocess.run(
            list(argv), env=dict(os.environ, **env), capture_output=True, text=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PeerError(f"{what}: {exc}") from exc
    if done.returncode != 0:
        raise PeerError(f"{what} exited {done.returncode}:\n{done.stdout}{done.stderr}"[-3000:])
    return done.stdout


def enqueued(stdout: str) -> Batch:
    """The :class:`Batch` an app's ``enqueue`` printed (its last line, ``{"ids": [...]}``)."""
    try:
        ids = json.loads(stdout.strip().splitlines()[-1])["ids"]
    except (IndexError, KeyError, TypeError, ValueError) as exc:
        raise PeerError(f"enqueue printed no id list: {stdout[-500:]!r}") from exc
    return Batch(ids=tuple(ids))


@contextlib.contextmanager
def _install_lock(directory: Path) -> Iterator[None]:
    directory.parent.mkdir(parents=True, exist_ok=True)
    with open(directory.parent / f".{directory.name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _install(argv: Sequence[str], what: str) -> None:
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=INSTALL_TIMEOUT_SECONDS, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PeerUnavailable(f"{what} impossible: {exc}") from exc
    if done.returncode != 0:
        lines = [line.strip() for line in (done.stdout + done.stderr).splitlines() if line.strip()]
        errors = [line for line in lines if "error" in line.lower()] or lines
        shown = list(dict.fromkeys(errors[:2] + errors[-1:]))  # the cause (first) and the verdict (last)
        raise PeerUnavailable(f"{what} failed: {' / '.join(shown)}"[:600])


class AppPeer(Peer):
    """A peer driven through its app's three commands (module docstring); subclasses say how
    the app is started (:meth:`app_argv`)."""

    @abc.abstractmethod
    def app_argv(self, installed: Installed, *args: str) -> list[str]:
        """The command line of the app with ``args``."""

    def prepare(self, installed: Installed, dsn: str) -> None:
        run_app(self.app_argv(installed, "schema"), self.process_env(installed, dsn), f"{self.name} schema")

    def worker_argv(self, installed: Installed, mode: Mode) -> list[str]:
        return self.app_argv(installed, "worker", mode.settings_json())

    def enqueue(self, installed: Installed, dsn: str, count: int) -> Batch:
        argv = self.app_argv(installed, "enqueue", str(count))
        return enqueued(run_app(argv, self.process_env(installed, dsn), f"{self.name} enqueue"))


# --- Python -------------------------------------------------------------------------------------

_VERSION_PROBE = (
    "import json, sys, importlib.metadata as m\n"
    "def v(p):\n"
    "    try:\n"
    "        return m.version(p)\n"
    "    except m.PackageNotFoundError:\n"
    "        return None\n"
    "print(json.dumps({'python': '%d.%d.%d' % sys.version_info[:3], 'executable': sys.executable,"
    " 'packages': {p: v(p) for p in sys.argv[1:]}}))\n"
)


def _probe(python: str, packages: Sequence[str] = ()) -> dict[str, object] | None:
    """What interpreter ``python`` is and which of ``packages`` it has; None when it does not run."""
    try:
        done = subprocess.run(
            [python, "-c", _VERSION_PROBE, *packages], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    found: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


def _candidates() -> list[str]:
    """Interpreters to try, in order: $TASKFORGE_BENCH_PEER_PYTHON, this one, python3.N on PATH
    (newest first), then pyenv's installed versions ($PYENV_ROOT or ~/.pyenv)."""
    found = [os.environ.get(PYTHON_OVERRIDE, ""), sys.executable]
    found += [shutil.which(f"python3.{minor}") or "" for minor in range(20, 10, -1)]
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    if root.is_dir():
        for version in sorted(root.iterdir(), key=lambda p: _version_tuple(p.name), reverse=True):
            found.append(str(version / "bin" / "python3"))
    return [c for c in dict.fromkeys(found) if c]


def find_python(minimum: tuple[int, int]) -> tuple[str, str]:
    """(executable, version) of the first interpreter of at least ``minimum`` (see
    :func:`_candidates`). Raises PeerUnavailable naming what was tried."""
    for candidate in _candidates():
        probe = _probe(candidate)
        if probe is not None and _version_tuple(str(probe["python"]))[:2] >= minimum:
            return str(probe["executable"]), str(probe["python"])
    raise PeerUnavailable(
        f"needs Python >= {minimum[0]}.{minimum[1]}: none found (tried ${PYTHON_OVERRIDE}, this interpreter, "
        "python3.N on PATH and pyenv's versions)"
    )


class PythonPeer(AppPeer):
    """A peer installed from PyPI into a virtualenv of its own and run by a Python app."""

    runtime: ClassVar[str] = "python"
    #: Package -> exact version installed (and checked when an environment is reused).
    pins: ClassVar[dict[str, str]]
    #: Further requirements (pip specifiers) the app needs; their versions are recorded.
    extras: ClassVar[tuple[str, ...]] = ()
    #: The app, a file in bench/peer/.
    app: ClassVar[str]
    #: The oldest Python the peer supports.
    min_python: ClassVar[tuple[int, int]] = (3, 11)

    def _packages(self) -> list[str]:
        return [*self.pins, *(re.split(r"[<>=!~\[; ]", e, maxsplit=1)[0] for e in self.extras)]

    def install(self, directory: Path, progress: Progress) -> Installed:
        """The virtualenv ``directory`` with :attr:`pins` and :attr:`extras` (created with the
        first interpreter of at least :attr:`min_python`)."""
        python = directory / "bin" / "python"
        with _install_lock(directory):
            if not python.exists():
                base, version = find_python(self.min_python)
                progress.note(f"peer {self.name}: creating a virtualenv in {directory} (Python {version})")
                _install([base, "-m", "venv", str(directory)], f"python -m venv {directory}")
            probe = _probe(str(python), self._packages())
            packages = probe["packages"] if probe else {}
            assert isinstance(packages, dict)
            if probe is None or any(packages.get(p) != v for p, v in self.pins.items()) or None in packages.values():
                wanted = [f"{p}=={v}" for p, v in self.pins.items()] + list(self.extras)
                progress.note(f"peer {self.name}: pip install {' '.join(wanted)} into {directory}")
                pip = [str(python), "-m", "pip", "install", "-q", "--retries", "2", "--timeout", "60"]
                _install([*pip, *wanted], f"pip install {' '.join(wanted)}")
                probe = _probe(str(python), self._packages())
        if probe is None:
            raise PeerUnavailable(f"the virtualenv {directory} does not run")
        packages = probe["packages"]
        assert isinstance(packages, dict)
        return Installed(
            self.name,
            directory,
            {str(k): str(v) for k, v in packages.items()},
            {"python": str(probe["python"]), "executable": str(python)},
        )

    def app_argv(self, installed: Installed, *args: str) -> list[str]:
        """``<venv python> bench/peer/<app> ARGS...``."""
        return [installed.runtime["executable"], str(bench_dir() / "peer" / self.app), *args]

    def process_env(self, installed: Installed, dsn: str) -> dict[str, str]:
        return {"TASKFORGE_BENCH_PEER_DSN": dsn_url(dsn), "PYTHONPATH": str(bench_dir() / "peer")}


# --- Node.js ------------------------------------------------------------------------------------


def node_versions() -> dict[str, str]:
    """``{"node": "v20.20.2", "npm": "11.1.0"}`` of the tools on PATH. Raises PeerUnavailable
    when either is missing or does not run."""
    found = {}
    for tool in ("node", "npm"):
        path = shutil.which(tool)
        if path is None:
            raise PeerUnavailable(f"{tool} is not on PATH")
        try:
            done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60, check=True)
        except (OSError, subprocess.SubprocessError) as exc:
            raise PeerUnavailable(f"{tool} --version failed: {exc}") from exc
        found[tool] = done.stdout.strip()
    return found


class NodePeer(AppPeer):
    """A peer installed from the npm registry into an npm prefix of its own and run by a Node.js
    app (``NODE_PATH`` points at the prefix's node_modules)."""

    runtime: ClassVar[str] = "node"
    #: npm package -> exact version.
    pins: ClassVar[dict[str, str]]
    #: The app, a file in bench/peer/.
    app: ClassVar[str]
    #: The oldest Node.js major version the pinned packages support.
    min_node_major: ClassVar[int]

    @staticmethod
    def _installed_version(directory: Path, package: str) -> str | None:
        try:
            data = json.loads((directory / "node_modules" / package / "package.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        version = data.get("version")
        return str(version) if version else None

    def install(self, directory: Path, progress: Progress) -> Installed:
        """The npm prefix ``directory`` with :attr:`pins`. Raises PeerUnavailable without node
        and npm, with a Node.js older than :attr:`min_node_major`, or when npm install fails."""
        tools = node_versions()
        major = _version_tuple(tools["node"])[:1]
        if not major or major[0] < self.min_node_major:
            raise PeerUnavailable(f"needs Node.js >= {self.min_node_major}, found {tools['node']}")
        with _install_lock(directory):
            versions = {p: self._installed_version(directory, p) for p in self.pins}
            if versions != self.pins:
                wanted = [f"{p}@{v}" for p, v in self.pins.items()]
                progress.note(f"peer {self.name}: npm install --prefix {directory} {' '.join(wanted)}")
                directory.mkdir(parents=True, exist_ok=True)
                npm = ["npm", "install", "--prefix", str(directory), "--save-exact", "--no-audit", "--no-fund"]
                npm += ["--loglevel=error", "--fetch-retries=2", "--fetch-timeout=60000"]
                _install([*npm, *wanted], f"npm install {' '.join(wanted)}")
                versions = {p: self._installed_version(directory, p) for p in self.pins}
        if versions != self.pins:
            raise PeerUnavailable(f"npm installed {versions}, not {self.pins}")
        return Installed(self.name, directory, {p: str(v) for p, v in versions.items()}, tools)

    def app_argv(self, installed: Installed, *args: str) -> list[str]:
        """``node bench/peer/<app> ARGS...``."""
        return [shutil.which("node") or "node", str(bench_dir() / "peer" / self.app), *args]

    def process_env(self, installed: Installed, dsn: str) -> dict[str, str]:
        return {"TASKFORGE_BENCH_PEER_DSN": dsn_url(dsn), "NODE_PATH": str(installed.directory / "node_modules")}
