"""Unit-level tests of the handler registry, outcomes, error sanitising and worker settings."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time

import psycopg
import pytest

import taskforge
from taskforge import handlers, synthetic
from taskforge.handlers import (
    ERROR_MAX_BYTES,
    HandlerRegistry,
    ResultError,
    RetryableError,
    TaskCancelled,
    TaskContext,
    encode_result,
    error_json,
    run_handler,
    sanitize_text,
)


def ctx(attempt_number: int = 1, **kw) -> TaskContext:
    return TaskContext(task_id=kw.pop("task_id", 42), attempt_number=attempt_number, task_type="noop", queue="q", **kw)


# --- registry -------------------------------------------------------------------------------------


def test_decorator_is_exported_and_registers_in_the_process_registry():
    assert taskforge.handler is handlers.handler and taskforge.RetryableError is RetryableError

    @taskforge.handler("unit.registered")
    def fn(payload, ctx):
        return payload

    try:
        assert handlers.registry.get("unit.registered") is fn
        assert "unit.registered" in handlers.registry.task_types()
    finally:
        handlers.registry.unregister("unit.registered")
    assert handlers.registry.get("unit.registered") is None


def test_synthetic_types_are_registered_only_by_importing_taskforge_synthetic(tmp_path):
    assert set(synthetic.SYNTHETIC_TASK_TYPES) <= set(handlers.registry.task_types())
    assert set(synthetic.SYNTHETIC_TASK_TYPES) == {
        "noop",
        "sleep",
        "fail_once",
        "fail",
        "retryable_fail",
        "echo",
        "async_noop",
        "async_sleep",
    }
    # A fresh interpreter that imports the handler API but not taskforge.synthetic knows none of them.
    probe = "import taskforge, taskforge.worker; print(taskforge.registry.task_types())"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_registry_is_an_allowlist_with_checked_names_and_no_silent_overrides():
    reg = HandlerRegistry()
    assert reg.get("noop") is None and reg.task_types() == []

    def a(payload, ctx):
        return 1

    def b(payload, ctx):
        return 2

    reg.register("resize_image", a)
    reg.register("resize_image", a)  # the same function again is fine
    with pytest.raises(ValueError, match="already has a handler"):
        reg.register("resize_image", b)
    reg.register("resize_image", b, replace=True)
    assert reg.get("resize_image") is b
    for bad in ("Resize", "1abc", "", "a" * 64, "has space", None):
        with pytest.raises(ValueError, match="must match"):
            reg.register(bad, a)
    with pytest.raises(TypeError):
        reg.register("not_callable", 3)
    with pytest.raises(KeyError):
        reg.unregister("missing")


def test_import_handler_module_by_path_and_by_name(tmp_path, monkeypatch):
    mod = tmp_path / "unit_handlers_mod.py"
    mod.write_text("from taskforge import handler\n@handler('unit.from_file')\ndef f(payload, ctx):\n    return 1\n")
    try:
        handlers.import_handler_module(str(mod))
        assert handlers.registry.get("unit.from_file") is not None
        handlers.import_handler_module(str(mod))  # importing again does not re-register
    finally:
        handlers.registry.unregister("unit.from_file")
    pkg = tmp_path / "unitpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "tasks.py").write_text("from taskforge import handler\nhandler('unit.from_name')(lambda p, c: 2)\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        handlers.import_handler_module("unitpkg.tasks")
        assert handlers.registry.get("unit.from_name")({}, None) == 2
    finally:
        handlers.registry.unregister("unit.from_name")
    with pytest.raises(ImportError):
        handlers.import_handler_module(str(tmp_path / "missing.py"))


# --- context -------------------------------------------------------------------------------------


def test_context_fencing_token_and_flags():
    c = ctx(attempt_number=3, task_id=7)
    assert c.fencing_token == (7, 3)
    assert not c.cancel_requested and not c.lease_lost
    assert c.sleep(0.01) is False
    c.mark_cancel_requested()
    c.mark_lease_lost()
    assert c.cancel_requested and c.lease_lost
    assert c.sleep(30) is True  # returns at once once a cancel is requested


# --- outcomes ------------------------------------------------------------------------------------


def test_outcomes_of_the_builtin_handlers():
    b = synthetic.SYNTHETIC_HANDLERS
    assert run_handler(b["noop"], {}, ctx()) == handlers.Outcome("succeeded", None, None)
    assert run_handler(b["echo"], {"a": [1, "x"]}, ctx()).result == '{"a": [1, "x"]}'
    first, second = run_handler(b["fail_once"], {}, ctx(1)), run_handler(b["fail_once"], {}, ctx(2))
    assert first.outcome == "retryable" and first.error["type"] == "taskforge.handlers.RetryableError"
    assert second.outcome == "succeeded" and json.loads(second.result) == {"attempt_number": 2}
    failed = run_handler(b["fail"], {}, ctx())
    assert failed.outcome == "failed" and failed.error["type"] == "taskforge.synthetic.SyntheticFailure"
    assert run_handler(b["retryable_fail"], {}, ctx(5)).outcome == "retryable"
    assert json.loads(run_handler(b["sleep"], {"ms": 20}, ctx()).result) == {"slept_ms": 20}
    for bad in ({"ms": -1}, {"ms": "10"}, {"ms": True}, {"ms": math.nan}):
        out = run_handler(b["sleep"], bad, ctx())
        assert out.outcome == "failed" and "sleep: payload must be" in out.error["message"]
    cancelled = ctx()
    cancelled.mark_cancel_requested()
    assert run_handler(b["sleep"], {"ms": 60000}, cancelled).outcome == "cancelled"


def test_exception_kinds_map_to_outcomes():
    def raises(exc):
        def fn(payload, ctx):
            raise exc

        return fn

    assert run_handler(raises(RetryableError("later")), {}, ctx()).outcome == "retryable"
    assert run_handler(raises(TaskCancelled("stop")), {}, ctx()).outcome == "cancelled"
    out = run_handler(raises(KeyError("k")), {}, ctx())
    assert out.outcome == "failed" and out.error["type"] == "KeyError" and out.error["message"] == "'k'"
    assert "Traceback (most recent call last)" in out.error["traceback"]

    class Custom(RetryableError):
        pass

    assert run_handler(raises(Custom("subclass")), {}, ctx()).outcome == "retryable"


def test_an_exception_whose_str_raises_keeps_its_own_type():
    class Unprintable(Exception):
        def __str__(self):
            raise RuntimeError("str() blows up")

    class UnprintableRetry(RetryableError):
        def __str__(self):
            raise ValueError("no text either")

    def raises(exc):
        def fn(payload, ctx):
            raise exc

        return fn

    out = run_handler(raises(Unprintable("x")), {}, ctx())
    name = f"{__name__}.{Unprintable.__qualname__}"
    assert out.outcome == "failed" and out.error["type"] == name
    assert out.error["message"] == f"<unprintable {name} object: str() raised RuntimeError>"
    assert "blows up" not in json.dumps(out.error) and "Traceback (most recent call last)" in out.error["traceback"]
    retry = run_handler(raises(UnprintableRetry()), {}, ctx())
    assert retry.outcome == "retryable" and retry.error["type"].endswith("UnprintableRetry")
    assert retry.error["message"].endswith("str() raised ValueError>")


@pytest.mark.parametrize(
    "value, needle",
    [
        (math.nan, "NaN and Infinity are not allowed"),
        ({"x": [1, math.inf]}, "NaN and Infinity are not allowed"),
        ({"x": -math.inf}, "NaN and Infinity are not allowed"),
        ({"s": {1, 2}}, "not JSON-serialisable: Object of type set"),
        ({"t": "a\x00b"}, "NUL characters"),
        ({"t": "a\ud800b"}, "unpaired surrogate"),
        ("x" * (1024 * 1024), "at most 1048576 are stored"),
    ],
)
def test_results_postgres_cannot_store_fail_with_a_clear_error(value, needle):
    with pytest.raises(ResultError, match=needle.replace("(", r"\(")):
        encode_result(value)
    out = run_handler(lambda payload, ctx: value, {}, ctx())
    assert out.outcome == "failed" and out.result is None
    assert out.error["type"] == "taskforge.ResultError" and needle in out.error["message"]


def test_valid_results_are_strict_json_text():
    assert encode_result(None) is None
    assert (
        encode_result({"a": 1.5, "b": "\\u0000 is only text", "c": "ü😀"})
        == '{"a": 1.5, "b": "\\\\u0000 is only text", "c": "ü😀"}'
    )
    assert encode_result([1, 2]) == "[1, 2]" and encode_result("s") == '"s"'


# --- error sanitising ------------------------------------------------------------------------------


def test_sanitize_removes_nul_and_unpaired_surrogates_and_joins_pairs():
    assert sanitize_text("a\x00b") == "ab"
    assert sanitize_text("x\ud800y\udc00z") == "xyz"
    assert sanitize_text("pair:\ud83d\ude00!") == "pair:😀!"
    assert sanitize_text("plain ü 😀") == "plain ü 😀"
    assert sanitize_text(12) == "12"


def test_error_json_shape_and_cleaning():
    try:
        raise ValueError("bad\x00 value \udcff here")
    except ValueError as exc:
        err = error_json(exc)
    assert set(err) == {"type", "message", "traceback"}
    assert err["type"] == "ValueError" and err["message"] == "bad value  here"
    assert "test_error_json_shape_and_cleaning" in err["traceback"]
    text = json.dumps(err, ensure_ascii=False)
    text.encode("utf-8")  # storable: no surrogates left
    assert "\x00" not in text


@pytest.mark.parametrize(
    "message",
    [
        "m" * 1_000_000,
        "\x00\ud800" * 300_000 + "é" * 100_000,
        '"\\\n\x01' * 50_000,  # characters that JSON escapes (grow when encoded)
        "😀" * 200_000,
    ],
)
def test_error_json_is_capped(message):
    def deep(n):
        if n == 0:
            raise RuntimeError(message)
        deep(n - 1)

    try:
        deep(200)
    except RuntimeError as exc:
        err = error_json(exc)
    size = len(json.dumps(err, ensure_ascii=False).encode("utf-8"))
    assert size <= ERROR_MAX_BYTES
    assert err["truncated"] is True and err["type"] == "RuntimeError"
    assert len(err["message"]) <= handlers.ERROR_MESSAGE_MAX_CHARS
    assert err["traceback"] is None or "\x00" not in err["traceback"]


def test_small_errors_are_not_marked_truncated():
    err = error_json(type_name="x", message="short")
    assert err == {"type": "x", "message": "short", "traceback": None}


# --- worker and scheduler settings ----------------------------------------------------------------


def test_worker_config_defaults_and_validation():
    from taskforge.worker import WorkerConfig

    cfg = WorkerConfig()
    assert (
        cfg.concurrency,
        cfg.lease_seconds,
        cfg.renew_seconds,
        cfg.heartbeat_seconds,
        cfg.poll_seconds,
        cfg.grace_seconds,
        cfg.queues,
        cfg.task_types,
    ) == (1, 30.0, 10.0, 5.0, 1.0, 30.0, None, None)
    assert WorkerConfig(lease_seconds=2).renew_seconds == pytest.approx(2 / 3)
    assert WorkerConfig(queues=("a", "b", "a")).queues == ("a", "b")
    for bad in (
        {"concurrency": 0},
        {"lease_seconds": 0},
        {"lease_seconds": 90000},
        {"heartbeat_seconds": 0},
        {"poll_seconds": 0},
        {"grace_seconds": -1},
        {"queues": ("bad queue",)},
        {"name": ""},
    ):
        with pytest.raises(ValueError):
            WorkerConfig(**bad)


def test_backoff_is_capped_and_jittered():
    from taskforge.worker import Backoff

    b = Backoff(base=0.1, cap=5.0)
    delays = [b.next_delay() for _ in range(100)]
    assert all(0.05 <= d <= 5.0 for d in delays)
    assert max(delays[-50:]) <= 5.0 and min(delays[-50:]) >= 2.5
    b.reset()
    assert b.next_delay() <= 0.1


def test_scheduler_sleeps_until_the_earliest_deadline_computed_by_the_database():
    from taskforge.scheduler import WAKE_AFTER_DEADLINE, Scheduler, SchedulerConfig, TickResult

    s = Scheduler("dbname=unused", SchedulerConfig(max_interval_seconds=1.0))
    assert s._sleep_seconds(TickResult(0, 0, 0, None, None), 0) == 1.0
    assert s._sleep_seconds(TickResult(0, 0, 0, 0.25, None), 0) == pytest.approx(0.25 + WAKE_AFTER_DEADLINE)
    assert s._sleep_seconds(TickResult(0, 0, 0, 0.5, 0.1), 0) == pytest.approx(0.1 + WAKE_AFTER_DEADLINE)
    assert s._sleep_seconds(TickResult(0, 0, 0, 30.0, None), 0) == 1.0
    assert s._sleep_seconds(TickResult(0, 0, 0, -0.5, None), 0) == pytest.approx(WAKE_AFTER_DEADLINE)
    # An overdue deadline that a pass could not act on (row locked) backs off instead of spinning.
    assert s._sleep_seconds(TickResult(0, 0, 0, -0.5, None), 3) == pytest.approx(WAKE_AFTER_DEADLINE * 8)
    with pytest.raises(ValueError):
        SchedulerConfig(batch_size=0)
    with pytest.raises(ValueError):
        SchedulerConfig(max_interval_seconds=0)
    with pytest.raises(ValueError, match="heartbeat_seconds"):
        SchedulerConfig(heartbeat_seconds=0)
    with pytest.raises(ValueError, match="name"):
        SchedulerConfig(name="")


def test_scheduler_retries_transient_errors_and_stops_on_permanent_ones():
    """The scheduler classifies errors like the worker: a failover's 25006 is retried, a data error is not."""
    from taskforge.scheduler import Scheduler, SchedulerConfig, TickResult

    s = Scheduler("dbname=unused", SchedulerConfig(max_interval_seconds=0.01))
    calls = []

    def tick():
        calls.append(1)
        if len(calls) == 1:
            raise psycopg.errors.ReadOnlySqlTransaction("cannot execute in a read-only transaction")
        s.stop()
        return TickResult(0, 0, 0, None, None)

    s.tick = tick
    s.heartbeat = lambda **_: None  # this test is about the pass's errors
    s._loop()
    assert len(calls) == 2, "a transient error must be retried, not end the scheduler"

    s2 = Scheduler("dbname=unused", SchedulerConfig(max_interval_seconds=0.01))

    def refused():
        raise psycopg.errors.InvalidParameterValue("a programming error (SQLSTATE class 22)")

    s2.tick = refused
    s2.heartbeat = lambda **_: None
    with pytest.raises(psycopg.Error):
        s2._loop()


def test_scheduler_beats_before_its_first_pass_and_never_sleeps_past_a_beat():
    """tf_scheduler_heartbeat comes first, then every heartbeat_seconds, even when a pass could
    sleep max_interval_seconds (60 s here)."""
    from taskforge.scheduler import Scheduler, SchedulerConfig, TickResult

    s = Scheduler("dbname=unused", SchedulerConfig(max_interval_seconds=60, heartbeat_seconds=0.05))
    events = []

    def heartbeat(*, stopping=False):
        events.append("beat")
        s._next_beat = time.monotonic() + s.config.heartbeat_seconds

    def tick():
        events.append("tick")
        if events.count("tick") == 4:
            s.stop()
        return TickResult(0, 0, 0, None, None)

    s.heartbeat, s.tick = heartbeat, tick
    started = time.monotonic()
    s._loop()
    assert time.monotonic() - started < 10
    assert events[:2] == ["beat", "tick"]
    assert events.count("beat") >= 3, events
