#!/usr/bin/env bash
# E1 of two versions of TaskForge in one run: `taskforge bench e1` (one worker process, one slot
# and batched) of the code at REV (a git worktree under .taskforge/ab/, its own db/ and package on
# PYTHONPATH, the same virtualenv) and of this checkout, alternated ROUNDS times (default 3) so
# that both meet the same machine. Prints each trial's tasks/s and the median of each side. For
# changes that must cost tasks which use none of them nothing measurable (docs/benchmarks.md).
# Never run it beside another benchmark.
#
#   bench/e1_ab.sh REV [ROUNDS]        # needs `make install`; REV e.g. c8bbfb3
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:?usage: bench/e1_ab.sh REV [ROUNDS]}
rounds=${2:-3}
out=bench-results/e1-ab-$(date -u +%Y%m%dT%H%M%SZ)
old=.taskforge/ab/$(git rev-parse --short "$rev")
[ -d "$old" ] || git worktree add --detach "$old" "$rev" >/dev/null
mkdir -p "$out"
run() {  # $1 = side (old|new), $2 = round; the side's clients/python first on the path
    local root=$PWD
    [ "$1" = old ] && root=$PWD/$old
    PYTHONPATH="$root/clients/python" .venv/bin/python -m taskforge.cli bench e1 --workers 1 --trials 1 \
        --out "$out/$1-$2" >"$out/$1-$2.log" 2>&1
}
for round in $(seq "$rounds"); do
    run old "$round"
    run new "$round"
done
.venv/bin/python - "$out" <<'EOF'
import json, pathlib, statistics, sys
out = pathlib.Path(sys.argv[1])
rates = {}
for trial in sorted(out.glob("*-*/trials/*.json")):
    data = json.loads(trial.read_text())["trial"]
    side = trial.parts[-3].split("-")[0]
    rates.setdefault((data["workload"], side), []).append(data["throughput"])
    print(f"{trial.parts[-3]:8} {data['workload']:12} {data['throughput']:10,.0f} tasks/s")
for workload in sorted({w for w, _ in rates}):
    old, new = (statistics.median(rates.get((workload, s), [float("nan")])) for s in ("old", "new"))
    print(f"{workload:12} median old {old:10,.0f}  new {new:10,.0f}  new/old {new / old:5.3f}")
EOF
echo "bundles: $out"
