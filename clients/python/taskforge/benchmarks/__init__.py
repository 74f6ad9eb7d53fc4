"""``taskforge bench``: the reference workloads, the database's ceilings and the peers, measured.

Modules, by job:

* :mod:`.database`    throwaway databases (``taskforge_bench_<hex>``) and the ``bench/`` data folder
* :mod:`.environment` what machine and server a result came from
* :mod:`.stats`       medians, percentiles, throughput, speedup, parallel efficiency
* :mod:`.results`     the records a run produces (trials, ceiling points)
* :mod:`.trust`       checks that fail the run when the history is not what the workload implies
* :mod:`.workloads`   E1, E2, E5, E6 and pickup latency with real worker/scheduler processes
* :mod:`.ceiling`     pgbench: bare SKIP LOCKED queues (a, a1, a2) and TaskForge's own functions (b, c, c-batch)
* :mod:`.peers`       the same no-op jobs through other queues (graphile-worker, pg-boss, pgqueuer,
  oban, procrastinate), each in its own virtualenv or npm prefix
* :mod:`.memory`      peak RSS of every process of a trial
* :mod:`.targets`     the report's "Against the targets" rows
* :mod:`.report`      the bundle: raw JSON, ``report.md`` (its newer sections: :mod:`.sections`)
* :mod:`.charts`      PNG charts (matplotlib, Agg backend)
* :mod:`.console_data` a large valid history written with INSERT ... SELECT (console benchmark)
* :mod:`.runner`      sizes, blocks and the order things run in

Every duration that is reported comes from database timestamps (``clock_timestamp()`` written
by the SQL functions), never from the harness's clock; the harness's monotonic clock only
bounds waits.
"""
