#!/usr/bin/env bash
# sched_scale.sh [BUILD_DIR [BASELINE_BUILD_DIR]]: gschedd's scheduling throughput and
# submit-to-start latency on large clusters of fake workers (issue 18, "Scale").
#
# For each size in NODES (default "1000 10000"): a private gschedd (temporary directory,
# log_level warn, heartbeat_interval HEARTBEAT_S seconds (default 2, the deployed default),
# heartbeat_misses 30 so that a busy loop never declares a node down mid-run), and one
# tel_load process playing every worker (bench/tel_load.c: one libuv loop, NODES TCP
# connections, 8 NVLinked GPUs per node, --exit-at-once: every task ends with exit code 0 as
# soon as the LaunchTasks arrives). Once gschedd lists all NODES nodes up, sched_load submits
# JOBS jobs of 1 node x 1 GPU with INFLIGHT (32) submits in flight, waits for all of them and
# reads each one's task start as the fake worker reported it. Printed per run: jobs/s from the
# first submit to the last job's end, submits/s, median and p99 submit -> task start, gschedd's
# CPU time over the submit phase (per job too) and what the rest of the machine took.
#
# JOB_NODES and JOB_GPUS (default 1 and 1) shape the jobs: JOB_NODES=2 JOB_GPUS=8 makes
# every job a gang of two whole nodes.
#
# SWITCH=N (N > 0) hangs the nodes off switches of N consecutive nodes each ([[switch]]).
#
# PREFER=EXPR gives every job resources.prefer = EXPR (sbatch --prefer; tel_load's nodes
# have the features h100 and nvlink).
#
# PARTS=N (N > 1) splits the nodes into N partitions of consecutive nodes ([[partition]] with
# node lists, the first the default one, where the jobs go): as on a cluster whose
# partitions list their nodes, every job then has a node mask.
#
# JOBS defaults to 20,000,000 / NODES within [5000, 20000] (20,000 at 1,000 nodes, 5,000 at
# 10,000): under a minute per run on the 2-core development machine. Everything is seeded
# (node names, topologies, job order), so runs differ only by timing.
#
# GSCHEDD_PREFIX, when set, is put before gschedd's command line, e.g. to count instructions:
#   GSCHEDD_PREFIX="valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.%p" HEARTBEAT_S=30 \
#   NODES=1000 JOBS=2000 bench/sched_scale.sh build
# (gschedd ends on SIGTERM, so callgrind writes its file; a long heartbeat interval keeps
# heartbeats, whose number depends on the run's length, out of the count).
#
# With BASELINE_BUILD_DIR, each size runs REPS (default 1) pairs, the baseline's gschedd first,
# then BUILD_DIR's, with the same tel_load and sched_load (BUILD_DIR's), and the ratios
# new / baseline of the pair's figures follow: the way to compare two builds on a shared,
# noisy machine.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
baseline=""
if [ -n "${2:-}" ]; then
    baseline=$(cd "$2" && pwd)
fi
bin="$build/bin"
sizes=${NODES:-"1000 10000"}
gpus=${GPUS:-8}
inflight=${INFLIGHT:-32}
heartbeat_s=${HEARTBEAT_S:-2}
reps=${REPS:-1}
hz=$(getconf CLK_TCK)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gsched-scale.XXXXXX")
(umask 077 && head -c 32 /dev/urandom >"$tmp/gsched.key") # the cluster key (proto/auth.h)
gschedd_pid=""
load_pid=""

# 10,000 worker connections need as many descriptors in gschedd and in tel_load.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

trap cleanup EXIT
bench_name=sched_scale
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
trap 'exit 130' INT TERM

# Busy clock ticks of every CPU together, from /proc/stat.
machine_ticks() {
    local user nice system irq softirq steal
    read -r _ user nice system _ _ irq softirq steal _ </proc/stat
    echo $((user + nice + system + irq + softirq + steal))
}

# nodes_up: succeeds when gschedd lists $nodes nodes, all up.
nodes_up() {
    "$bin/gsched" nodes --json --socket "$run/gschedd.sock" 2>/dev/null | python3 -c '
import json, sys
want = int(sys.argv[1])
doc = json.load(sys.stdin)
nodes = doc.get("nodes", doc) if isinstance(doc, dict) else doc
up = sum(1 for n in nodes if str(n.get("state", "")).lower() == "up")
sys.exit(0 if len(nodes) == want and up == want else 1)' "$nodes"
}

# start_gschedd GSCHEDD PORT: a private gschedd in $run; sets gschedd_pid once it listens.
start_gschedd() {
    cat >"$run/gsched.toml" <<EOF
[scheduler]
host = "127.0.0.1"
port = $2
socket = "$run/gschedd.sock"
state_dir = "$run/state"
heartbeat_interval = "${heartbeat_s}s"
heartbeat_misses = 30
log_level = "warn"
auth_key = "$tmp/gsched.key"
EOF
    local parts=${PARTS:-0} k per sw=${SWITCH:-0}
    for ((k = 0; sw > 0 && k * sw < nodes; k++)); do
        printf '[[switch]]\nname = "s%d"\nnodes = "sim[%04d-%04d]"\n' "$k" $((k * sw + 1)) \
            $(((k + 1) * sw < nodes ? (k + 1) * sw : nodes)) >>"$run/gsched.toml"
    done
    per=$((nodes / (parts > 0 ? parts : 1)))
    for ((k = 0; parts > 1 && k < parts; k++)); do
        printf '[[partition]]\nname = "p%d"\nnodes = "sim[%04d-%04d]"\n%s\n' "$k" \
            $((k * per + 1)) $(((k + 1) * per)) "$([ $k = 0 ] && echo 'default = true')" \
            >>"$run/gsched.toml"
    done
    # shellcheck disable=SC2086 # GSCHEDD_PREFIX is words
    ${GSCHEDD_PREFIX:-} "$1" --config "$run/gsched.toml" 2>"$run/gschedd.log" &
    gschedd_pid=$!
    if ! wait_for 120 test -S "$run/gschedd.sock"; then
        head -5 "$run/gschedd.log" >&2
        return 1
    fi
}

# one_run LABEL GSCHEDD: one measured run at $nodes nodes; appends its key=value line to
# $tmp/results.txt and prints it.
one_run() {
    local label=$1 port line ramp before after exits out
    run="$tmp/run-$label-$nodes"
    mkdir -p "$run"
    port=$(free_port)
    start_gschedd "$2" "$port"
    coproc LOAD { exec "$bin/tel_load" --port "$port" -n "$nodes" -g "$gpus" \
        --interval-ms "$((heartbeat_s * 1000))" --phases without:1000000 --settle-ms 0 --launches 0 \
        --ramp-timeout-s 900 --seed 1 --exit-at-once --key "$tmp/gsched.key" \
        2>"$run/tel_load.err"; }
    # shellcheck disable=SC2153 # LOAD_PID is set by coproc
    load_pid=$LOAD_PID
    exec {load_out}<&"${LOAD[0]}" # bash closes LOAD's descriptors once tel_load has exited
    ramp=""
    while read -r -u "$load_out" line; do
        if [[ $line =~ ^nodes_registered=[0-9]+\ ramp_s=([0-9.]+) ]]; then
            ramp=${BASH_REMATCH[1]}
            break
        fi
    done
    if [ -z "$ramp" ]; then
        echo "sched_scale: tel_load stopped before every node registered:" >&2
        head -5 "$run/tel_load.err" "$run/gschedd.log" >&2
        return 1
    fi
    wait_for 300 nodes_up
    cd "$run"
    prefer_line=""
    [ -n "${PREFER:-}" ] && prefer_line="prefer = \"$PREFER\"\n"
    printf 'name = "scale"\n[resources]\nnodes = %d\ngpus_per_node = %d\n%b[run]\ncommand = ["/bin/true"]\nstdout = "/dev/null"\n' \
        "${JOB_NODES:-1}" "${JOB_GPUS:-1}" "$prefer_line" >job.toml
    before="$EPOCHREALTIME $(proc_ticks "$gschedd_pid") $(machine_ticks)"
    out=$("$bin/sched_load" --socket "$run/gschedd.sock" -n "$jobs" -c "$inflight" job.toml) ||
        echo "sched_load: exit status $?, output: $out" >&2
    after="$EPOCHREALTIME $(proc_ticks "$gschedd_pid") $(machine_ticks)"
    cd "$tmp"
    # tel_load's last line says how many exits it sent and gschedd acknowledged.
    kill -INT "$load_pid"
    exits=$(grep -m1 -o 'exits=[0-9]* exit_acks=[0-9]*' <&"$load_out" || true)
    exec {load_out}<&-
    line=$(awk -v label="$label" -v nodes="$nodes" -v jobs="$jobs" -v ramp="$ramp" -v hz="$hz" \
        -v a="$before" -v b="$after" -v exits="$exits" '
        { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
        END {
          split(a, x, " "); split(b, y, " ");
          wall = y[1] - x[1]; g = (y[2] - x[2]) / hz; others = (y[3] - x[3]) / hz - g
          printf "build=%s nodes=%d jobs=%d jobs_per_s=%s submits_per_s=%s " \
                 "latency_median_ms=%s latency_p99_ms=%s failed=%s gschedd_cpu_s=%.2f " \
                 "gschedd_cpu_ms_per_job=%.3f others_cpu_pct=%.0f wall_s=%.1f ramp_s=%s %s\n",
                 label, nodes, jobs, v["e2e_jobs_per_s"], v["submit_jobs_per_s"],
                 v["latency_median_ms"], v["latency_p99_ms"], v["failed"], g,
                 1000 * g / jobs, 100 * others / wall, wall, ramp, exits }' <<<"$out")
    echo "$line" | tee -a "$tmp/results.txt"
    stop_run
    grep -h -m3 . "$run/tel_load.err" "$run/gschedd.log" 2>/dev/null | sed 's/^/  stderr: /' || true
    rm -rf "$run"
}

# ratios: new / baseline for each (baseline, new) pair of results.txt, in order.
ratios() {
    awk '
        { delete v; for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
        v["build"] == "baseline" { for (k in v) b[k] = v[k]; next }
        v["build"] == "new" && b["nodes"] == v["nodes"] {
          printf "ratio nodes=%d jobs_per_s=%.2f latency_median_ms=%.2f latency_p99_ms=%.2f " \
                 "gschedd_cpu_ms_per_job=%.2f (new / baseline)\n", v["nodes"],
                 v["jobs_per_s"] / b["jobs_per_s"], v["latency_median_ms"] / b["latency_median_ms"],
                 v["latency_p99_ms"] / b["latency_p99_ms"],
                 v["gschedd_cpu_ms_per_job"] / b["gschedd_cpu_ms_per_job"] }' "$tmp/results.txt"
}

echo "sched_scale: sizes=\"$sizes\" gpus_per_node=$gpus inflight=$inflight" \
    "heartbeat_s=$heartbeat_s reps=$reps, $(nproc) cores, load average" \
    "$(cut -d' ' -f1-3 /proc/loadavg)"
for nodes in $sizes; do
    jobs=$((20000000 / nodes))
    jobs=$((jobs < 5000 ? 5000 : jobs > 20000 ? 20000 : jobs))
    jobs=${JOBS:-$jobs}
    if [ -z "$baseline" ]; then
        one_run build "$bin/gschedd"
        continue
    fi
    for ((r = 1; r <= reps; r++)); do
        one_run baseline "$baseline/bin/gschedd"
        one_run new "$bin/gschedd"
    done
done
if [ -n "$baseline" ]; then
    echo "--- new ($build) / baseline ($baseline), each pair run back to back"
    ratios
fi
