#!/usr/bin/env bash
# sched_throughput.sh [N] [BUILD_DIR]: scheduler throughput and latency on a local cluster.
# Starts `gsched up` (4 workers on this machine) in a temporary directory, submits N trivial
# jobs (/bin/true, 1 CPU each) with 32 submits in flight, and prints jobs/s submitted, jobs/s
# completed end to end, and the median / p99 time from a submit being sent to its task
# starting. Every submit is committed to SQLite (fsync) before it is acknowledged. Then the
# CPU time the daemons spent per job in the throughput phase (from /proc: the machine is
# shared and noisy, and CPU time per job varies less than jobs/s): gschedd's, the workers'
# own, and their children's until they exec'd and ran /bin/true.
set -euo pipefail
n=${1:-2000}
build=$(cd "${2:-build}" && pwd)
bin="$build/bin"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gsched-bench.XXXXXX")
cleanup() { [ -n "${KEEP:-}" ] && cp -r "$tmp/state" "$KEEP";  "$bin/gsched" down --state "$tmp/state" >/dev/null 2>&1 || true; rm -rf "$tmp"; }
trap cleanup EXIT
cd "$tmp"
"$bin/gsched" up --workers 4 --state "$tmp/state" >/dev/null
printf 'name = "true"\n[run]\ncommand = ["/bin/true"]\nstdout = "/dev/null"\n' > true.toml
echo "sched_throughput: $n jobs, 4 workers, $(nproc) cores"
# CPU ticks of the daemons named by pid files: "SELF CHILDREN", summed.
cpu_ticks() {
    local self=0 kids=0 f pid stat
    for f in "$tmp/state/"$1*.pid; do
        pid=$(cat "$f")
        stat=$(cat "/proc/$pid/stat") || continue
        set -- ${stat##*) }
        self=$((self + ${12} + ${13}))
        kids=$((kids + ${14} + ${15}))
    done
    echo "$self $kids"
}
hz=$(getconf CLK_TCK)
read -r s0 _ < <(cpu_ticks gschedd)
read -r w0 c0 < <(cpu_ticks node)
echo "--- throughput: $n jobs, 32 submits in flight"
"$bin/sched_load" --socket "$tmp/state/gschedd.sock" -n "$n" -c 32 true.toml
read -r s1 _ < <(cpu_ticks gschedd)
read -r w1 c1 < <(cpu_ticks node)
awk -v s=$((s1 - s0)) -v w=$((w1 - w0)) -v c=$((c1 - c0)) -v hz="$hz" -v n="$n" 'BEGIN {
    printf "cpu_ms_per_job gschedd=%.3f workers=%.3f tasks=%.3f\n",
           1000 * s / hz / n, 1000 * w / hz / n, 1000 * c / hz / n }'
# gschedd's planning passes so far (its /metrics), the bulk of its CPU time with a long queue
if [ -s "$tmp/state/http.addr" ]; then
    python3 - "$(cat "$tmp/state/http.addr")" <<'PY'
import sys, urllib.request
m = dict(l.split()[:2] for l in urllib.request.urlopen("http://%s/metrics" % sys.argv[1]).read().decode().splitlines() if l.startswith("gsched_sched_pass_seconds_"))
n, s = float(m["gsched_sched_pass_seconds_count"]), float(m["gsched_sched_pass_seconds_sum"])
print("plan_passes=%d plan_s=%.3f plan_ms_per_pass=%.3f" % (n, s, 1000 * s / n if n else 0))
PY
fi
echo "--- latency on an idle cluster: $((n / 10)) jobs, one submit at a time"
"$bin/sched_load" --socket "$tmp/state/gschedd.sock" -n "$((n / 10))" -c 1 true.toml | grep -E "latency|failed"
