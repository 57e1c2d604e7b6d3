#!/usr/bin/env bash
# step_keep.sh [BUILD_DIR] [ROUNDS] [NODES]: what gschedd spends on srun steps as they grow,
# the records that keep them over a restart included (scheduler/step_keep.c). On a local
# cluster of NODES workers (default 8) with the dgx-h100 test topology (112 cores each),
# inside one batch job of all their cores, steps of `true` with 56 tasks, then twice as many
# up to 112 x NODES, ROUNDS (default 5) of each, alternated. For each size it prints the median srun wall time, and gschedd's bytes written
# (/proc's wchar: its database, the database's WAL and its sockets) and CPU time per step,
# each also per task. A cost per task that stays flat as the steps grow is linear in the
# step's size; one that grows with it is not (before store schema 14 each exit wrote the
# step's whole record again, its exits so far included).
set -euo pipefail
bench_name="step keep bench"
. "$(dirname "$0")/local_job.sh"
file_bench_args "${1:-build}" 0 "${2:-5}"
nodes=${3:-8}
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gsched-bench.XXXXXX")
trap 'cd /; "$bin/gsched" down --state "$tmp/state" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
cd "$tmp"
"$bin/gsched" up --topology "$src/tests/topologies/dgx-h100.xml" \
  --workers "$nodes" --state "$tmp/state" >/dev/null
export GSCHED_SOCKET=$tmp/state/gschedd.sock
mkdir -p bin
for c in srun sbatch; do ln -sf "$bin/gsched" "bin/$c"; done
export PATH=$tmp/bin:$PATH
pid=$(cat state/gschedd.pid)
sizes=56
while [ $((${sizes##* } * 2)) -le $((112 * nodes)) ]; do sizes="$sizes $((${sizes##* } * 2))"; done
cat > run.sh <<EOF2
#!/bin/bash
cd $tmp
ms() { date +%s%3N; }
# gschedd's bytes written and CPU ms (utime + stime, in clock ticks) so far
io() { awk '/^wchar/ { print \$2 }' /proc/$pid/io; }
cpu() { awk -v hz="\$(getconf CLK_TCK)" '{ print int((\$14 + \$15) * 1000 / hz) }' /proc/$pid/stat; }
for i in \$(seq $rounds); do
  for n in $sizes; do
    b=\$(io) c=\$(cpu) t=\$(ms)
    srun -n \$n true || echo "step of \$n failed" >> fail.log
    echo "wall\$n \$((\$(ms) - t))" >> times
    echo "bytes\$n \$((\$(io) - b))" >> times
    echo "cpu\$n \$((\$(cpu) - c))" >> times
  done
done
EOF2
run_job -N"$nodes" -n $((112 * nodes))
echo "srun steps of true on $nodes nodes, $rounds rounds each, $(nproc) cores: medians"
printf '%6s %10s %12s %10s %12s %12s\n' tasks wall_ms bytes bytes/task cpu_ms cpu_us/task
for n in $sizes; do
  w=$(quantile "wall$n" 0.5) b=$(quantile "bytes$n" 0.5) c=$(quantile "cpu$n" 0.5)
  printf '%6s %10s %12s %10s %12s %12s\n' "$n" "$w" "$b" $((b / n)) "$c" $((c * 1000 / n))
done
