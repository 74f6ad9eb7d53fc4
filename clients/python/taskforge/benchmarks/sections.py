"""Sections of ``report.md`` for the ceilings, the peers, memory and the targets, and the
formatting helpers every section uses. Each function takes the summary (:mod:`.summary`) and
returns markdown lines; an empty list when the run measured nothing for it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .flow import DESCRIPTIONS as FLOW_DESCRIPTIONS, VARIANTS as FLOW_VARIANTS
from .stats import ratio

__all__ = [
    "ceiling_section",
    "cpu_section",
    "flow_section",
    "memory_section",
    "number",
    "peers_section",
    "table",
    "targets_section",
    "times",
    "writes_section",
]


def number(value: float | None, digits: int = 1) -> str:
    """``value`` with thousands separators, or an en dash for no value."""
    return "–" if value is None else f"{value:,.{digits}f}"


def times(value: float | None) -> str:
    """A ratio as ``1.25×`` (en dash for none)."""
    return "–" if value is None else f"{value:.2f}×"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A GitHub-flavoured markdown table."""
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header), *("| " + " | ".join(r) + " |" for r in rows)]


def ceiling_section(summary: dict[str, Any], batch: int | None) -> list[str]:
    """Tasks/s of every pgbench script by client count, then their ratios."""
    rows = summary["ceiling"]
    if not rows:
        return []
    b = f"B = {batch}" if batch else "B"
    out = [
        "## Ceiling (pgbench, tasks/s)",
        "",
        *table(
            [
                "clients",
                "(a) bare, 2 statements",
                "(a1) bare, 1 statement",
                f"(a2) bare batched, {b}",
                "(b) tf_claim + tf_finalize",
                "(c) tf_finalize_and_claim",
                f"(c-batch) {b} a call",
                "E1 workers",
            ],
            [
                [
                    str(r["clients"]),
                    *(
                        number(r[k], 0)
                        for k in (
                            "skip_locked",
                            "skip_locked_one",
                            "skip_locked_batch",
                            "taskforge",
                            "finalize_and_claim",
                            "finalize_and_claim_batch",
                        )
                    ),
                    number(r["e1"]),
                ]
                for r in rows
            ],
        ),
        "",
        *table(
            ["clients", "(b)/(a)", "(c)/(a)", "(c)/(a1)", "(c-batch)/(a2)", "E1/(a)", "E1/(a1)", "E1/(b)", "E1/(c)"],
            [
                [
                    str(r["clients"]),
                    *(
                        number(r[k], 2)
                        for k in (
                            "taskforge_over_skip_locked",
                            "finalize_and_claim_over_skip_locked",
                            "finalize_and_claim_over_skip_locked_one",
                            "finalize_and_claim_batch_over_skip_locked_batch",
                            "e1_over_skip_locked",
                            "e1_over_skip_locked_one",
                            "e1_over_taskforge",
                            "e1_over_finalize_and_claim",
                        )
                    ),
                ]
                for r in rows
            ],
        ),
        "",
    ]
    one = next((r for r in rows if r["clients"] == 1), None)
    if one is not None and one.get("e1_batched_over_skip_locked_batch") is not None:
        out += [
            f"E1 batched (one process) ÷ (a2) at 1 client: {number(one['e1_batched'])} / "
            f"{number(one['skip_locked_batch'], 0)} = {one['e1_batched_over_skip_locked_batch']:.2f}.",
            "",
        ]
    out += [
        "Tasks/s count rows finished, so a batched cycle counts its B tasks. (a) claims and finishes in two "
        "statements, (a1) finishes the previous row and claims the next in one (one round trip, one commit "
        "per task: the best a one-call-per-task worker can do), (a2) claims B rows in one statement and "
        "finishes them in another. E1/(a1) is what our single-slot worker keeps of that best; (c)/(a1) and "
        "(c-batch)/(a2) what our SQL keeps of the bare pattern, with no Python. Client counts above the "
        "machine's cores only show the plateau.",
        "",
    ]
    return out + _ladder(rows, b)


def _ladder(rows: Sequence[dict[str, Any]], b: str) -> list[str]:
    """From the bare pattern to TaskForge's function, one cost at a time (the scripts h1/h2, d/d-batch)."""
    steps = [
        (
            "one task a statement",
            "skip_locked_one",
            "skip_locked_history_one",
            "taskforge_tables_one",
            "finalize_and_claim",
        ),
        (
            f"batched, {b}",
            "skip_locked_batch",
            "skip_locked_history_batch",
            "taskforge_tables_batch",
            "finalize_and_claim_batch",
        ),
    ]
    body = []
    for r in rows:
        for name, bare, history, tables, ours in steps:
            if r.get(history) is None and r.get(tables) is None:
                continue
            body.append(
                [
                    str(r["clients"]),
                    name,
                    *(number(r[k], 0) for k in (bare, history, tables, ours)),
                    *(number(ratio(r[k], r[bare]), 2) for k in (history, tables, ours)),
                ]
            )
    if not body:
        return []
    return [
        "### What each guarantee costs: from the bare pattern to ours",
        "",
        *table(
            [
                "clients",
                "cycle",
                "bare (a1 / a2)",
                "+ attempt history (h1 / h2)",
                "+ TaskForge's tables (d / d-batch)",
                "+ the function (c / c-batch)",
                "h ÷ bare",
                "d ÷ bare",
                "c ÷ bare",
            ],
            body,
        ),
        "",
        "Tasks/s. (h1)/(h2) are (a1)/(a2) with one attempt row per claim in a second bare table, opened at "
        "the claim and closed at the finish (its key the only index): the floor of keeping every attempt. "
        "(d)/(d-batch) write the rows tf_finalize_and_claim writes, on TaskForge's tables (every index, "
        "CHECK constraint, domain and foreign key), with one plain statement and no function: no validation, "
        "no guard. Each column adds one cost to the one before it.",
        "",
    ]


def flow_section(summary: dict[str, Any]) -> list[str]:
    """The flow workload: every variant's median tasks/s at one slot and batched, each ÷ the
    e1-plain median of the same mode and run (``variant_over_plain``)."""
    rows = summary.get("flow") or []
    if not rows:
        return []
    by = {(r["variant"], r["mode"]): r for r in rows}
    modes = {r["mode"]: r for r in rows}
    body = []
    for variant in FLOW_VARIANTS:
        cells = [f"e1-{variant}", FLOW_DESCRIPTIONS[variant]]
        trials = []
        for mode in ("one slot", "batched"):
            r = by.get((variant, mode))
            cells += [number(r["median"]) if r else "–", number(r["variant_over_plain"], 2) if r else "–"]
            trials.append(str(r["trials"]) if r else "0")
        if any(t != "0" for t in trials):
            body.append([*cells, " / ".join(trials)])
    one, batched = modes.get("one slot"), modes.get("batched")
    sizes = "; ".join(
        f"{label}: {r['tasks']:,} tasks, `--concurrency {r['concurrency']}`"
        for label, r in (("one slot", one), ("batched", batched))
        if r
    )
    group = next((r["shape"]["group"] for r in rows if r.get("shape")), None)
    keys = next((r["shape"]["keys"] for r in rows if r.get("shape")), None)
    slots = f"`--concurrency {batched['concurrency']}`" if batched else "batched"
    return [
        "## Flow control and dependencies: E1 with each feature",
        "",
        *table(
            ["variant", "adds", "one slot tasks/s", "÷ e1-plain", f"batched ({slots}) tasks/s", "÷ e1-plain", "trials"],
            body,
        ),
        "",
        f"One `taskforge worker` process ({sizes}); every trial in a database of its own, the measured tasks "
        "submitted through tf_submit_many in one transaction. ÷ e1-plain divides a variant's median by "
        "e1-plain's in the same mode of this run. "
        f"Chains and ordering keys hold {group or '–'} tasks each, e1-ckeys spreads its tasks over "
        f"{keys or '–'} unlimited concurrency keys, e1-rate's one key never runs out of tokens. A chain runs one "
        "task at a time (the next is released in its predecessor's finalize), so at one slot e1-chain is the "
        "per-task cost of the release, and batched at most one task per chain runs at once; an ordering key "
        "serialises the same way through the keyed pick (trust check `sequence_order`).",
        "",
    ]


def pooler_section(summary: dict[str, Any]) -> list[str]:
    """The pooler workload (:func:`.pooler.summary_rows`): each workload direct and through
    PgBouncer, pooled ÷ direct, and the most worker backends seen (empty without rows)."""
    rows = summary.get("pooler") or []
    if not rows:
        return []
    body = [
        [
            r["workload"],
            f"{r['processes']} × {r['concurrency']}",
            f"{r['tasks']:,}",
            number(r["direct"]),
            number(r["pooled"]),
            number(r["pooled_over_direct"], 2),
            f"{r['direct_backends_max']} / {r['pooled_backends_max']} ({r['pool_size']})",
            r["trials"],
        ]
        for r in rows
    ]
    return [
        "## Through PgBouncer in transaction mode",
        "",
        *table(
            [
                "workload",
                "processes × slots",
                "tasks",
                "direct tasks/s",
                "pooled tasks/s",
                "pooled ÷ direct",
                "worker backends direct / pooled (pool)",
                "trials direct / pooled",
            ],
            body,
        ),
        "",
        "Pooled: the workers run `--pooler transaction` against a PgBouncer 1.18 of the run's own "
        "(`pool_mode = transaction`, `max_db_connections` = the pool) without a listener, so they claim every "
        "`--poll-seconds` when idle; direct: the same workers on direct connections with LISTEN. Worker backends: "
        "the largest number sampled every 0.1 s from pg_stat_activity (and PgBouncer's SHOW SERVERS).",
        "",
    ]


def _rss(row: dict[str, Any]) -> str:
    return f"{number(row.get('rss_mib'))} ({number(row.get('rss_mib_max'))})"


def peers_section(summary: dict[str, Any], e1_batched_concurrency: int | None) -> list[str]:
    """Every peer against TaskForge in both modes, how each window was timed, skipped peers."""
    peers = summary["peers"]
    if not peers:
        return []
    single = [
        [
            p["name"],
            str(r["workers"]),
            number(r["median"]),
            str(r["trials"]),
            number(r.get("ours")),
            times(r.get("ours_over_peer")),
            number(r.get("ours_beside")),
            times(r.get("ours_beside_over_peer")),
            _rss(r),
        ]
        for p in peers
        for r in p["single"]
    ]
    batched = [
        [
            p["name"],
            ", ".join(f"{k} {json.dumps(v)}" for k, v in sorted((p.get("batched_settings") or {}).items())),
            str(p["batched"]["tasks"]),
            number(p["batched"]["median"]),
            str(p["batched"]["trials"]),
            number(p["batched"].get("ours")),
            times(p["batched"].get("ours_over_peer")),
            number(p["batched"].get("ours_beside")),
            times(p["batched"].get("ours_beside_over_peer")),
            _rss(p["batched"]),
        ]
        for p in peers
        if p["batched"]
    ]
    out = ["## Peers: the same no-op jobs through other PostgreSQL queues", ""]
    if single:
        out += [
            "One slot per process, at E1's process counts (RSS: peak per process, median (max), MiB). "
            "\"Beside it\": TaskForge's E1 run right before each of that peer's trials, on a fresh "
            "database as the peer's, in the same block (for the peers of the 1.25 × targets):",
            "",
            *table(
                [
                    "peer",
                    "processes",
                    "peer jobs/s",
                    "trials",
                    "TaskForge E1 tasks/s",
                    "ours ÷ peer",
                    "TaskForge beside it",
                    "ours ÷ peer, beside",
                    "RSS",
                ],
                single,
            ),
            "",
        ]
    if batched:
        out += [
            "Each peer's documented high-throughput setting, one process, against E1 batched "
            f"(`--concurrency {e1_batched_concurrency or 'B'}`):",
            "",
            *table(
                [
                    "peer",
                    "setting",
                    "jobs",
                    "peer jobs/s",
                    "trials",
                    "TaskForge batched tasks/s",
                    "ours ÷ peer",
                    "TaskForge beside it",
                    "ours ÷ peer, beside",
                    "RSS",
                ],
                batched,
            ),
            "",
        ]
    ran = [p for p in peers if not p["skipped"]]
    if ran:
        out += ["How each peer's window is timed (database clock throughout):", ""]
    for p in ran:
        versions = ", ".join(f"{k} {v}" for k, v in {**(p["versions"] or {}), **(p["runtime_versions"] or {})}.items())
        bound = p.get("window_end_bound_ms_max")
        extra = f"; end known to within {bound:.1f} ms (largest poll gap)" if bound is not None else ""
        out.append(f"- **{p['name']}** ({versions}): {p['timing']}{extra}")
    skipped = [p for p in peers if p["skipped"]]
    if skipped:
        out += ["", "Skipped on this machine (not a failure):", ""]
        out += [f"- **{p['name']}**: {p['skipped']}" for p in skipped]
    out.append("")
    return out


def memory_section(summary: dict[str, Any]) -> list[str]:
    """Peak RSS per TaskForge worker process: E1 at each worker count and E1 batched."""
    rows = [
        [f"E1, {r['workers']} worker(s), one slot", number(r.get("rss_mib")), number(r.get("rss_mib_max"))]
        for r in summary["e1"]
    ]
    rows += [
        [f"E1 batched, 1 process, {r['concurrency']} slots", number(r.get("rss_mib")), number(r.get("rss_mib_max"))]
        for r in summary["e1_batched"]
    ]
    if not any(r[1] != "–" for r in rows):
        return []
    return [
        "## Memory: peak RSS per worker process",
        "",
        *table(["trial", "median (MiB)", "max (MiB)"], rows),
        "",
        "VmHWM of /proc/<pid>/status of every worker process, read just before SIGTERM, pooled over trials.",
        "",
    ]


def writes_section(summary: dict[str, Any]) -> list[str]:
    """What each system wrote per task (:mod:`.writes`): TaskForge's E1 at one worker and batched,
    each peer at one process and batched."""
    rows: list[list[str]] = []

    def add(name: str, row: dict[str, Any] | None) -> None:
        if row and row.get("writes_wal_bytes") is not None:
            rows.append(
                [
                    name,
                    number(row["writes_wal_bytes"], 0),
                    number(row.get("writes_rows_inserted"), 2),
                    number(row.get("writes_rows_updated"), 2),
                    number(row.get("writes_rows_hot_updated"), 2),
                    number(row.get("writes_rows_deleted"), 2),
                ]
            )

    add("TaskForge E1, 1 worker", next((r for r in summary["e1"] if r["workers"] == 1), None))
    add("TaskForge E1 batched", summary["e1_batched"][0] if summary["e1_batched"] else None)
    for peer in summary.get("peers") or []:
        add(f"{peer['name']}, 1 process", next((r for r in peer["single"] if r["workers"] == 1), None))
        add(f"{peer['name']} batched", peer.get("batched"))
    if not rows:
        return []
    return [
        "## Writes per task",
        "",
        *table(["system", "WAL bytes", "rows inserted", "rows updated", "of which HOT", "rows deleted"], rows),
        "",
        "Per measured task, medians of trials: the trial database's WAL position and its "
        "pg_stat_user_tables row counters, read after the warm-up and after the processes stopped "
        "(WAL is the whole cluster's: the machine ran nothing else). TaskForge keeps every attempt: "
        "a task row updated at the claim and at the finish, an attempt row inserted and updated; "
        "a peer that deletes its finished jobs keeps none.",
        "",
    ]


def cpu_section(summary: dict[str, Any], cpus: int) -> list[str]:
    """CPU per task (:mod:`.cpu`) of TaskForge's E1 and of each peer, at every process count and
    batched: the worker processes, the database backends, and the most ``cpus`` cores could
    drain at that cost."""
    rows: list[list[str]] = []

    def add(name: str, row: dict[str, Any] | None) -> None:
        total = row.get("cpu_total_us") if row else None
        if row and total:
            rows.append(
                [
                    name,
                    str(row["workers"]),
                    number(row.get("median"), 0),
                    number(row.get("cpu_worker_us"), 0),
                    number(row.get("cpu_backend_us"), 0),
                    number(total, 0),
                    number(cpus * 1e6 / total, 0),
                ]
            )

    for r in summary["e1"]:
        add("TaskForge E1", r)
    add("TaskForge E1 batched", summary["e1_batched"][0] if summary["e1_batched"] else None)
    for peer in summary.get("peers") or []:
        for r in peer.get("beside") or []:
            add(f"TaskForge E1 beside {peer['name']}", r)
        add(f"TaskForge E1 batched beside {peer['name']}", peer.get("beside_batched"))
        for r in peer["single"]:
            add(peer["name"], r)
        add(f"{peer['name']} batched", peer.get("batched"))
    if not rows:
        return []
    return [
        "## CPU per task",
        "",
        *table(
            [
                "system",
                "processes",
                "tasks/s",
                "workers (µs)",
                "backends (µs)",
                "total (µs)",
                f"{cpus} cores at that cost (tasks/s)",
            ],
            rows,
        ),
        "",
        "User + system CPU time per measured task, medians of trials, from /proc/<pid>/stat between "
        "the submit of the measured tasks and the end of their drain: every process of each worker's "
        "process group, and the trial database's backends (the harness's own session left out). "
        f"The workers and PostgreSQL share this machine's {cpus} cores: where the last column is close "
        "to the measured rate the CPU was the limit, and a system that spends less per task drains "
        "more. The CPU time a task costs moves with the machine's load too, though less than the "
        "rate does.",
        "",
    ]


def targets_section(summary: dict[str, Any]) -> list[str]:
    """The "Against the targets" table (:mod:`.targets`)."""
    rows = summary.get("targets") or []
    if not rows:
        return []
    verdict = {True: "met", False: "**not met**", None: "not measured"}
    return [
        "## Against the targets",
        "",
        *table(
            ["target", "figure", "ratio", "wanted", ""],
            [[r["target"], r["figure"], r["shown"], r["wanted"], verdict[r["met"]]] for r in rows],
        ),
        "",
        "Every ratio divides figures of this run only.",
        "",
    ]
