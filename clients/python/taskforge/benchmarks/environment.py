"""What a result was measured on: CPU, PostgreSQL and its settings, code version, packages."""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

import psycopg

from .. import sql
from . import statements

__all__ = ["SETTINGS", "collect", "cpu_info", "git_commit"]

#: PostgreSQL settings that change what a queue benchmark measures.
SETTINGS = (
    "shared_buffers",
    "synchronous_commit",
    "fsync",
    "wal_level",
    "max_connections",
    "autovacuum",
    "work_mem",
    "full_page_writes",
    "commit_delay",
    "max_wal_size",
    "checkpoint_timeout",
)
PACKAGES = ("taskforge", "psycopg", "psycopg-binary", "psycopg-pool", "click", "matplotlib", "rich")


def cpu_info(path: Path = Path("/proc/cpuinfo")) -> dict[str, Any]:
    """CPU model and logical CPU count (from /proc/cpuinfo where it exists, else the platform)."""
    model, logical = None, 0
    try:
        for line in path.read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = model or value.strip()
            elif key.strip() == "processor":
                logical += 1
    except OSError:
        pass
    return {
        "model": model or platform.processor() or None,
        "logical_cpus": logical or os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
    }


def git_commit(start: Path | None = None) -> dict[str, Any] | None:
    """The checkout's commit and whether the tree has local changes; None outside a git checkout."""
    where = start or Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(where), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": head, "dirty": bool(dirty)}


def _versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


def collect(admin_dsn: str) -> dict[str, Any]:
    """Everything above plus the PostgreSQL version and :data:`SETTINGS` of the server at
    ``admin_dsn``; ``collected_at`` is the harness's wall clock (UTC, for humans)."""
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        version, version_num = sql.one_row(conn, statements.BENCH_SERVER_VERSION)
        settings: dict[str, str] = dict(conn.execute(statements.BENCH_SETTINGS, {"names": list(SETTINGS)}).fetchall())
    return {
        "collected_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "cpu": cpu_info(),
        "memory_bytes": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") if hasattr(os, "sysconf") else None,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "postgresql": {"version": version, "version_num": version_num, "settings": settings},
        "git": git_commit(),
        "packages": _versions(),
    }
