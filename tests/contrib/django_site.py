"""The example Django project (django_project/, which docs/django.md quotes) and the virtualenv
it runs in, for the tests of taskforge.contrib.django.

The virtualenv is ``.taskforge/django-venv/<key>`` in the checkout (git-ignored), ``key`` naming
the interpreter's version and a hash of pyproject.toml, so a change of the dependencies makes a
new one. It is made on first use (``python -m venv``, then ``pip install -e '<checkout>[django]'``:
about a minute) with the first Python >= 3.12 that
:func:`taskforge.benchmarks.peers.runtimes.find_python` finds (``$TASKFORGE_BENCH_PEER_PYTHON``,
this interpreter, python3.N on PATH, pyenv's versions), under a lock file, and reused after; older
ones are removed. No interpreter or a failed install fails the tests (never a skip).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import re
import shutil
import socket
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from taskforge import database as tfdb
from taskforge.benchmarks.peers.base import PeerUnavailable
from taskforge.benchmarks.peers.runtimes import find_python
from taskforge.processes import ManagedProcess, ProcessHarness

from itest_support import ROOT, wait_for

PROJECT = Path(__file__).resolve().parent / "django_project"
DOC = ROOT / "docs" / "django.md"
VENVS = ROOT / ".taskforge" / "django-venv"
#: Seconds a venv may take to build (pip retries a failed download twice, 60 s a try).
INSTALL_TIMEOUT = 600


def documented_sql() -> str:
    """The set-up SQL of docs/django.md (its one ``sql`` block), as the tests run it."""
    (block,) = re.findall(r"```sql\n(.*?)```", DOC.read_text(), re.S)
    return block


def documented_worker_args() -> list[str]:
    """The options of docs/django.md's ``python manage.py taskforge_worker`` command line."""
    (options,) = re.findall(r"^python manage\.py taskforge_worker(.*)$", DOC.read_text(), re.M)
    return options.split()


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _run_install(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False)
    if done.returncode != 0:
        pytest.fail(f"{' '.join(argv)} exited {done.returncode}:\n{(done.stdout + done.stderr)[-3000:]}", pytrace=False)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Shop:
    """The example project against one database: ``manage.py`` commands run to completion, its
    development server and ``taskforge_worker`` processes (through the project's process
    harness; their logs are printed at teardown), and HTTP requests to its views."""

    def __init__(self, python: Path, dsn: str, tmp_path: Path) -> None:
        params = conninfo_to_dict(dsn)
        self.python, self.dsn = python, dsn
        self.env = {
            "DJANGO_SETTINGS_MODULE": "shop_site.settings",
            "SHOP_DB_NAME": str(params["dbname"]),
            "SHOP_DB_USER": str(params.get("user") or ""),
            "SHOP_DB_PASSWORD": str(params.get("password") or ""),
            "SHOP_DB_HOST": str(params.get("host") or ""),
            "SHOP_DB_PORT": str(params.get("port") or ""),
        }
        self.harness = ProcessHarness(dsn, tmp_path / "logs", env=self.env, cwd=PROJECT)
        self.url: str | None = None
        self.server: ManagedProcess | None = None

    def manage(
        self, *args: str, env: dict[str, str] | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """Run ``python manage.py ARGS...`` to its end (output captured, not checked)."""
        return subprocess.run(
            [str(self.python), "manage.py", *args],
            cwd=PROJECT,
            env={**self.harness.child_env(), **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def shell(self, code: str) -> Any:
        """Run ``code`` in ``manage.py shell``; the JSON its last output line holds."""
        done = self.manage("shell", "--no-imports", "-c", code)
        assert done.returncode == 0, done.stdout + done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])

    def serve(self) -> None:
        """Start ``manage.py runserver`` and wait until it answers."""
        port = _free_port()
        self.server = self.harness.start(
            [str(self.python), "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
            kind="django",
            name="runserver",
        )
        self.url = f"http://127.0.0.1:{port}"

        def answers() -> bool:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
            return False

        wait_for(answers, message="the Django development server", procs=[self.server])

    def worker(self, *args: str, env: dict[str, str] | None = None, name: str | None = None) -> ManagedProcess:
        """Start ``manage.py taskforge_worker --log-level DEBUG ARGS...``."""
        name = name or f"worker-{self.harness.count('worker') + 1}"
        argv = [str(self.python), "manage.py", "taskforge_worker", "--name", name, "--log-level", "DEBUG", *args]
        return self.harness.start(argv, kind="worker", name=name, env=env)

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """``(status, decoded JSON)`` of one request to the development server."""
        assert self.url, "serve() first"
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        try:
            with urllib.request.urlopen(req, timeout=60) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    def post(self, path: str, body: Any) -> Any:
        """POST ``body`` as JSON; the decoded answer, which must be 200."""
        status, answer = self.request("POST", path, body)
        assert status == 200, (status, answer)
        return answer

    def result(self, result_id: str, *, view: str = "results") -> Any:
        status, answer = self.request("GET", f"/{view}/{result_id}")
        assert status == 200, (status, answer)
        return answer

    def finished(self, result_id: str, *, view: str = "results") -> Any:
        """The result once its status is SUCCESSFUL or FAILED (fails after LONG seconds)."""

        def done() -> Any:
            answer = self.result(result_id, view=view)
            return answer if answer["status"] in ("SUCCESSFUL", "FAILED") else None

        return wait_for(done, message=f"task result {result_id}", procs=self.harness.alive())

    def shutdown(self) -> None:
        """Stop every process (SIGTERM, then SIGKILL) and print their logs."""
        self.harness.stop_all(timeout=30)
        for proc in self.harness.processes:
            print(f"----- {proc.kind} {proc.name} (exit {proc.returncode}) {proc.log_path}\n{proc.tail(80)}")


def prepare_database(dsn: str) -> None:
    """What docs/django.md's set-up does to a database: TaskForge's schema (``taskforge db
    migrate``) and the backend's task types (its SQL)."""
    tfdb.migrate(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(documented_sql())


def django_python_path() -> Path:
    """The interpreter of the Django virtualenv (module docstring), made if need be. Fails the
    test (pytest.fail) when no Python >= 3.12 is found or an install fails."""
    try:
        base, version = find_python((3, 12))
    except PeerUnavailable as exc:
        pytest.fail(f"the Django tests need Python >= 3.12 for Django 6: {exc}", pytrace=False)
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()[:16]
    venv = VENVS / f"py{version}-{digest}"
    python, ready = venv / "bin" / "python", venv / ".taskforge-ready"
    with _locked(VENVS.parent / "django-venv.lock"):
        if not ready.exists():
            shutil.rmtree(venv, ignore_errors=True)
            _run_install([base, "-m", "venv", str(venv)])
            _run_install([str(python), "-m", "pip", "install", "-q", "--retries", "2", "--timeout", "60",
                          "-e", f"{ROOT}[django]"])  # fmt: skip
            ready.write_text(f"{version}\n")
            for old in VENVS.iterdir():
                if old.is_dir() and old != venv:
                    shutil.rmtree(old, ignore_errors=True)
    return python
