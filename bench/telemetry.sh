#!/usr/bin/env bash
# telemetry.sh [BUILD_DIR]: gschedd's CPU cost of GPU telemetry, and /metrics render time,
# for NODES simulated nodes (default 1000) of GPUS GPUs (8) heartbeating once a second.
#
# Starts a private gschedd (temporary directory; heartbeat_interval 1 s, heartbeat_misses 30,
# http on a free loopback port, log_level warn) and one tel_load process playing every
# worker (bench/tel_load.c). Once they have registered, one job array (NODES elements of 1
# node x 4 GPUs, `gsched sbatch --array`) takes half the GPUs; tel_load answers the launches
# as workers would and reports those jobs' tasks and GPU processes from then on. Then the
# same connections heartbeat through measured windows of WINDOW_S seconds (default 25),
# interleaved: without GPU telemetry, with, without, with (each after a 3 s settle in its
# mode). Per window: gschedd's CPU time (utime + stime, /proc/PID/stat) over wall time, in %
# of one core; tel_load's likewise; and what everything else on the machine took (busy time
# from /proc/stat less those two, in % of one core: up to 100 x cores), since the machine may
# be shared. Then the means per mode, the ratio with / without and the difference (the
# telemetry's own cost), also per heartbeat, and one job's usage as gschedd accounts it.
# Last, with every node still reporting GPU figures, FETCHES (20) GETs of /metrics, timed to
# the response headers (gschedd renders the whole text before answering) and to the last
# byte, beside the same number of GETs of a 404 route as the HTTP round trip's baseline.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
bin="$build/bin"
nodes=${NODES:-1000}
gpus=${GPUS:-8}
window=${WINDOW_S:-25}
fetches=${FETCHES:-20}
hz=$(getconf CLK_TCK)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gsched-tel.XXXXXX")
(umask 077 && head -c 32 /dev/urandom > "$tmp/gsched.key") # the cluster key (proto/auth.h)
gschedd_pid=""
load_pid=""

cleanup() {
    if [ -n "$load_pid" ]; then
        kill "$load_pid" 2>/dev/null || true
    fi
    if [ -n "$gschedd_pid" ]; then
        kill "$gschedd_pid" 2>/dev/null || true
        wait "$gschedd_pid" 2>/dev/null || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
bench_name=telemetry
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

# "busy total" clock ticks of every CPU together, from /proc/stat.
machine_ticks() {
    local user nice system idle iowait irq softirq steal rest
    read -r _ user nice system idle iowait irq softirq steal rest </proc/stat
    local busy=$((user + nice + system + irq + softirq + steal))
    echo "$busy $((busy + idle + iowait))"
}

snapshot() {
    echo "$EPOCHREALTIME $(proc_ticks "$gschedd_pid") $(proc_ticks "$load_pid") $(machine_ticks)"
}

# phase_line PHASE MODE HEARTBEATS BEGIN_SNAPSHOT END_SNAPSHOT: one window's figures.
phase_line() {
    awk -v phase="$1" -v mode="$2" -v hb="$3" -v hz="$hz" -v a="$4" -v b="$5" 'BEGIN {
        split(a, x, " "); split(b, y, " ");
        wall = y[1] - x[1]; g = (y[2] - x[2]) / hz; l = (y[3] - x[3]) / hz;
        busy = (y[4] - x[4]) / hz; total = (y[5] - x[5]) / hz;
        printf "phase=%s mode=%s window_s=%.2f heartbeats=%d gschedd_cpu_s=%.2f " \
               "gschedd_cpu_pct=%.2f tel_load_cpu_pct=%.2f others_cpu_pct=%.1f " \
               "machine_busy_pct=%.1f\n", phase, mode, wall, hb, g, 100 * g / wall,
               100 * l / wall, 100 * (busy - g - l) / wall, 100 * busy / total }'
}

# summary WINDOWS_FILE METRICS_FILE GETS: the means per mode, and gschedd's CPU per /metrics
# GET: its CPU time during the GETs less what heartbeats took at the with windows' rate.
summary() {
    awk -v gets="$3" '
        FNR == 1 && NR > 1 { metrics = 1 }
        { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
        metrics { mcpu = v["gschedd_cpu_s"]; mwall = v["window_s"]; next }
        { m = v["mode"]; n[m]++; pct[m] += v["gschedd_cpu_pct"]; list[m] = list[m] " " v["gschedd_cpu_pct"]
          cpu[m] += v["gschedd_cpu_s"]; hb[m] += v["heartbeats"]
          if (m == "without") last = v["gschedd_cpu_pct"]
          else pairs = pairs " " sprintf("%.2f", v["gschedd_cpu_pct"] - last) }
        END {
          if (n["with"] == 0 || n["without"] == 0) exit 1
          w = pct["with"] / n["with"]; o = pct["without"] / n["without"]
          printf "without: gschedd_cpu_pct=%.2f (windows:%s)\n", o, list["without"]
          printf "with: gschedd_cpu_pct=%.2f (windows:%s)\n", w, list["with"]
          printf "ratio_with_over_without=%.2f telemetry_cpu_pct=%.2f (per pair:%s)\n", w / o, w - o, pairs
          printf "telemetry_cpu_us_per_heartbeat=%.1f gschedd_cpu_us_per_heartbeat_with=%.1f without=%.1f\n",
                 1e6 * (cpu["with"] / hb["with"] - cpu["without"] / hb["without"]),
                 1e6 * cpu["with"] / hb["with"], 1e6 * cpu["without"] / hb["without"]
          if (mwall > 0)
              printf "gschedd_cpu_ms_per_metrics_get=%.1f (%d GETs in %.2f s, less heartbeats at %.2f %%)\n",
                     1000 * (mcpu - w / 100 * mwall) / gets, gets, mwall, w }' "$1" "$2"
}

# time_gets URL K: median and p90 of K GETs, to the headers and to the last byte.
time_gets() {
    python3 - "$1" "$2" <<'EOF'
import sys, time, urllib.error, urllib.request
url, k = sys.argv[1], int(sys.argv[2])
head, full, body = [], [], b""
for _ in range(k):
    t0 = time.perf_counter()
    try:
        r = urllib.request.urlopen(url, timeout=60)
    except urllib.error.HTTPError as e:
        r = e
    t1 = time.perf_counter()
    body = r.read()
    t2 = time.perf_counter()
    r.close()
    head.append(1e3 * (t1 - t0))
    full.append(1e3 * (t2 - t0))
q = lambda v, p: sorted(v)[min(len(v) - 1, int(p * len(v)))]
lines = body.splitlines()
gpu = sum(1 for l in lines if l.startswith(b"gsched_gpu_"))
up = [l.split()[-1].decode() for l in lines if l.startswith(b'gsched_nodes{state="up"}')]
print(f"gets={k} headers_median_ms={q(head, .5):.1f} headers_p90_ms={q(head, .9):.1f} "
      f"total_median_ms={q(full, .5):.1f} total_p90_ms={q(full, .9):.1f} "
      f"body_bytes={len(body)} lines={len(lines)} gsched_gpu_lines={gpu} "
      f"nodes_up={up[0] if up else '-'}")
EOF
}

# job_usage URL: what gschedd's per-job accounting says of one job (its JSON "usage").
job_usage() {
    python3 - "$1" <<'EOF'
import json, sys, urllib.request
u = json.load(urllib.request.urlopen(sys.argv[1], timeout=60)).get("usage") or {}
keys = ("telemetry", "gpus_alloc", "gpu_alloc_ms", "gpu_util_mean_pct", "cpu_time_ms", "rss_peak_mib")
print(" ".join(f"{k}={u[k]}" for k in keys if k in u) or "usage=none")
EOF
}

# render_times URL N: gschedd's own render time of /metrics (gsched_metrics_render_seconds,
# which each scrape reports for the one before it), median and p90 over N scrapes.
render_times() {
    python3 - "$1" "$2" <<'EOF'
import sys, urllib.request
ms = []
for _ in range(int(sys.argv[2]) + 1):
    body = urllib.request.urlopen(sys.argv[1], timeout=60).read().decode()
    for line in body.splitlines():
        if line.startswith("gsched_metrics_render_seconds "):
            ms.append(float(line.split()[1]) * 1000)
ms = sorted(ms[1:])  # the first reports a scrape from before this run
print(f"render_ms_median={ms[len(ms) // 2]:.1f} render_ms_p90={ms[int(len(ms) * 0.9)]:.1f} scrapes={len(ms)}")
EOF
}

# start_gschedd PORT: sets gschedd_pid once its CLI socket and http.addr exist.
start_gschedd() {
    local port=$1
    cat >"$tmp/gsched.toml" <<EOF
[scheduler]
host = "127.0.0.1"
port = $port
socket = "$tmp/gschedd.sock"
state_dir = "$tmp/state"
heartbeat_interval = "1s"
heartbeat_misses = 30
log_level = "warn"
http = "127.0.0.1:0"
auth_key = "$tmp/gsched.key"
EOF
    "$bin/gschedd" --config "$tmp/gsched.toml" 2>"$tmp/gschedd.log" &
    gschedd_pid=$!
    wait_for 30 test -S "$tmp/gschedd.sock"
    wait_for 30 test -s "$tmp/state/http.addr"
}

# on_end LINE: a window's figures from tel_load's "phase=I mode=M end heartbeats_sent=H ..."
on_end() {
    [[ $1 =~ ^phase=([0-9]+)\ mode=([a-z]+)\ end\ heartbeats_sent=([0-9]+) ]] || return 1
    phase_line "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "${BASH_REMATCH[3]}" "$begin" "$(snapshot)"
}

port=$(free_port)
start_gschedd "$port"
url="http://$(<"$tmp/state/http.addr")"
echo "telemetry: $nodes nodes x $gpus GPUs, heartbeats every 1 s, $window s windows," \
    "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
phases="without:$window,with:$window,without:$window,with:$window,with:60"
coproc LOAD { exec "$bin/tel_load" --port "$port" -n "$nodes" -g "$gpus" --interval-ms 1000 \
    --phases "$phases" --settle-ms 3000 --launches "$nodes" --ramp-timeout-s 240 \
    --key "$tmp/gsched.key" 2>"$tmp/tel_load.err"; }
# shellcheck disable=SC2153 # LOAD_PID is set by coproc
load_pid=$LOAD_PID
exec {load_out}<&"${LOAD[0]}" # bash closes LOAD's descriptors once tel_load has exited
cd "$tmp"
while read -r -u "$load_out" line; do
    case "$line" in
    nodes_registered=*ramp_s=*)
        echo "$line"
        "$bin/gsched" sbatch --socket "$tmp/gschedd.sock" --array="1-$nodes" -N 1 \
            --gpus-per-node=4 --wrap "sleep infinity" </dev/null >/dev/null ;;
    launches=*) echo "$line jobs_running_with_4_gpus_each" ;;
    "phase=5 mode=with begin")
        echo "--- /metrics, all $nodes nodes reporting GPU figures, $fetches GETs each"
        before=$(snapshot)
        echo "metrics $(time_gets "$url/metrics" "$fetches")"
        phase_line metrics with 0 "$before" "$(snapshot)" | tee "$tmp/metrics.txt"
        echo "render_in_gschedd $(render_times "$url/metrics" "$fetches")"
        echo "baseline_404 $(time_gets "$url/api/v1/jobs/999999999" "$fetches")"
        echo "job 1 usage: $(job_usage "$url/api/v1/jobs/1")"
        kill -INT "$load_pid" ;;
    phase=*begin) begin=$(snapshot) ;;
    phase=*end*)
        echo "tel_load: $line"
        on_end "$line" | tee -a "$tmp/windows.txt" ;;
    *) echo "tel_load: $line" ;;
    esac
done
wait "$load_pid" || true
load_pid=""
echo "--- summary (gschedd CPU in % of one core over each window)"
summary "$tmp/windows.txt" "$tmp/metrics.txt" "$fetches"
if [ -s "$tmp/tel_load.err" ] || [ -s "$tmp/gschedd.log" ]; then
    echo "--- stderr of tel_load and gschedd (first lines)"
    head -5 "$tmp/tel_load.err" "$tmp/gschedd.log"
fi
