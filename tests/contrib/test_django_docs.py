"""docs/django.md quotes the example project (django_project/) that the other tests of this
folder run, and names only worker options that exist."""

from __future__ import annotations

import re
import subprocess

from django_site import DOC, PROJECT, documented_sql, documented_worker_args
from itest_support import ROOT

#: A caption naming a file of the example project, then the fenced block quoted from it (the
#: block may be indented, inside a list item).
QUOTE = re.compile(
    r"From\s+`(?P<path>tests/contrib/django_project/[^`]+)`:\n\n(?P<indent> *)```python\n(?P<body>.*?)\n(?P=indent)```",
    re.S,
)


def test_every_python_block_of_the_doc_is_quoted_from_the_example_project():
    text = DOC.read_text()
    quotes = list(QUOTE.finditer(text))
    assert len(quotes) == text.count("```python") >= 6
    for quote in quotes:
        indent = len(quote["indent"])
        lines = quote["body"].split("\n")
        assert all(not line.strip() or line.startswith(quote["indent"]) for line in lines), quote["path"]
        body = "\n".join(line[indent:] for line in lines)
        source = (ROOT / quote["path"]).read_text()
        assert body in source, f"docs/django.md quotes {quote['path']}, which no longer has:\n{body}"


def test_the_doc_registers_the_backends_default_task_types():
    sql = documented_sql()
    registered = re.findall(r"tf_register_task_type\('([^']+)'", sql)
    assert registered == ["django.task", "django.async_task"]
    # The defaults of TaskForgeBackend (contrib/django/backend.py, which needs Django to import).
    backend = (ROOT / "clients/python/taskforge/contrib/django/backend.py").read_text()
    assert '"TASK_TYPE": "django.task"' in backend and '"ASYNC_TASK_TYPE": "django.async_task"' in backend


def test_the_worker_options_the_doc_names_exist(django_python):
    text = DOC.read_text()
    section = text[text.index("## Running the worker") : text.index("## Failures and retries")]
    named = set(re.findall(r"`(--[a-z-]+)", section)) | {o for o in documented_worker_args() if o.startswith("--")}
    done = subprocess.run(
        [str(django_python), "manage.py", "taskforge_worker", "--help"],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert len(named) >= 8 and {o for o in named if o not in done.stdout} == set(), done.stdout
