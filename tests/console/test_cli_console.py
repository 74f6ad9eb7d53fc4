"""``taskforge console``: the bind refusal, and a real waitress process serving the app."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from taskforge.cli import main
from taskforge.cli.console import bind_problem, is_loopback

from console_support import TOKEN

TASKFORGE = Path(sys.executable).with_name("taskforge")


@pytest.mark.parametrize("host", ["127.0.0.1", "127.3.4.5", "localhost", "::1", "[::1]", "LOCALHOST"])
def test_loopback_addresses(host: str) -> None:
    assert is_loopback(host)
    assert bind_problem(host, auth_configured=False, insecure_bind=False) is None


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "example.com", "localhost.example.com", ""])
def test_other_addresses_need_auth_or_the_flag(host: str) -> None:
    assert not is_loopback(host)
    problem = bind_problem(host, auth_configured=False, insecure_bind=False)
    assert problem is not None and "TASKFORGE_CONSOLE_TOKEN" in problem and "--insecure-bind" in problem
    assert bind_problem(host, auth_configured=True, insecure_bind=False) is None
    assert bind_problem(host, auth_configured=False, insecure_bind=True) is None


def _run(args: list[str], env: dict[str, str] | None = None) -> Any:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TASKFORGE_CONSOLE_")}
    clean.update(env or {})
    return CliRunner().invoke(main, args, env=clean, catch_exceptions=False)


def test_cli_refuses_a_public_address_without_auth(console_dsn: str) -> None:
    result = _run(["console", "--dsn", console_dsn, "--host", "0.0.0.0"], env={"TASKFORGE_CONSOLE_TOKEN": ""})
    assert result.exit_code == 2
    assert "refusing to serve on '0.0.0.0'" in result.output


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--prefix", "/a b"], {}, "prefix"),
        (["--port", "70000"], {}, "--port"),
        (["--statement-timeout", "0"], {}, "--statement-timeout"),
        ([], {"TASKFORGE_CONSOLE_TOKEN": "short"}, "at least 16 characters"),
    ],
)
def test_cli_refuses_bad_settings(console_dsn: str, args: list[str], env: dict[str, str], message: str) -> None:
    result = _run(["console", "--dsn", console_dsn, *args], env=env)
    assert result.exit_code == 2
    assert message in result.output


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM])
def test_serves_with_waitress_under_a_prefix(console_dsn: str, stop_signal: int) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TASKFORGE_CONSOLE_")}
    env["TASKFORGE_CONSOLE_TOKEN"] = TOKEN
    process = subprocess.Popen(
        [str(TASKFORGE), "console", "--dsn", console_dsn, "--port", "0", "--prefix", "/tasks", "--read-only"],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        match = re.match(r"taskforge console: (http://127\.0\.0\.1:\d+/tasks/) \(read-only\)$", line.strip())
        assert match, line
        base = match.group(1)
        deadline = time.monotonic() + 20
        while True:
            try:
                status, body = _get(base + "healthz")
                break
            except (urllib.error.URLError, ConnectionError):
                assert time.monotonic() < deadline, "the console did not answer"
                time.sleep(0.1)
        assert status == 200 and body["status"] == "ok" and body["read_only"] is True
        assert _get(base + "api/tasks")[0] == 401
        status, body = _get(base + "api/tasks?limit=1", {"Authorization": f"Bearer {TOKEN}"})
        assert status == 200 and "tasks" in body
    finally:
        process.send_signal(stop_signal)
        try:
            code = process.wait(15)
        finally:
            if process.poll() is None:
                process.kill()
    assert code == 0
