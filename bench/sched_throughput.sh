#!/usr/bin/env bash
# sched_throughput.sh [N] [BUILD_DIR]: scheduler throughput and latency on a local cluster.
# Starts `gsched up` (4 workers on this machine) in a temporary directory, submits N trivial
# jobs (/bin/true, 1 CPU each) with 32 submits in flight, and prints jobs/s submitted, jobs/s
# completed end to end, and the median / p99 time from a submit being sent to its task
# starting. Every submit is committed to SQLite (fsync) before it is acknowledged.
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
echo "--- throughput: $n jobs, 32 submits in flight"
"$bin/sched_load" --socket "$tmp/state/gschedd.sock" -n "$n" -c 32 true.toml
echo "--- latency on an idle cluster: $((n / 10)) jobs, one submit at a time"
"$bin/sched_load" --socket "$tmp/state/gschedd.sock" -n "$((n / 10))" -c 1 true.toml | grep -E "latency|failed"
