"""docs/client.md: its python blocks run as written, in order, on a fresh database, and every
``print`` shows what the comment beside it (or on the line after it) says."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from taskforge import database as tfdb

DOC = Path(__file__).resolve().parents[2] / "docs" / "client.md"


def _expected(block: str) -> list[str]:
    """The output each print of ``block`` promises: ``print(...)  # shown`` or a comment line
    right after a print without one."""
    lines = block.splitlines()
    shown = []
    for i, line in enumerate(lines):
        if not line.strip().startswith("print("):
            continue
        same_line = re.search(r"\)\s+#\s(.*)$", line)
        if same_line:
            shown.append(same_line.group(1).strip())
        else:
            shown.append(lines[i + 1].strip().removeprefix("# "))
    return shown


def test_client_doc_examples_run_as_written(fresh_database):
    dsn = fresh_database("taskforge_client_doc")
    tfdb.migrate(dsn)
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 5
    namespace: dict[str, object] = {"dsn": dsn}
    for block in blocks:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block, str(DOC), "exec"), namespace)
        assert out.getvalue().splitlines() == _expected(block), block
