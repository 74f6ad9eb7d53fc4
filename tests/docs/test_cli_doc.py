"""docs/cli.md: every `taskforge ...` line of its sh blocks runs as written on a fresh database,
and the refusals it shows are exactly what the commands print."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from taskforge.cli import EXIT_REFUSED

ROOT = Path(__file__).resolve().parents[2]

LONG_RUNNING = {"worker", "scheduler", "demo"}


def _doc_blocks(kind: str) -> list[str]:
    text = (ROOT / "docs" / "cli.md").read_text()
    return re.findall(rf"```{kind}\n(.*?)```", text, re.S)


def test_cli_doc_examples_work_as_written(fresh_database):
    """Every `taskforge ...` line of the sh blocks of docs/cli.md runs, in order, on a fresh
    database (the long-running worker/scheduler/demo lines excepted), and the refusals shown
    in the text blocks print exactly the line shown."""
    dsn = fresh_database("taskforge_cli_doc")
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("TASKFORGE_DSN", "DATABASE_URL")},
        "TASKFORGE_DSN": dsn,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    commands = [
        line
        for block in _doc_blocks("sh")
        for line in block.splitlines()
        if line.startswith("taskforge ") and line.split()[1] not in LONG_RUNNING
    ]
    assert len(commands) >= 20
    outputs = []
    for command in commands:
        proc = subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, (command, proc.stderr)
        outputs.append(proc.stdout)
    combined = "".join(outputs)
    # The confirmation lines shown after the submit examples are what a fresh database prints.
    submit_output = next(b for b in _doc_blocks("text") if b.startswith("task 1 QUEUED (created)"))
    for line in submit_output.splitlines():
        assert line in combined.splitlines(), line
    assert "task 2 CANCELLED" in combined and "task 2 QUEUED again (max_attempts 3)" in combined

    refusals = next(b for b in _doc_blocks("text") if b.startswith("$ taskforge show 999999"))
    lines = refusals.splitlines()
    pairs = [(lines[i][2:], lines[i + 1]) for i in range(0, len(lines), 2)]
    assert len(pairs) == 12
    for command, expected in pairs:
        proc = subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode in (2, EXIT_REFUSED), (command, proc.returncode, proc.stderr)
        assert proc.stderr.strip() == expected, (command, proc.stderr)
