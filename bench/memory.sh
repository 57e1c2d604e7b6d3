#!/usr/bin/env bash
# memory.sh [BUILD_DIR]: gschedd's resident memory over many finished jobs, finished jobs kept
# for good (scheduler.min_job_age = "0s") against forgotten after a while (issue 18,
# "Memory"; Slurm's MinJobAge).
#
# For each AGE in AGES (default "0s 10s"): a private gschedd (temporary directory, log_level
# warn, as bench/sched_scale.sh runs it) and one tel_load --exit-at-once process playing
# NODES (200) nodes of GPUS (8) GPUs, every task ending with exit code 0 the moment it starts.
# sched_load then submits JOBS (60,000) jobs of 1 node x 1 GPU in batches of BATCH (2,000),
# INFLIGHT (32) submits in flight, each batch waited for and read back (gsched show) before
# the next; batches start no faster than RATE jobs/s (default 250: JOBS / RATE seconds per
# run, so that jobs outlive min_job_age and the submit key's 60 s hold within the run, as on
# a cluster busy for hours). After each batch: gschedd's VmRSS (/proc/PID/status) and the
# jobs it holds in memory (the sum of /metrics' gsched_jobs). Printed per run: one line per
# batch, then the run's figures: RSS before the first job and after the last, the growth per
# job done, the most jobs held, and the growth per job held.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
bin="$build/bin"
ages=${AGES:-"0s 10s"}
nodes=${NODES:-200}
gpus=${GPUS:-8}
jobs=${JOBS:-60000}
batch=${BATCH:-2000}
inflight=${INFLIGHT:-32}
rate=${RATE:-250}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gsched-memory.XXXXXX")
(umask 077 && head -c 32 /dev/urandom >"$tmp/gsched.key")
gschedd_pid=""
load_pid=""

trap cleanup EXIT
bench_name=memory
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
trap 'exit 130' INT TERM

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$gschedd_pid/status"; }

# Jobs gschedd holds in memory: /metrics' gsched_jobs samples added up.
jobs_held() {
    python3 - "$(cat "$run/state/http.addr")" <<'PY'
import sys, urllib.request
addr = sys.argv[1].strip()
text = urllib.request.urlopen("http://%s/metrics" % addr, timeout=30).read().decode()
print(int(sum(float(l.rsplit(" ", 1)[1]) for l in text.splitlines() if l.startswith("gsched_jobs{"))))
PY
}

nodes_up() {
    "$bin/gsched" nodes --json --socket "$run/gschedd.sock" 2>/dev/null | python3 -c '
import json, sys
doc = json.load(sys.stdin)
nodes = doc.get("nodes", doc) if isinstance(doc, dict) else doc
sys.exit(0 if sum(1 for n in nodes if str(n.get("state", "")).lower() == "up") == int(sys.argv[1]) else 1)' "$nodes"
}

one_run() {
    local age=$1 port line ramp start done=0 rss0 rss peak_held=0 held n
    run="$tmp/run-$age"
    mkdir -p "$run"
    port=$(free_port)
    cat >"$run/gsched.toml" <<EOF
[scheduler]
host = "127.0.0.1"
port = $port
socket = "$run/gschedd.sock"
state_dir = "$run/state"
heartbeat_interval = "2s"
heartbeat_misses = 30
log_level = "warn"
http = "127.0.0.1:0"
auth_key = "$tmp/gsched.key"
min_job_age = "$age"
EOF
    "$bin/gschedd" --config "$run/gsched.toml" 2>"$run/gschedd.log" &
    gschedd_pid=$!
    wait_for 120 test -S "$run/gschedd.sock"
    coproc LOAD { exec "$bin/tel_load" --port "$port" -n "$nodes" -g "$gpus" \
        --interval-ms 2000 --phases without:1000000 --settle-ms 0 --launches 0 \
        --ramp-timeout-s 300 --seed 1 --exit-at-once --key "$tmp/gsched.key" \
        2>"$run/tel_load.err"; }
    # shellcheck disable=SC2153 # LOAD_PID is set by coproc
    load_pid=$LOAD_PID
    ramp=""
    while read -r -u "${LOAD[0]}" line; do
        if [[ $line =~ ^nodes_registered=[0-9]+\ ramp_s=([0-9.]+) ]]; then
            ramp=${BASH_REMATCH[1]}
            break
        fi
    done
    [ -n "$ramp" ] || { echo "memory: tel_load stopped early" >&2; head -5 "$run/tel_load.err" >&2; return 1; }
    wait_for 120 nodes_up
    wait_for 30 test -s "$run/state/http.addr"
    cd "$run"
    printf 'name = "mem"\n[resources]\nnodes = 1\ngpus_per_node = 1\n[run]\ncommand = ["/bin/true"]\nstdout = "/dev/null"\n' >job.toml
    rss0=$(rss_kib)
    echo "min_job_age=$age jobs_done=0 rss_kib=$rss0 jobs_held=$(jobs_held)"
    start=$SECONDS
    while [ "$done" -lt "$jobs" ]; do
        n=$((jobs - done < batch ? jobs - done : batch))
        # paced: this batch starts no earlier than done / rate seconds into the run
        while [ $((SECONDS - start)) -lt $((done / rate)) ]; do sleep 0.2; done
        out=$("$bin/sched_load" --socket "$run/gschedd.sock" -n "$n" -c "$inflight" job.toml) ||
            { echo "memory: sched_load failed: $out" >&2; return 1; }
        done=$((done + n))
        rss=$(rss_kib)
        held=$(jobs_held)
        [ "$held" -gt "$peak_held" ] && peak_held=$held
        echo "min_job_age=$age jobs_done=$done rss_kib=$rss jobs_held=$held elapsed_s=$((SECONDS - start)) $(echo "$out" | grep -o 'e2e_jobs_per_s=[0-9]*')"
    done
    # (parentheses: a bare ">" among print's arguments would redirect its output)
    awk -v age="$age" -v jobs="$jobs" -v r0="$rss0" -v r1="$rss" -v held="$peak_held" 'BEGIN {
        f = "RESULT min_job_age=%s jobs=%d rss_start_mib=%.1f rss_end_mib=%.1f "
        f = f "bytes_per_job_done=%.0f peak_jobs_held=%d bytes_per_job_held=%.0f\n"
        printf f, age, jobs, r0 / 1024, r1 / 1024, (r1 - r0) * 1024 / jobs, held,
               (held > 0 ? (r1 - r0) * 1024 / held : 0) }'
    # What reading back costs: sacct of the most recent forgotten jobs, show of the first job.
    local t0 t1 lines
    t0=$EPOCHREALTIME
    lines=$("$bin/gsched" sacct -a -n -P -o JobID --socket "$run/gschedd.sock" | wc -l)
    t1=$EPOCHREALTIME
    echo "min_job_age=$age sacct_rows=$lines sacct_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') rss_after_sacct_kib=$(rss_kib)"
    t0=$EPOCHREALTIME
    "$bin/gsched" show 1 --socket "$run/gschedd.sock" >/dev/null
    t1=$EPOCHREALTIME
    echo "min_job_age=$age show_first_job_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')"
    cd "$tmp"
    stop_run
    grep -h -m3 . "$run/tel_load.err" "$run/gschedd.log" 2>/dev/null | sed 's/^/  stderr: /' || true
    rm -rf "$run"
}

echo "memory: ages=\"$ages\" nodes=$nodes gpus_per_node=$gpus jobs=$jobs batch=$batch" \
    "inflight=$inflight rate=$rate, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
for age in $ages; do
    one_run "$age"
done
