"""The cron evaluator of the periodic schedules (db/functions/_tf_cron_next.sql) against croniter.

A few hundred random 5-field expressions (seeded, so a failure repeats) are evaluated from
random start instants by both: the next five ticks must be the same instants. The zones have
no daylight saving time in the years tested (UTC, Asia/Kolkata +05:30, Asia/Kathmandu +05:45,
America/Sao_Paulo -03:00 since 2019), because croniter and TaskForge deliberately differ around
DST changes; those rules are pinned by the pgTAP tests in db/tests/_tf_cron_next/.

The generator keeps to the syntax both read the same way: it avoids a stepped star (``*/n``) in
one day field while the other day field is restricted, where croniter applies the
either-matches rule and Vixie cron (and TaskForge) do not (docs/sql-api.md#tf_schedule_periodic),
and a range whose ends are equal (``5-5``), which croniter reads as the whole field.
"""

from __future__ import annotations

import datetime as dt
import random
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter

SEED = 20261201
EXPRESSIONS = 400
TICKS = 5
ZONES = ("UTC", "Asia/Kolkata", "Asia/Kathmandu", "America/Sao_Paulo")
MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
DAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")


def _value(rng: random.Random, lo: int, hi: int, names: tuple[str, ...] | None, first_named: int) -> str:
    value = rng.randint(lo, hi)
    if names and rng.random() < 0.3 and first_named <= value < first_named + len(names):
        name = names[value - first_named]
        return name if rng.random() < 0.5 else name.lower()
    return str(value)


def _item(rng: random.Random, lo: int, hi: int, names: tuple[str, ...] | None, first_named: int) -> str:
    kind = rng.choice(("value", "range", "range_step"))
    if kind == "value":
        return _value(rng, lo, hi, names, first_named)
    a, b = sorted(rng.sample(range(lo, hi + 1), 2))  # a < b: croniter reads a-a as the whole field
    if names and rng.random() < 0.3 and first_named <= a and b < first_named + len(names):
        text = f"{names[a - first_named]}-{names[b - first_named]}"
    else:
        text = f"{a}-{b}"
    if kind == "range_step":
        text += f"/{rng.randint(1, max(1, (hi - lo) // 2))}"
    return text


def _field(
    rng: random.Random,
    lo: int,
    hi: int,
    *,
    names: tuple[str, ...] | None = None,
    first_named: int = 0,
    star_weight: float = 0.35,
    allow_star_step: bool = True,
) -> str:
    roll = rng.random()
    if roll < star_weight:
        return "*"
    if allow_star_step and roll < star_weight + 0.15:
        return f"*/{rng.randint(1, max(2, (hi - lo + 1) // 2))}"
    return ",".join(_item(rng, lo, hi, names, first_named) for _ in range(rng.randint(1, 3)))


def random_expression(rng: random.Random) -> str:
    minute = _field(rng, 0, 59, star_weight=0.2)
    hour = _field(rng, 0, 23, star_weight=0.3)
    month = _field(rng, 1, 12, names=MONTHS, first_named=1, star_weight=0.6)
    day = _field(rng, 1, 31, star_weight=0.55)
    weekday = _field(rng, 0, 7, names=DAYS, first_named=0, star_weight=0.6, allow_star_step=day == "*")
    if day.startswith("*/") and weekday != "*":
        day = "*"
    return f"{minute} {hour} {day} {month} {weekday}"


def random_start(rng: random.Random, zone: str) -> dt.datetime:
    base = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    moment = base + dt.timedelta(seconds=rng.randint(0, 3 * 365 * 86400), microseconds=rng.randint(0, 999999))
    return moment.astimezone(ZoneInfo(zone))


def croniter_ticks(expression: str, start: dt.datetime, count: int) -> list[dt.datetime]:
    it = croniter(expression, start)
    return [it.get_next(dt.datetime).astimezone(dt.UTC) for _ in range(count)]


def database_ticks(conn, expression: str, start: dt.datetime, zone: str, count: int) -> list[dt.datetime]:
    ticks: list[dt.datetime] = []
    after = start
    for _ in range(count):
        after = conn.execute("SELECT taskforge._tf_cron_next(%s, %s, %s)", (expression, after, zone)).fetchone()[0]
        ticks.append(after.astimezone(dt.UTC))
    return ticks


def test_random_expressions_match_croniter(conn):
    rng = random.Random(SEED)
    mismatches = []
    compared = 0
    for _ in range(EXPRESSIONS):
        expression = random_expression(rng)
        zone = rng.choice(ZONES)
        start = random_start(rng, zone)
        expected = croniter_ticks(expression, start, TICKS)
        got = database_ticks(conn, expression, start, zone, TICKS)
        compared += 1
        if got != expected:
            mismatches.append(
                f"{expression!r} in {zone} after {start.isoformat()}: database {got}, croniter {expected}"
            )
    assert compared == EXPRESSIONS
    report = "\n".join(mismatches[:20])
    assert not mismatches, f"{len(mismatches)} of {compared} differ:\n{report}"


@pytest.mark.parametrize(
    "expression",
    ["0 0 1 * MON", "15 10 */7 * *", "0 12 * * 1-5", "0 0 29 2 *", "*/10 * * * 0,7", "@hourly", "@weekly"],
)
def test_named_expressions_match_croniter(conn, expression):
    start = dt.datetime(2027, 2, 26, 23, 59, 30, tzinfo=dt.UTC)
    assert database_ticks(conn, expression, start, "UTC", 8) == croniter_ticks(expression, start, 8)
