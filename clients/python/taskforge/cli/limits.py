"""``taskforge limits list|rate|concurrency``: flow-control limits (tf_rate_limits,
tf_concurrency_keys, tf_set_rate_limit, tf_set_concurrency_limit).

A rate key's tasks start only with a token of its bucket (at most burst + per_second x T starts
in any T seconds); a concurrency key never has more than its limit of tasks RUNNING. Both act on
claims only; tasks name their keys at submit (``taskforge submit --rate-key/--concurrency-key``).
See docs/flow-control.md.
"""

from __future__ import annotations

import click

from .. import client, database as db
from ..output import table, to_json
from .common import Text, dsn_option, json_option, optional_limit, optional_number


@click.group("limits")
def limits_group() -> None:
    """Show and set rate limits and concurrency limits of flow keys."""


@limits_group.command("list")
@dsn_option
@json_option
def list_cmd(dsn: str | None, as_json: bool) -> None:
    """Rate limits (tokens available now, database time) and concurrency keys (limit, - =
    unlimited; RUNNING and QUEUED counts)."""
    with db.connect(dsn) as conn:
        rates = [r.as_dict() for r in client.rate_limits(conn)]
        keys = [k.as_dict() for k in client.concurrency_keys(conn)]
    if as_json:
        click.echo(to_json({"rate_limits": rates, "concurrency_keys": keys}))
        return
    click.echo("rate limits:")
    click.echo(table(rates, ["rate_key", "per_second", "burst", "tokens_now", "queued"], empty="  (none)"))
    click.echo("concurrency keys:")
    click.echo(table(keys, ["concurrency_key", ("max_running", "limit"), "running", "queued"], empty="  (none)"))


@limits_group.command("rate")
@click.argument("rate_key", metavar="RATE_KEY", type=Text())
@click.argument("per_second", metavar="PER_SECOND|none")
@click.option("--burst", type=int, default=None, help="Bucket size, 1..1000000 (default: PER_SECOND rounded up).")
@dsn_option
@json_option
def rate_cmd(rate_key: str, per_second: str, burst: int | None, dsn: str | None, as_json: bool) -> None:
    """Let RATE_KEY's tasks start at PER_SECOND (tokens per second, up to --burst at once), or
    remove the limit with `none`."""
    rate = optional_number("PER_SECOND", per_second)
    with db.connect(dsn) as conn:
        previous = client.set_rate_limit(conn, rate_key, rate, burst)
    if as_json:
        click.echo(
            to_json(
                {
                    "rate_key": rate_key,
                    "per_second": rate,
                    "burst": burst,
                    "previous_per_second": previous[0],
                    "previous_burst": previous[1],
                }
            )
        )
        return
    was = "unlimited" if previous[0] is None else f"{previous[0]:g}/s, burst {previous[1]}"
    shown = "unlimited" if rate is None else f"{rate:g}/s" + (f", burst {burst}" if burst else "")
    click.echo(f"rate key {rate_key}: {shown} (was {was})")


@limits_group.command("concurrency")
@click.argument("concurrency_key", metavar="CONCURRENCY_KEY", type=Text())
@click.argument("max_running", metavar="MAX_RUNNING|none")
@dsn_option
@json_option
def concurrency_cmd(concurrency_key: str, max_running: str, dsn: str | None, as_json: bool) -> None:
    """Allow at most MAX_RUNNING (1..1000000) of CONCURRENCY_KEY's tasks RUNNING at once, or
    remove the limit with `none`."""
    limit = optional_limit("MAX_RUNNING", max_running)
    with db.connect(dsn) as conn:
        previous = client.set_concurrency_limit(conn, concurrency_key, limit)
    if as_json:
        click.echo(to_json({"concurrency_key": concurrency_key, "max_running": limit, "previous": previous}))
        return
    shown = "unlimited" if limit is None else f"at most {limit} running"
    click.echo(f"concurrency key {concurrency_key}: {shown} (was {'unlimited' if previous is None else previous})")


COMMANDS: tuple[click.Command, ...] = (limits_group,)
