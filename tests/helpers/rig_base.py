"""What the chaos rig (chaos_rig.py) and the failover rig (ha_rig.py) share: SQL on the rig's own
connection that reconnects while the server restarts or fails over, waiting for a condition
while watching for processes that died, and the JSON report file."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import psycopg

from taskforge.processes import ProcessHarness


class RigBase:
    """A rig with ``dsn`` (its database) and ``harness`` (its processes). Subclasses set
    ``ADMIN_CONNECT`` (extra arguments of the rig's own connection) and ``WAIT_TIMEOUT`` (s)."""

    ADMIN_CONNECT: ClassVar[dict[str, Any]] = {}
    WAIT_TIMEOUT: ClassVar[float] = 180.0
    dsn: str
    harness: ProcessHarness
    _admin: psycopg.Connection[Any] | None = None

    def sql(self, query: str, params: Any = None, timeout: float = 90.0) -> list[tuple[Any, ...]]:
        """One statement on the rig's own autocommit connection, reconnecting (every 0.2 s) while
        the server restarts or fails over, for up to ``timeout`` seconds; the rows, or [] for a
        statement that returns none. Raises the last OperationalError after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                if self._admin is None or self._admin.closed:
                    self._admin = psycopg.connect(self.dsn, autocommit=True, **self.ADMIN_CONNECT)
                cur = self._admin.execute(query, params)
                return cur.fetchall() if cur.description else []
            except psycopg.OperationalError:
                self.close_admin()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def sql_value(self, query: str, params: Any = None) -> Any:
        return self.sql(query, params)[0][0]

    def close_admin(self) -> None:
        with contextlib.suppress(psycopg.Error):
            if self._admin is not None:
                self._admin.close()
        self._admin = None

    def unexpected_exits(self) -> list[str]:
        """One entry per process that exited while it should run: name, code, its log's tail."""
        return [f"{p.name} exited with {p.returncode}:\n{p.tail(30)}" for p in self.harness.exited_unexpectedly()]

    def wait(self, predicate: Callable[[], Any], message: str, timeout: float | None = None) -> float:
        """Poll (every 0.1 s) until ``predicate()`` is truthy; the seconds waited. Raises
        AssertionError at once with the logs of a process that exited meanwhile, and after
        ``timeout`` (default ``WAIT_TIMEOUT``) seconds."""
        limit = self.WAIT_TIMEOUT if timeout is None else timeout
        start = time.monotonic()
        while not predicate():
            dead = self.unexpected_exits()
            if dead:
                raise AssertionError(f"while waiting for {message}: " + "\n".join(dead))
            if time.monotonic() - start > limit:
                raise AssertionError(f"timed out after {limit:.0f} s waiting for {message}")
            time.sleep(0.1)
        return time.monotonic() - start


def write_report(summary: dict[str, Any], path: Path) -> None:
    """``summary`` as indented JSON at ``path`` (its folder made)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(summary, indent=2) + "\n")
