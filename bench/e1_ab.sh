#!/usr/bin/env bash
# E1 (or the pgbench ceiling) of two versions of TaskForge in one run: `taskforge bench e1` (one
# worker process, one slot and batched), or with WORKLOAD=ceiling `taskforge bench ceiling` (every
# pgbench script at one client, on each side's own schema and scripts), of the code at REV (a git
# worktree under .taskforge/ab/, its own db/ and package on PYTHONPATH, the same virtualenv) and
# of this checkout, alternated ROUNDS times (default 3; odd rounds run the old side first,
# even rounds the new one) so that both meet the same machine. Prints each trial's tasks/s,
# the median of each side and the ratio new/old of each round (the two runs of a round are a
# minute apart). For changes that must cost tasks which use none of them nothing measurable
# (docs/benchmarks.md).
# Never run it beside another benchmark.
#
#   bench/e1_ab.sh REV [ROUNDS] [WORKLOAD]   # needs `make install`; REV e.g. c8bbfb3; e1 or ceiling
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:?usage: bench/e1_ab.sh REV [ROUNDS] [e1|ceiling]}
rounds=${2:-3}
workload=${3:-e1}
case $workload in e1|ceiling) ;; *) echo "WORKLOAD must be e1 or ceiling, not $workload" >&2; exit 2 ;; esac
out=bench-results/$workload-ab-$(date -u +%Y%m%dT%H%M%SZ)
old=.taskforge/ab/$(git rev-parse --short "$rev")
[ -d "$old" ] || git worktree add --detach "$old" "$rev" >/dev/null
mkdir -p "$out"
run() {  # $1 = side (old|new), $2 = round; the side's clients/python first on the path
    local root=$PWD
    [ "$1" = old ] && root=$PWD/$old
    PYTHONPATH="$root/clients/python" .venv/bin/python -m taskforge.cli bench "$workload" --workers 1 --trials 1 \
        --out "$out/$1-$2" >"$out/$1-$2.log" 2>&1
}
for round in $(seq "$rounds"); do  # odd rounds old first, even rounds new first: the
    if (( round % 2 )); then         # machine favours whichever runs first by a few per cent
        run old "$round"
        run new "$round"
    else
        run new "$round"
        run old "$round"
    fi
done
.venv/bin/python - "$out" <<'EOF'
import json, pathlib, statistics, sys
out = pathlib.Path(sys.argv[1])
rates = {}  # (workload, side, round) -> tasks/s
for trial in sorted(out.glob("*-*/trials/*.json")):
    data = json.loads(trial.read_text())["trial"]
    side, round_ = trial.parts[-3].split("-")
    rates[(data["workload"], side, int(round_))] = data["throughput"]
    print(f"{trial.parts[-3]:8} {data['workload']:12} {data['throughput']:10,.0f} tasks/s")
for point_file in sorted(out.glob("*-*/ceiling/*.json")):  # one per pgbench script
    point = json.loads(point_file.read_text())["point"]
    if not point["ok"] or point["tasks_per_second"] is None:
        continue
    side, round_ = point_file.parts[-3].split("-")
    rates[(point["script"], side, int(round_))] = point["tasks_per_second"]
    print(f"{point_file.parts[-3]:8} {point['script']:12} {point['tasks_per_second']:10,.0f} tasks/s")
for workload in sorted({w for w, _, _ in rates}):
    rounds = sorted({r for w, _, r in rates if w == workload})
    old = [rates[(workload, "old", r)] for r in rounds if (workload, "old", r) in rates]
    new = [rates[(workload, "new", r)] for r in rounds if (workload, "new", r) in rates]
    paired = sorted(rates[(workload, "new", r)] / rates[(workload, "old", r)] for r in rounds
                    if (workload, "old", r) in rates and (workload, "new", r) in rates)
    if not old or not new or not paired:
        continue
    print(f"{workload:12} median old {statistics.median(old):10,.0f}  new {statistics.median(new):10,.0f}  "
          f"new/old of each round {', '.join(f'{x:.2f}' for x in paired)}  (median {statistics.median(paired):.3f})")
EOF
echo "bundles: $out"
