"""Fuzzing every text and JSON argument of the public SQL functions, periodic schedules included
(hypothesis; the contract and the strategies are in tests/helpers/fuzz_support.py).

Each test predicts from the documented rules (function headers, docs/sql-api.md) whether a call
is valid. A valid call must succeed and do what the documentation says, its text and JSON
stored exactly as given (SQL-injection strings among them, so they are data); an invalid one
must be refused with TF400/TF404/TF409 naming one of the arguments that broke a rule, and change
no row of any table. Whole-number arguments are fuzzed on their own (any size, fractions, NaN and
infinities, each sent with the type psycopg gives it); their edges are also pinned in pgTAP
(db/tests/_tf_check_int/test_wide_integers.sql).

Arguments PostgreSQL cannot convert to the parameter's type never reach a function; the last
test pins what happens to them (docs/sql-api.md, Errors).
"""

from __future__ import annotations

import json
import secrets
import uuid
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import psycopg
import pytest
from hypothesis import event, given, strategies as st
from psycopg.types.json import Jsonb

from taskforge.names import QUEUE_PATTERN, SCHEDULE_PATTERN, TASK_TYPE_PATTERN

from fuzz_support import (
    FUZZ,
    REFUSALS,
    fuzz_database,
    json_values,
    mostly_valid,
    objects,
    payloads,
    queue_names,
    snapshot,
    task_type_names,
    texts,
)

OUTCOMES = ("succeeded", "failed", "retryable", "cancelled")
MAX_ERROR_TEXT = 16 * 1024

VALID_QUEUES = st.from_regex(QUEUE_PATTERN, fullmatch=True)
VALID_TYPES = st.from_regex(TASK_TYPE_PATTERN, fullmatch=True)
outcomes = mostly_valid(st.sampled_from(OUTCOMES), st.one_of(texts, st.none()))
name_lists = mostly_valid(
    st.one_of(st.none(), st.lists(VALID_QUEUES, max_size=3)), st.lists(st.one_of(queue_names, st.none()), max_size=3)
)
type_lists = mostly_valid(
    st.one_of(st.none(), st.lists(VALID_TYPES, max_size=3)), st.lists(st.one_of(task_type_names, st.none()), max_size=3)
)
maybe_json = st.one_of(st.just(None), json_values.map(Jsonb))  # None: SQL NULL; Jsonb(None): JSON null


@pytest.fixture(scope="module")
def fz(admin_dsn):
    """An autocommit connection (a superuser) to a database of this module's own."""
    with fuzz_database(admin_dsn) as dsn, psycopg.connect(dsn, autocommit=True) as conn:
        yield conn


@pytest.fixture(scope="module")
def worker_id(fz):
    return fz.execute("SELECT taskforge.tf_register_worker(name => 'fuzz-worker')").fetchone()[0]


@dataclass
class Outcome:
    rows: list[tuple[Any, ...]] | None = None
    error: psycopg.Error | None = None

    @property
    def column(self) -> str:
        return (self.error.diag.column_name or "") if self.error is not None else ""


def call(conn: psycopg.Connection[Any], query: str, params: dict[str, Any]) -> Outcome:
    """Run one call; a refusal must be TF400/TF404/TF409 and leave every table as it was."""
    before = snapshot(conn)
    try:
        return Outcome(rows=conn.execute(query, params).fetchall())
    except psycopg.Error as exc:
        assert exc.sqlstate in REFUSALS, f"{query} {params!r}: {exc.sqlstate} {exc}"
        assert snapshot(conn) == before, f"a refused call changed a table: {query} {params!r}: {exc}"
        return Outcome(error=exc)


def expect(outcome: Outcome, invalid: set[str], what: object) -> None:
    """Valid (``invalid`` empty): the call succeeded. Invalid: refused naming one of ``invalid``.
    (``--hypothesis-show-statistics`` shows how many calls of each kind a run made.)"""
    event("valid call" if not invalid else "invalid call")
    if not invalid:
        assert outcome.error is None, f"{what}: refused although valid: {outcome.error.sqlstate} {outcome.error}"
    else:
        assert outcome.error is not None, f"{what}: accepted although {sorted(invalid)} break the rules"
        assert outcome.error.sqlstate == "TF400", f"{what}: {outcome.error.sqlstate} {outcome.error}"
        assert any(outcome.column.startswith(arg) for arg in invalid), (
            f"{what}: the error names {outcome.column!r}, not one of {sorted(invalid)}: {outcome.error}"
        )


def registered(conn: psycopg.Connection[Any]) -> set[str]:
    return {r[0] for r in conn.execute("SELECT task_type FROM taskforge.task_types").fetchall()}


def names_ok(names: list[str | None] | None, pattern) -> bool:
    return names is None or all(n is not None and pattern.fullmatch(n) for n in names)


def fresh_queue() -> str:
    return f"fz_{secrets.token_hex(6)}"


def submit_task(conn, queue: str, task_type: str = "noop") -> int:
    return conn.execute(
        "SELECT task_id FROM taskforge.tf_submit(task_type => %s, queue => %s)", (task_type, queue)
    ).fetchone()[0]


def claimed(conn, worker_id, n: int = 1) -> tuple[str, list[tuple[int, int]]]:
    """Submit n tasks on a fresh queue and claim them: (queue, [(task_id, attempt_number)])."""
    queue = fresh_queue()
    for _ in range(n):
        submit_task(conn, queue)
    rows = conn.execute(
        "SELECT task_id, attempt_number FROM taskforge.tf_claim(worker_id => %s, queues => %s, max_tasks => %s)",
        (worker_id, [queue], n),
    ).fetchall()
    assert len(rows) == n
    return queue, rows


def same_json(conn, stored_sql: str, params: dict[str, Any]) -> bool:
    """jsonb equality in the database (numbers compare by value, as jsonb stores them)."""
    return conn.execute(stored_sql, params).fetchone()[0]


# --- submit --------------------------------------------------------------------------------------


@FUZZ
@given(
    task_type=mostly_valid(st.sampled_from(["noop", "echo", "sleep"]), task_type_names),
    payload=mostly_valid(objects, payloads),
    queue=mostly_valid(VALID_QUEUES, queue_names),
    key=st.one_of(st.none(), texts),
)
def test_fuzz_tf_submit(fz, task_type, payload, queue, key):
    invalid = set()
    if task_type not in registered(fz):
        invalid.add("task_type")
    if not isinstance(payload, dict):
        invalid.add("payload")
    if not QUEUE_PATTERN.fullmatch(queue):
        invalid.add("queue")
    if key is not None and not 1 <= len(key) <= 200:
        invalid.add("idempotency_key")
    params = {"task_type": task_type, "payload": Jsonb(payload), "queue": queue, "key": key}
    holder = None
    if not invalid and key is not None:
        holder = fz.execute(
            "SELECT task_id, fingerprint = taskforge._tf_fingerprint(%(task_type)s, %(payload)s, %(queue)s, 0, 3, "
            "NULL) FROM taskforge.tasks WHERE idempotency_key = %(key)s",
            params,
        ).fetchone()
    outcome = call(
        fz,
        "SELECT task_id, state, created FROM taskforge.tf_submit(task_type => %(task_type)s, payload => %(payload)s, "
        "queue => %(queue)s, idempotency_key => %(key)s)",
        params,
    )
    if holder is not None and not holder[1]:  # the key is taken by a different request
        assert outcome.error is not None and outcome.error.sqlstate == "TF409", outcome
        assert outcome.column == "idempotency_key"
        return
    expect(outcome, invalid, params)
    if invalid:
        return
    (task_id, state, created) = outcome.rows[0]
    if holder is not None:
        assert (task_id, created) == (holder[0], False)
        return
    assert (state, created) == ("QUEUED", True)
    stored = fz.execute(
        "SELECT task_type, queue, idempotency_key, payload = %(payload)s FROM taskforge.tasks WHERE task_id = %(id)s",
        {**params, "id": task_id},
    ).fetchone()
    assert stored == (task_type, queue, key, True)


def _request(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not _OMIT}


_OMIT = object()
requests_elements = mostly_valid(
    st.fixed_dictionaries(
        {
            "task_type": mostly_valid(st.just("noop"), st.one_of(st.just(_OMIT), task_type_names, json_values), 6),
            "payload": mostly_valid(st.one_of(st.just(_OMIT), objects), payloads, 6),
            "queue": mostly_valid(st.one_of(st.just(_OMIT), VALID_QUEUES), st.one_of(queue_names, json_values), 6),
            "idempotency_key": st.one_of(st.just(_OMIT), texts.map(lambda t: f"{t[:150]}|{uuid.uuid4().hex}")),
            "scheduled_at": mostly_valid(
                st.one_of(st.just(_OMIT), st.sampled_from(["2031-03-04T05:06:07Z", "2031-03-04 05:06:07+02:00"])),
                texts,
                6,
            ),
        }
    ).map(_request),
    st.one_of(
        json_values,
        st.fixed_dictionaries({"task_type": st.just("noop")}, optional={"extra": texts, "Queue": texts}),
    ),
    6,
)


def request_problems(index: int, element: Any, types: set[str]) -> set[str]:
    prefix = f"requests[{index}]"
    if not isinstance(element, dict):
        return {prefix}
    if set(element) - {"task_type", "payload", "queue", "idempotency_key", "scheduled_at"}:
        return {prefix}
    bad = set()
    for key in ("task_type", "queue", "idempotency_key", "scheduled_at"):
        if key in element and element[key] is not None and not isinstance(element[key], str):
            bad.add(f"{prefix}.{key}")
    task_type = element.get("task_type")
    if not isinstance(task_type, str) or task_type not in types:
        bad.add(f"{prefix}.task_type")
    if "payload" in element and not isinstance(element["payload"], dict):
        bad.add(f"{prefix}.payload")
    queue = element.get("queue", "default")
    if not isinstance(queue, str) or not QUEUE_PATTERN.fullmatch(queue):
        bad.add(f"{prefix}.queue")
    when = element.get("scheduled_at")
    if when is not None and when not in ("2031-03-04T05:06:07Z", "2031-03-04 05:06:07+02:00"):
        bad.add(f"{prefix}.scheduled_at?")  # a fuzz string: PostgreSQL's parser decides
    return bad


@FUZZ
@given(requests=mostly_valid(st.lists(requests_elements, min_size=1, max_size=3), json_values))
def test_fuzz_tf_submit_many(fz, requests):
    types = registered(fz)
    if not isinstance(requests, list) or not requests:
        invalid = {"requests"}
    else:
        invalid = set().union(*(request_problems(i, e, types) for i, e in enumerate(requests)))
    maybe = {p for p in invalid if p.endswith("?")}
    outcome = call(
        fz, "SELECT task_id, created FROM taskforge.tf_submit_many(requests => %(r)s)", {"r": Jsonb(requests)}
    )
    if invalid == maybe and outcome.error is None:
        invalid = set()  # only fuzz timestamps were in doubt, and PostgreSQL read them
    expect(outcome, {p.rstrip("?") for p in invalid}, requests)
    if invalid:
        return
    assert len(outcome.rows) == len(requests) and all(created for _, created in outcome.rows)
    for (task_id, _), element in zip(outcome.rows, requests, strict=True):
        stored = fz.execute(
            "SELECT queue, idempotency_key, payload = %(payload)s FROM taskforge.tasks WHERE task_id = %(id)s",
            {"payload": Jsonb(element.get("payload", {})), "id": task_id},
        ).fetchone()
        assert stored == (element.get("queue", "default"), element.get("idempotency_key"), True)


# --- cancel, retry -------------------------------------------------------------------------------


@FUZZ
@given(reason=st.one_of(st.none(), texts), target=st.sampled_from(["queued", "running", "terminal", "missing"]))
def test_fuzz_tf_cancel(fz, worker_id, reason, target):
    if target == "queued":
        task_id = submit_task(fz, fresh_queue())
    elif target == "running":
        task_id = claimed(fz, worker_id)[1][0][0]
    elif target == "terminal":
        task_id = submit_task(fz, fresh_queue())
        fz.execute("SELECT taskforge.tf_cancel(task_id => %s)", (task_id,))
    else:
        task_id = -secrets.randbelow(10**12) - 1
    outcome = call(
        fz,
        "SELECT task_state, cancel_requested FROM taskforge.tf_cancel(task_id => %(id)s, reason => %(reason)s)",
        {"id": task_id, "reason": reason},
    )
    if target == "missing":
        assert outcome.error is not None and outcome.error.sqlstate == "TF404", outcome
        return
    assert outcome.error is None, outcome.error
    assert outcome.rows[0] == {"queued": ("CANCELLED", True), "running": ("RUNNING", True)}.get(
        target, ("CANCELLED", True)
    )
    stored = fz.execute("SELECT cancel_reason FROM taskforge.tasks WHERE task_id = %s", (task_id,)).fetchone()[0]
    if target != "terminal":
        assert stored == (None if reason is None else reason[:1000])
    else:
        assert stored is None  # a terminal task is returned unchanged


@FUZZ
@given(target=st.sampled_from(["queued", "running", "failed", "cancelled", "missing"]))
def test_fuzz_tf_retry(fz, worker_id, target):
    if target == "running":
        task_id = claimed(fz, worker_id)[1][0][0]
    elif target == "failed":
        _, [(task_id, attempt)] = claimed(fz, worker_id)
        fz.execute(
            "SELECT * FROM taskforge.tf_finalize(task_id => %s, worker_id => %s, attempt_number => %s, "
            "outcome => 'failed')",
            (task_id, worker_id, attempt),
        )
    elif target == "missing":
        task_id = -secrets.randbelow(10**12) - 1
    else:
        task_id = submit_task(fz, fresh_queue())
        if target == "cancelled":
            fz.execute("SELECT taskforge.tf_cancel(task_id => %s)", (task_id,))
    outcome = call(fz, "SELECT task_state FROM taskforge.tf_retry(task_id => %(id)s)", {"id": task_id})
    if target in ("failed", "cancelled"):
        assert outcome.error is None and outcome.rows[0][0] == "QUEUED", outcome
    else:
        assert outcome.error is not None
        assert outcome.error.sqlstate == ("TF404" if target == "missing" else "TF409"), outcome.error


# --- work ----------------------------------------------------------------------------------------


@FUZZ
@given(queues=name_lists, task_types=type_lists)
def test_fuzz_tf_claim(fz, worker_id, queues, task_types):
    invalid = set()
    if not names_ok(queues, QUEUE_PATTERN):
        invalid.add("queues")
    if not names_ok(task_types, TASK_TYPE_PATTERN):
        invalid.add("task_types")
    outcome = call(
        fz,
        "SELECT task_id, task_type, queue FROM taskforge.tf_claim(worker_id => %(w)s, queues => %(q)s, "
        "task_types => %(t)s)",
        {"w": worker_id, "q": queues, "t": task_types},
    )
    expect(outcome, invalid, (queues, task_types))
    for _, task_type, queue in outcome.rows or []:
        assert queues is None or queue in queues
        assert task_types is None or task_type in task_types


def expected_error(error: Any) -> Any:
    """What tf_finalize stores for an error (docs/sql-api.md): JSON null is no error, an object
    itself, any other value {"message": value}."""
    if error is None:
        return None
    return error if isinstance(error, dict) else {"message": error}


@FUZZ
@given(outcome_=outcomes, result=maybe_json, error=maybe_json)
def test_fuzz_tf_finalize(fz, worker_id, outcome_, result, error):
    _, [(task_id, attempt)] = claimed(fz, worker_id)
    params = {"id": task_id, "w": worker_id, "n": attempt, "o": outcome_, "r": result, "e": error}
    outcome = call(
        fz,
        "SELECT accepted, task_state, reason FROM taskforge.tf_finalize(task_id => %(id)s, worker_id => %(w)s, "
        "attempt_number => %(n)s, outcome => %(o)s, result => %(r)s, error => %(e)s)",
        params,
    )
    expect(outcome, set() if outcome_ in OUTCOMES else {"outcome"}, params)
    if outcome.error is not None:
        return
    state = {"succeeded": "SUCCEEDED", "failed": "FAILED", "retryable": "RETRYING", "cancelled": "CANCELLED"}
    assert outcome.rows[0] == (True, state[outcome_], None)
    if outcome_ == "succeeded":
        assert same_json(
            fz, "SELECT result IS NOT DISTINCT FROM %(r)s FROM taskforge.attempts WHERE task_id = %(id)s", params
        )
    elif error is not None and len(json.dumps(error.obj, ensure_ascii=False)) < MAX_ERROR_TEXT // 2:
        assert same_json(
            fz,
            "SELECT error IS NOT DISTINCT FROM %(x)s FROM taskforge.attempts WHERE task_id = %(id)s",
            {"x": None if error.obj is None else Jsonb(expected_error(error.obj)), "id": task_id},
        )


def batch_params(worker_id, tokens, outcomes_, results, errors, **extra):
    return {
        "w": worker_id,
        "ids": [t for t, _ in tokens],
        "ns": [n for _, n in tokens],
        "o": outcomes_,
        "r": results,
        "e": errors,
        **extra,
    }


@FUZZ
@given(data=st.data())
def test_fuzz_tf_finalize_many(fz, worker_id, data):
    n = data.draw(st.integers(1, 3))
    _, tokens = claimed(fz, worker_id, n)
    outcomes_ = data.draw(st.lists(outcomes, min_size=n, max_size=n))
    results = data.draw(st.one_of(st.none(), st.lists(maybe_json, min_size=n, max_size=n)))
    errors = data.draw(st.one_of(st.none(), st.lists(maybe_json, min_size=n, max_size=n)))
    params = batch_params(worker_id, tokens, outcomes_, results, errors)
    outcome = call(
        fz,
        "SELECT task_id, accepted FROM taskforge.tf_finalize_many(worker_id => %(w)s, task_ids => %(ids)s, "
        "attempt_numbers => %(ns)s, outcomes => %(o)s, results => %(r)s, errors => %(e)s)",
        params,
    )
    expect(outcome, set() if all(o in OUTCOMES for o in outcomes_) else {"outcomes"}, params)
    if outcome.error is None:
        assert [accepted for _, accepted in outcome.rows] == [True] * n
        if results is not None:
            for (task_id, _), (o, r) in zip(outcome.rows, zip(outcomes_, results, strict=True), strict=True):
                if o == "succeeded":
                    assert same_json(
                        fz,
                        "SELECT result IS NOT DISTINCT FROM %(r)s FROM taskforge.attempts WHERE task_id = %(id)s",
                        {"r": r, "id": task_id},
                    )


@FUZZ
@given(data=st.data())
def test_fuzz_tf_finalize_and_claim(fz, worker_id, data):
    n = data.draw(st.integers(0, 2))
    tokens = claimed(fz, worker_id, n)[1] if n else []
    outcomes_ = data.draw(st.lists(outcomes, min_size=n, max_size=n))
    results = data.draw(st.one_of(st.none(), st.lists(maybe_json, min_size=n, max_size=n)))
    queues, task_types = data.draw(name_lists), data.draw(type_lists)
    params = batch_params(worker_id, tokens, outcomes_, results, None, q=queues, t=task_types)
    invalid = set()
    if not all(o in OUTCOMES for o in outcomes_):
        invalid.add("outcomes")
    if not names_ok(queues, QUEUE_PATTERN):
        invalid.add("queues")
    if not names_ok(task_types, TASK_TYPE_PATTERN):
        invalid.add("task_types")
    outcome = call(
        fz,
        "SELECT kind, task_id, accepted, queue, task_type FROM taskforge.tf_finalize_and_claim(worker_id => %(w)s, "
        "task_ids => %(ids)s, attempt_numbers => %(ns)s, outcomes => %(o)s, results => %(r)s, queues => %(q)s, "
        "task_types => %(t)s)",
        params,
    )
    expect(outcome, invalid, params)
    for kind, _, accepted, queue, task_type in outcome.rows or []:
        if kind == "claimed":
            assert queues is None or queue in queues
            assert task_types is None or task_type in task_types
        else:
            assert accepted is True


@FUZZ
@given(target=st.sampled_from(["own", "missing", "someone"]), many=st.booleans())
def test_fuzz_tf_renew(fz, worker_id, target, many):
    _, [(task_id, attempt)] = claimed(fz, worker_id)
    who = worker_id if target != "someone" else uuid.uuid4()
    task = task_id if target != "missing" else -secrets.randbelow(10**12) - 1
    params = {"id": task, "w": who, "n": attempt}
    if many:
        query = (
            "SELECT renewed, reason FROM taskforge.tf_renew_many(worker_id => %(w)s, "
            "task_ids => ARRAY[%(id)s]::bigint[], attempt_numbers => ARRAY[%(n)s]::int[])"
        )
    else:
        query = (
            "SELECT renewed, reason FROM taskforge.tf_renew(task_id => %(id)s, worker_id => %(w)s, "
            "attempt_number => %(n)s)"
        )
    outcome = call(fz, query, params)
    if target == "own":
        assert outcome.error is None and outcome.rows[0] == (True, None)
    elif target == "someone":  # not the owner: the guard's answer, nothing renewed
        assert outcome.error is None and outcome.rows[0] == (False, "not_owner")
    elif many:
        assert outcome.error is None and outcome.rows[0] == (False, "not_found")
    else:
        assert outcome.error is not None and outcome.error.sqlstate == "TF404", outcome


# --- registration, heartbeats, queues ------------------------------------------------------------


@FUZZ
@given(task_type=task_type_names, description=st.one_of(st.none(), texts))
def test_fuzz_tf_register_task_type(fz, task_type, description):
    before = fz.execute("SELECT description FROM taskforge.task_types WHERE task_type = %s", (task_type,)).fetchone()
    outcome = call(
        fz,
        "SELECT taskforge.tf_register_task_type(task_type => %(t)s, description => %(d)s)",
        {"t": task_type, "d": description},
    )
    expect(outcome, set() if TASK_TYPE_PATTERN.fullmatch(task_type) else {"task_type"}, task_type)
    if outcome.error is None:
        stored = fz.execute(
            "SELECT description FROM taskforge.task_types WHERE task_type = %s", (task_type,)
        ).fetchone()
        assert stored[0] == (description if description is not None else (before[0] if before else None))


@FUZZ
@given(name=texts, hostname=st.one_of(st.none(), texts, st.text("h", min_size=250, max_size=260)), queues=name_lists,
       task_types=type_lists)  # fmt: skip
def test_fuzz_tf_register_worker(fz, name, hostname, queues, task_types):
    invalid = set()
    if not 1 <= len(name) <= 200:
        invalid.add("name")
    if hostname is not None and len(hostname) > 255:
        invalid.add("hostname")
    if not names_ok(queues, QUEUE_PATTERN):
        invalid.add("queues")
    if not names_ok(task_types, TASK_TYPE_PATTERN):
        invalid.add("task_types")
    params = {"n": name, "h": hostname, "q": queues, "t": task_types}
    outcome = call(
        fz,
        "SELECT taskforge.tf_register_worker(name => %(n)s, hostname => %(h)s, queues => %(q)s, task_types => %(t)s)",
        params,
    )
    expect(outcome, invalid, params)
    if outcome.error is None:
        stored = fz.execute(
            "SELECT name, hostname, queues, task_types FROM taskforge.workers WHERE worker_id = %s",
            (outcome.rows[0][0],),
        ).fetchone()
        assert stored == (name, hostname, queues, task_types)


@FUZZ
@given(name=st.one_of(texts, st.none()), hostname=st.one_of(st.none(), texts, st.text("h", min_size=250, max_size=260)))
def test_fuzz_tf_scheduler_heartbeat(fz, name, hostname):
    invalid = set()
    if name is None or not 1 <= len(name) <= 200:
        invalid.add("name")
    if hostname is not None and len(hostname) > 255:
        invalid.add("hostname")
    scheduler_id = uuid.uuid4()
    outcome = call(
        fz,
        "SELECT taskforge.tf_scheduler_heartbeat(scheduler_id => %(id)s, name => %(n)s, hostname => %(h)s)",
        {"id": scheduler_id, "n": name, "h": hostname},
    )
    expect(outcome, invalid, (name, hostname))
    if outcome.error is None:
        stored = fz.execute(
            "SELECT name, hostname FROM taskforge.schedulers WHERE scheduler_id = %s", (scheduler_id,)
        ).fetchone()
        assert stored == (name, hostname)


@FUZZ
@given(queue=st.one_of(queue_names, st.none()), action=st.sampled_from(["pause", "resume", "limit", "unlimit"]))
def test_fuzz_queue_controls(fz, queue, action):
    query = {
        "pause": "SELECT taskforge.tf_pause_queue(queue => %(q)s)",
        "resume": "SELECT taskforge.tf_resume_queue(queue => %(q)s)",
        "limit": "SELECT taskforge.tf_set_queue_limit(queue => %(q)s, max_running => 7)",
        "unlimit": "SELECT taskforge.tf_set_queue_limit(queue => %(q)s, max_running => NULL)",
    }[action]
    outcome = call(fz, query, {"q": queue})
    expect(outcome, set() if queue is not None and QUEUE_PATTERN.fullmatch(queue) else {"queue"}, (action, queue))
    if outcome.error is None:
        row = fz.execute("SELECT paused, max_running FROM taskforge.tf_queues WHERE queue = %s", (queue,)).fetchone()
        if action in ("pause", "resume"):
            assert (row is None and action == "resume") or row[0] == (action == "pause")
        else:
            assert row is not None and row[1] == (7 if action == "limit" else None)


# --- periodic schedules ----------------------------------------------------------------------------

VALID_CRONS = (
    "* * * * *",
    "*/5 * * * *",
    "0 9 * * MON-FRI",
    "@daily",
    "30 2 1 * *",
    "59 23 31 12 7",
    "0 0 * JAN,JUL SUN",
)
cron_fields = st.sampled_from(
    ["*", "0", "*/2", "1-5", "60", "MON", "JAN", "L", "?", "7", "-1", ",", "*/0", "5/", "2-1"]
)
crons = st.one_of(
    st.sampled_from(VALID_CRONS),
    st.lists(cron_fields, min_size=3, max_size=6).map(" ".join),
    texts,
)
timezones = st.one_of(
    st.sampled_from(["UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata", "utc", "Mars/Olympus", "+02:00"]),
    texts,
)


@pytest.fixture(scope="module")
def zone_names(fz):
    return {r[0] for r in fz.execute("SELECT name FROM pg_timezone_names").fetchall()}


@FUZZ
@given(
    name=mostly_valid(st.from_regex(SCHEDULE_PATTERN, fullmatch=True), texts),
    cron=mostly_valid(st.sampled_from(VALID_CRONS), crons),
    task_type=mostly_valid(st.sampled_from(["noop", "echo"]), task_type_names),
    payload=mostly_valid(objects, payloads),
    queue=mostly_valid(VALID_QUEUES, queue_names),
    timezone=mostly_valid(st.sampled_from(["UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata"]), timezones),
)
def test_fuzz_tf_schedule_periodic(fz, zone_names, name, cron, task_type, payload, queue, timezone):
    invalid = set()
    if not SCHEDULE_PATTERN.fullmatch(name):
        invalid.add("name")
    if task_type not in registered(fz):
        invalid.add("task_type")
    if not isinstance(payload, dict):
        invalid.add("payload")
    if not QUEUE_PATTERN.fullmatch(queue):
        invalid.add("queue")
    if timezone not in zone_names:
        invalid.add("timezone")
    params = {"n": name, "c": cron, "t": task_type, "p": Jsonb(payload), "q": queue, "z": timezone}
    outcome = call(
        fz,
        "SELECT next_fire_at > clock_timestamp(), created FROM taskforge.tf_schedule_periodic(name => %(n)s, "
        "cron => %(c)s, task_type => %(t)s, payload => %(p)s, queue => %(q)s, timezone => %(z)s)",
        params,
    )
    if cron not in VALID_CRONS and outcome.column == "cron":
        invalid.add("cron")  # a generated expression: the cron parser decides, naming the field it refuses
    expect(outcome, invalid, params)
    if outcome.error is None:
        assert outcome.rows[0][0] is True  # the next tick is in the future
        stored = fz.execute(
            "SELECT cron, task_type, queue, timezone, payload = %(p)s FROM taskforge.periodic_schedules "
            "WHERE name = %(n)s",
            params,
        ).fetchone()
        assert stored == (cron, task_type, queue, timezone, True)


@FUZZ
@given(name=st.one_of(st.from_regex(SCHEDULE_PATTERN, fullmatch=True), texts, st.none()), exists=st.booleans())
def test_fuzz_tf_unschedule_periodic(fz, name, exists):
    valid = name is not None and bool(SCHEDULE_PATTERN.fullmatch(name))
    if valid and exists:
        fz.execute(
            "SELECT * FROM taskforge.tf_schedule_periodic(name => %s, cron => '@daily', task_type => 'noop')", (name,)
        )
    existed = (
        valid and fz.execute("SELECT count(*) FROM taskforge.periodic_schedules WHERE name = %s", (name,)).fetchone()[0]
    )
    outcome = call(fz, "SELECT taskforge.tf_unschedule_periodic(name => %(n)s)", {"n": name})
    expect(outcome, set() if valid else {"name"}, name)
    if valid:
        assert outcome.rows[0][0] is bool(existed)
        assert (
            fz.execute("SELECT count(*) FROM taskforge.periodic_schedules WHERE name = %s", (name,)).fetchone()[0] == 0
        )


# --- whole numbers -------------------------------------------------------------------------------

W = "'00000000-0000-0000-0000-0000000000ff'"  # a worker id no row has (the calls still validate first)
INT_MAX, BIGINT_MAX = 2**31 - 1, 2**63 - 1
#: (function.argument, call with %(v)s for it and valid values elsewhere, smallest and largest valid).
WHOLE_NUMBER_ARGUMENTS = [
    (
        "tf_submit.priority",
        "SELECT * FROM taskforge.tf_submit(task_type => 'noop', queue => 'fz_num', priority => %(v)s)",
        -32768,
        32767,
    ),
    (
        "tf_submit.max_attempts",
        "SELECT * FROM taskforge.tf_submit(task_type => 'noop', queue => 'fz_num', max_attempts => %(v)s)",
        1,
        1000,
    ),
    (
        "tf_schedule_periodic.priority",
        "SELECT * FROM taskforge.tf_schedule_periodic(name => 'fz-num', "
        "cron => '0 0 1 1 *', task_type => 'noop', priority => %(v)s)",
        -32768,
        32767,
    ),
    ("tf_retry.extra_attempts", "SELECT * FROM taskforge.tf_retry(task_id => -1, extra_attempts => %(v)s)", 1, 1000),
    (
        "tf_claim.max_tasks",
        f"SELECT * FROM taskforge.tf_claim(worker_id => {W}, queues => '{{fz_empty}}', max_tasks => %(v)s)",
        1,
        1000,
    ),
    ("tf_recover.max_tasks", "SELECT * FROM taskforge.tf_recover(max_tasks => %(v)s)", 1, 100000),
    (
        "tf_prune.max_tasks",
        "SELECT taskforge.tf_prune(older_than_seconds => 3153600000, max_tasks => %(v)s)",
        1,
        100000,
    ),
    (
        "tf_prune_workers.max_rows",
        "SELECT * FROM taskforge.tf_prune_workers(older_than_seconds => 3153600000, max_rows => %(v)s)",
        1,
        100000,
    ),
    ("tf_enqueue_periodic.max_tasks", "SELECT * FROM taskforge.tf_enqueue_periodic(max_tasks => %(v)s)", 1, 100000),
    (
        "tf_set_queue_limit.max_running",
        "SELECT taskforge.tf_set_queue_limit(queue => 'fz_num', max_running => %(v)s)",
        1,
        1000000,
    ),
    ("tf_backoff.failed_attempt", "SELECT taskforge.tf_backoff(failed_attempt => %(v)s)", 1, INT_MAX),
    ("tf_register_worker.pid", "SELECT taskforge.tf_register_worker(name => 'fz-num', pid => %(v)s)", 1, INT_MAX),
    (
        "tf_scheduler_heartbeat.pid",
        "SELECT taskforge.tf_scheduler_heartbeat(scheduler_id => gen_random_uuid(), name => 'fz-num', pid => %(v)s)",
        1,
        INT_MAX,
    ),
    (
        "tf_renew.task_id",
        f"SELECT * FROM taskforge.tf_renew(task_id => %(v)s, worker_id => {W}, attempt_number => 1)",
        -(2**63),
        BIGINT_MAX,
    ),
    (
        "tf_renew.attempt_number",
        f"SELECT * FROM taskforge.tf_renew(task_id => -1, worker_id => {W}, attempt_number => %(v)s)",
        1,
        INT_MAX,
    ),
    (
        "tf_finalize.task_id",
        f"SELECT * FROM taskforge.tf_finalize(task_id => %(v)s, worker_id => {W}, "
        "attempt_number => 1, outcome => 'failed')",
        -(2**63),
        BIGINT_MAX,
    ),
    (
        "tf_finalize.attempt_number",
        f"SELECT * FROM taskforge.tf_finalize(task_id => -1, worker_id => {W}, "
        "attempt_number => %(v)s, outcome => 'failed')",
        1,
        INT_MAX,
    ),
    ("tf_cancel.task_id", "SELECT * FROM taskforge.tf_cancel(task_id => %(v)s)", -(2**63), BIGINT_MAX),
    ("tf_retry.task_id", "SELECT * FROM taskforge.tf_retry(task_id => %(v)s)", -(2**63), BIGINT_MAX),
    (
        "tf_renew_many.task_ids",
        f"SELECT * FROM taskforge.tf_renew_many(worker_id => {W}, task_ids => ARRAY[%(v)s], "
        "attempt_numbers => '{1}')",
        -(2**63),
        BIGINT_MAX,
    ),
    (
        "tf_finalize_many.attempt_numbers",
        f"SELECT * FROM taskforge.tf_finalize_many(worker_id => {W}, "
        "task_ids => '{-1}', attempt_numbers => ARRAY[%(v)s], outcomes => '{failed}')",
        1,
        INT_MAX,
    ),
    (
        "tf_finalize_and_claim.task_ids",
        f"SELECT * FROM taskforge.tf_finalize_and_claim(worker_id => {W}, "
        "task_ids => ARRAY[%(v)s], attempt_numbers => '{1}', outcomes => '{failed}', max_tasks => 0)",
        -(2**63),
        BIGINT_MAX,
    ),
]
numbers = st.one_of(
    st.integers(-(2**70), 2**70),
    st.integers(-(2**33), 2**33),
    st.sampled_from(
        [
            0,
            1,
            -1,
            32767,
            32768,
            1000,
            1001,
            100000,
            100001,
            INT_MAX,
            INT_MAX + 1,
            BIGINT_MAX,
            BIGINT_MAX + 1,
            -(2**63),
            -(2**63) - 1,
        ]
    ),
    # PostgreSQL's numeric has one NaN: Python's -NaN and sNaN have no SQL spelling.
    st.decimals(allow_nan=True, allow_infinity=True, places=2).filter(
        lambda d: not (d.is_nan() and (d.is_signed() or d.is_snan()))
    ),
    st.sampled_from([Decimal("1.0"), Decimal("2.5"), Decimal("NaN"), Decimal("Infinity"), Decimal("-Infinity")]),
)


@pytest.mark.parametrize(
    ("name", "query", "low", "high"), WHOLE_NUMBER_ARGUMENTS, ids=[a[0] for a in WHOLE_NUMBER_ARGUMENTS]
)
@FUZZ
@given(value=numbers)
def test_fuzz_whole_number_arguments(fz, name, query, low, high, value):
    """Any number reaches the function (never 42883 or 22003): outside the range, or not whole, it
    is TF400 naming the argument (the element, for arrays) and writes nothing; inside, the call is
    not refused for it (other arguments may still make it TF404, as the unknown task -1 does)."""
    argument = name.split(".")[1]
    whole = value.is_finite() and value == value.to_integral_value() if isinstance(value, Decimal) else True
    valid = whole and low <= value <= high
    event("in range" if valid else "out of range or not whole")
    outcome = call(fz, query, {"v": value})
    names_it = outcome.error is not None and outcome.error.sqlstate == "TF400" and outcome.column.startswith(argument)
    if valid:
        assert not names_it, f"{name} = {value!r} refused: {outcome.error}"
    else:
        assert names_it, f"{name} = {value!r}: expected TF400 naming {argument}, got {outcome.error or outcome.rows}"


# --- what never reaches a function -------------------------------------------------------------

UNCONVERTIBLE_JSON = [
    ('{"text": "a\\u0000b"}', "22P05"),  # jsonb cannot hold NUL
    ('{"text": "\\ud800"}', "22P02"),  # an unpaired surrogate escape
    ('{"text": ', "22P02"),  # not JSON
]


@pytest.mark.parametrize(("text", "sqlstate"), UNCONVERTIBLE_JSON)
@pytest.mark.parametrize(
    "query",
    [
        "SELECT * FROM taskforge.tf_submit(task_type => 'noop', payload => %(j)s::jsonb)",
        "SELECT * FROM taskforge.tf_submit_many(requests => %(j)s::jsonb)",
        "SELECT * FROM taskforge.tf_finalize(task_id => -1, worker_id => gen_random_uuid(), attempt_number => 1, "
        "outcome => 'succeeded', result => %(j)s::jsonb)",
    ],
    ids=["tf_submit.payload", "tf_submit_many.requests", "tf_finalize.result"],
)
def test_json_postgresql_cannot_hold_fails_before_the_function(fz, text, sqlstate, query):
    before = snapshot(fz)
    with pytest.raises(psycopg.Error) as failure:
        fz.execute(query, {"j": text})
    assert failure.value.sqlstate == sqlstate
    assert snapshot(fz) == before


def test_text_with_nul_cannot_be_sent(fz):
    before = snapshot(fz)
    with pytest.raises(psycopg.DataError, match="NUL"):
        fz.execute("SELECT * FROM taskforge.tf_submit(task_type => 'noop', idempotency_key => %s)", ("a\x00b",))
    assert snapshot(fz) == before
