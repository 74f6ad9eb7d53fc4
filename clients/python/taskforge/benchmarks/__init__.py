"""``taskforge bench``: the reference workloads, the database's ceiling and a peer, measured.

Modules, by job:

* :mod:`.database`    throwaway databases (``taskforge_bench_<hex>``) and the ``bench/`` data folder
* :mod:`.environment` what machine and server a result came from
* :mod:`.stats`       medians, percentiles, throughput, speedup, parallel efficiency
* :mod:`.results`     the records a run produces (trials, ceiling points)
* :mod:`.trust`       checks that fail the run when the history is not what the workload implies
* :mod:`.workloads`   E1, E2, E5, E6 and pickup latency with real worker/scheduler processes
* :mod:`.ceiling`     pgbench: a bare SKIP LOCKED queue and TaskForge's own functions
* :mod:`.peer`        the same no-op jobs through procrastinate, in its own virtualenv
* :mod:`.report`      the bundle: raw JSON, ``report.md``
* :mod:`.charts`      PNG charts (matplotlib, Agg backend)
* :mod:`.console_data` a large valid history written with INSERT ... SELECT (console benchmark)
* :mod:`.runner`      sizes, blocks and the order things run in

Every duration that is reported comes from database timestamps (``clock_timestamp()`` written
by the SQL functions), never from the harness's clock; the harness's monotonic clock only
bounds waits.
"""
