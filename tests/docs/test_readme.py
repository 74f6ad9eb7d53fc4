"""The README's psql session works as written against a freshly migrated database."""

import re
import shutil
import subprocess
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

from taskforge import database as tfdb

from sqlcore_helpers import as_uri

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_psql_session(fresh_database):
    dsn = fresh_database("taskforge_readme")
    tfdb.migrate(dsn)
    block = re.findall(r"```sql\n(.*?)```", README.read_text(), re.S)[0]
    assert shutil.which("psql"), "psql is needed to run the README session"
    params = conninfo_to_dict(dsn)
    out = subprocess.run(
        [
            "psql",
            "-X",
            "-v",
            "ON_ERROR_STOP=1",
            "-h",
            params.get("host", "127.0.0.1"),
            "-p",
            str(params.get("port", 5432)),
            "-U",
            params.get("user", "postgres"),
            params["dbname"],
        ],
        input=block,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "SUCCEEDED" in out.stdout
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT t.state, t.attempt_count, a.state FROM taskforge.tf_tasks t "
            "JOIN taskforge.tf_attempts a USING (task_id)"
        ).fetchall()
        assert rows == [("SUCCEEDED", 1, "SUCCEEDED")]
        assert conn.execute("SELECT count(*) FROM taskforge.tf_invariant_violations").fetchone()[0] == 0
        # The replay promise the README makes: same key, same request -> same task, created = false.
        again = conn.execute(
            "SELECT task_id, created FROM taskforge.tf_submit(task_type => 'echo', "
            "payload => '{\"greeting\": \"hello\"}', idempotency_key => 'readme-1')"
        ).fetchone()
        assert again[1] is False
        try:
            conn.execute(
                "SELECT * FROM taskforge.tf_submit(task_type => 'echo', payload => '{}', idempotency_key => 'readme-1')"
            )
        except psycopg.Error as exc:
            assert exc.sqlstate == "TF409"
        else:
            raise AssertionError("a different request under the same key must fail with TF409")


def test_readme_worker_session(fresh_database):
    """The README's shell session with a scheduler and a worker works as written."""
    dsn = fresh_database("taskforge_readme_sh")
    tfdb.migrate(dsn)
    uri = as_uri(dsn)
    blocks = re.findall(r"```sh\n(.*?)```", README.read_text(), re.S)
    block = next(b for b in blocks if "taskforge worker" in b and "taskforge_dev" in b)
    assert "postgresql://postgres@127.0.0.1/taskforge_dev" in block
    script = block.replace("postgresql://postgres@127.0.0.1/taskforge_dev", uri)
    out = subprocess.run(["bash", "-e", "-c", script], cwd=README.parent, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT task_type, state, attempt_count FROM taskforge.tf_tasks ORDER BY task_id"
        ).fetchall()
        assert rows == [("sleep", "SUCCEEDED", 1), ("fail_once", "SUCCEEDED", 2)]
        stopped = conn.execute("SELECT count(*) FROM taskforge.tf_workers WHERE liveness <> 'stopped'").fetchone()[0]
        assert stopped == 0, "the worker must deregister on SIGTERM"
    assert out.stdout.count("SUCCEEDED") >= 2
