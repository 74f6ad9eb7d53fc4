"""docs/worker.md: the walk-through runs as written (against a fresh database)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from psycopg.conninfo import conninfo_to_dict

from itest_support import ROOT
from sqlcore_helpers import as_uri

pytestmark = pytest.mark.timeout(300)

DOC = ROOT / "docs" / "worker.md"
DOC_DSN = "postgresql://postgres@127.0.0.1/taskforge_dev"


def test_walkthrough_runs_as_written(fresh_database, tmp_path):
    dsn = fresh_database("taskforge_walkthrough")  # empty: the walk-through migrates it
    p = conninfo_to_dict(dsn)
    uri = as_uri(dsn)
    text = DOC.read_text()
    section = text[text.index("## Walk-through") : text.index("## The handler API")]
    setup, check = re.findall(r"```sh\n(.*?)```", section, re.S)[:2]
    assert DOC_DSN in setup
    # The same commands, pointed at the test database, from a directory that looks like a checkout.
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    (tmp_path / ".venv").symlink_to(Path(sys.executable).parents[1])
    wait_until_done = (
        "for i in $(seq 600); do\n"
        '  n=$(psql "$TASKFORGE_DSN" -XAtc "SELECT count(*) FROM taskforge.tasks WHERE queue = \'examples\' '
        "AND state IN ('SUCCEEDED', 'FAILED')\")\n"
        '  [ "$n" = 2 ] && break; sleep 0.1\n'
        "done\n"
    )
    script = "set -e\n" + setup.replace(DOC_DSN, uri) + wait_until_done + check + "kill %1 %2\nwait\n"
    env = {k: v for k, v in os.environ.items() if k not in ("TASKFORGE_DSN", "DATABASE_URL")}
    if p.get("password"):
        env["PGPASSWORD"] = p["password"]
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "applied: 0001_initial" in out
    rows = re.findall(r"^\s*(\d+) \| (\w+)\s+\|\s+(\d+) \| (.*)$", out, re.M)
    assert [(state, attempts) for _, state, attempts, _ in rows] == [("SUCCEEDED", "1"), ("SUCCEEDED", "2")], out
    first_id = rows[0][0]
    assert rows[0][3].strip() == f'{{"words": 6, "output": "word-count-output/task-{first_id}.json", "distinct": 4}}'
    assert '"counts": {"to": 2, "be": 2, "or": 1, "not": 1}' in out
    # Both processes stopped gracefully on SIGTERM.
    assert "deregistered; exiting" in done.stderr and "scheduler stopped" in done.stderr, done.stderr
