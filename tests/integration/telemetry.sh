#!/usr/bin/env bash
# telemetry.sh BIN_DIR SRC_DIR FAKE_NVML_DIR: GPU telemetry end to end, on a real gschedd and
# two gsched-workerd (4 synthetic GPUs each) on loopback, whose NVML is the scripted fake
# (tests/common/fake_nvml.c, GSCHED_FAKE_NVML_SCRIPT; one script per node, rewritten to
# change the load while they run).
#   - A 2-GPU job on node1 whose GPU 0 works and GPU 1 idles: GPU 1 is flagged after the
#     idle window (history line, `gsched show`'s IdleGPUs, `gsched top --once`'s IDLE line and
#     totals, `gsched nodes --json`'s gpu_stats with the job and the task's process mapped
#     to it); the flag clears when GPU 1 works. Ended, its usage is stored: sacct's columns
#     and --json, seff's GPU lines, and the same after gschedd restarts.
#   - A job in a partition whose idle_action is "cancel" (grace 0) whose GPU never works is
#     cancelled by gschedd, saying why, and its history says it used none of its GPUs; with
#     "requeue" it is requeued; with "notify" its owner finds a line in its output.
#   - A node without NVML reports no GPU figures and the views say so.
name="telemetry"
. "$(dirname "$0")/../daemons.sh" "$(cd "$1" && pwd)" "$(cd "$2" && pwd)"
fake=$(cd "$3" && pwd)
[ -f "$fake/libnvidia-ml.so.1" ] || fail "no fake NVML in $fake"
work=$tmp/work
mkdir -p "$work" "$tmp/state" || exit 1
cd "$work" || exit 1

write_config 'heartbeat_interval = "1s"' 'kill_grace = "1s"' 'idle_window = "2s"' \
  'idle_threshold = 5' 'http = "127.0.0.1:0"' '[worker]' "log_dir = \"$tmp/state\"" \
  'telemetry_interval = "1s"' \
  '[[partition]]' 'name = "main"' 'default = true' 'nodes = ["node1", "node3"]' \
  '[[partition]]' 'name = "strict"' 'nodes = "node2"' 'idle_action = "cancel"' 'idle_grace = "0s"' \
  '[[partition]]' 'name = "watched"' 'nodes = "node2"' 'idle_action = "notify"' \
  '[[partition]]' 'name = "recycled"' 'nodes = "node2"' 'idle_action = "requeue"' 'idle_grace = "0s"'

# script NODE LINES...: the fake NVML script of NODE's worker, replaced in one rename.
script() {
  local node=$1
  shift
  printf '%s\n' "$@" > "$tmp/$node.nvml.tmp" && mv "$tmp/$node.nvml.tmp" "$tmp/$node.nvml"
}
# node1's GPU 0 works from the start (the job below holds it before its pid is known).
script node1 'count 4' 'gpu 0 util=80 mem_util=30 mem_used_mib=30000 mem_total_mib=81559 power_w=400 temp_c=65' \
  'gpu 1 util=0 mem_used_mib=100 mem_total_mib=81559' 'gpu 2 util=0' 'gpu 3 util=0'
script node2 'count 4' 'gpu 0 util=0 mem_total_mib=81559' 'gpu 1 util=0' 'gpu 2 util=0' \
  'gpu 3 util=0'

"$bin/gschedd" --config "$tmp/gsched.toml" 2>>"$tmp/gschedd.log" &
sched=$!
pids+=("$sched")
wait_for "gschedd to listen" test -S "$tmp/gschedd.sock"
start_worker() {
  local n=$1 lib=$2
  GSCHED_FAKE_NVML_SCRIPT=$tmp/$n.nvml LD_LIBRARY_PATH=$lib \
    "$bin/gsched-workerd" --config "$tmp/gsched.toml" --scheduler 127.0.0.1:"$port" --name "$n" \
    --address 127.0.0.1 --gpus 4 --cli-socket "$tmp/$n.sock" --log-level info 2>"$tmp/$n.log" &
  pids+=($!)
}
start_worker node1 "$fake"
start_worker node2 "$fake"
start_worker node3 /nonexistent # no NVML: a CPU-figures-only node
nodes_up() { [ "$("$bin/gsched" nodes | grep -cE '^node[123] +up ')" = 3 ]; }
wait_for "three workers up" nodes_up
grep -q 'nvml=yes' "$tmp/node1.log" || fail "node1 did not load the fake NVML"
grep -q 'nvml=no' "$tmp/node3.log" || fail "node3 loaded an NVML"

# nodes EXPR: a Python expression over `gsched nodes --json`'s nodes by name (n).
nodes() {
  "$bin/gsched" nodes --json | python3 -c '
import json, sys
n = {x["name"]: x for x in json.load(sys.stdin)}
print(eval(sys.argv[1]))' "$1"
}
# show JOB EXPR: a Python expression over `gsched show JOB --json` (r: the reply, j: the job).
show() {
  "$bin/gsched" show "$1" --json | python3 -c '
import json, sys
r = json.load(sys.stdin); j = r["job"]
print(eval(sys.argv[1]))' "$2"
}
is() { [ "$("$@" 2>/dev/null)" = True ]; }

# Figures flow: node1's GPU 0 as scripted, node3 has none.
wait_for "node1's GPU figures" is nodes \
  'any(g["index"] == 0 and g["memory_total_mib"] == 81559 and g["samples"] > 0 for g in n["node1"]["gpu_stats"])'
[ "$(nodes 'len(n["node3"]["gpu_stats"])')" = 0 ] || fail "node3 has GPU figures without NVML"

# A batch job on node1's GPUs 0 and 1 that records its shell's pid (its session) and waits.
cat > job.sh <<EOF
#!/bin/sh
echo \$\$ > $work/job.pid
i=0
while [ \$i -lt 600 ] && [ ! -f $work/stop ]; do sleep 0.1; i=\$((i+1)); done
EOF
# sbatch_json ARGS...: submits, prints the job id.
sbatch_json() {
  local out
  out=$("$bin/gsched" sbatch --json "$@") || fail "sbatch $* refused: $out"
  python3 -c 'import json,sys; print(json.loads(sys.argv[1])["job_id"])' "$out"
}
job=$(sbatch_json -J half-idle -w node1 --gpus-per-node=2 job.sh)
wait_for "the job's pid" test -s "$work/job.pid"
pid=$(cat "$work/job.pid")
gpus=$(show "$job" '",".join(str(g) for a in j["allocation"] for g in a["gpus"])')
[ "$gpus" = "0,1" ] || fail "job got GPUs $gpus, not 0,1"
script node1 'count 4' "gpu 0 util=80 mem_util=30 mem_used_mib=30000 mem_total_mib=81559 power_w=400 temp_c=65 pids=$pid:30000" \
  'gpu 1 util=0 mem_used_mib=100 mem_total_mib=81559' 'gpu 2 util=0' 'gpu 3 util=0'

wait_for "GPU 1 flagged idle" is show "$job" '"node1:1" in j["usage"]["idle_gpus"]'
show "$job" '[h["reason"] for h in r["history"]]' | grep -q 'GPU node1:1 idle: under 5% for' ||
  fail "no idle line in the history: $(show "$job" 'r["history"]')"
[ "$(show "$job" 'j["usage"]["idle_gpus"]')" = "['node1:1']" ] || fail "GPU 0 flagged too"
"$bin/gsched" show "$job" | grep -q 'IdleGPUs=node1:1' || fail "gsched show has no IdleGPUs"
"$bin/gsched" queue | grep -qE "^$job .* node1 \(GPUIdle:node1:1\)\$" ||
  fail "gsched queue: $("$bin/gsched" queue)"
grep -q "job=$job node=node1 gpu=1 .*gpu idle flagged" "$tmp/gschedd.log" || fail "no log line"
top=$("$bin/gsched" top --once) || fail "top --once failed"
echo "$top" | grep -q 'idle-flagged 1' || fail "top's totals: $top"
echo "$top" | grep -qE '^ +1 +\[ +\] +0% .* '"$job"' .*IDLE [0-9]+s' || fail "top's GPU 1 line: $top"
echo "$top" | grep -qE '^node1 .* 0 +\[\|+ +\] +80% .*400W +65C '"$job"' ' || fail "top's GPU 0: $top"
"$bin/gsched" top --once --idle | grep -c IDLE | grep -qx 1 || fail "top --idle"
# /metrics: the figures per GPU, and the flagged GPU with its job and user.
wait_for "http.addr" test -s "$tmp/state/http.addr"
metrics=$(python3 -c 'import sys, urllib.request
print(urllib.request.urlopen("http://" + open(sys.argv[1]).read().strip() + "/metrics").read().decode())' \
  "$tmp/state/http.addr") || fail "no /metrics"
echo "$metrics" | grep -qx 'gsched_gpu_utilization_percent{node="node1",gpu="0"} 80' ||
  fail "no GPU 0 utilisation in /metrics"
echo "$metrics" | grep -qx 'gsched_gpu_power_watts{node="node1",gpu="0"} 400' || fail "no power"
echo "$metrics" | grep -qE '^gsched_gpu_idle_seconds\{node="node1",gpu="1",job="'"$job"'",user="[a-z]+"\} [0-9.]+$' ||
  fail "no idle GPU in /metrics: $(echo "$metrics" | grep idle)"
wait_for "the task's process mapped to its job" is nodes \
  "[p['job_id'] for g in n['node1']['gpu_stats'] if g['index'] == 0 for p in g['processes']] == [$job]"

# The full-screen view, driven through tmux as a person would: the idle line highlighted
# among the others, 'i' keeps only idle GPUs, 's' changes the sort, 'q' quits.
command -v tmux >/dev/null || fail "tmux is missing (deploy/install-deps.sh installs it)"
export TMUX_TMPDIR=$tmp
tmux -L gstop new-session -d -s top -x 150 -y 30 \
  "GSCHED_SOCKET=$GSCHED_SOCKET TERM=xterm-256color $bin/gsched top --interval 1s; echo top-exited=\$?; sleep 30"
pane() { tmux -L gstop capture-pane -p -t top; }
screen_has() { pane | grep -qE "$1"; }
wait_for "top's screen" screen_has 'idle-flagged 1'
screen_has 'IDLE [0-9]+s' || fail "top shows no idle GPU: $(pane)"
screen_has '^node2 ' || fail "top shows no node2: $(pane)"
screen_has 'q quit' || fail "no key line: $(pane)"
tmux -L gstop send-keys -t top i
wait_for "idle-only view" screen_has 'idle only yes'
[ "$(pane | grep -cE '\[[ |]+\]')" = 1 ] || fail "idle only shows other GPUs: $(pane)"
tmux -L gstop send-keys -t top s
wait_for "sort by util" screen_has 'sort util'
tmux -L gstop send-keys -t top q
wait_for "top to quit" screen_has 'top-exited=0'
tmux -L gstop kill-server 2>/dev/null

# The status page in headless Chromium, its DOM once the page's scripts have run (virtual
# time lets its fetches finish): the totals, the idle GPU's cell, the job's row, node1's
# charts; a screenshot is kept in the build tree as the test's artifact.
command -v chromium >/dev/null || fail "chromium is missing (deploy/install-deps.sh installs it)"
addr=$(cat "$tmp/state/http.addr")
browse() {
  timeout 90 chromium --headless --no-sandbox --disable-gpu --user-data-dir="$tmp/chrome" \
    --virtual-time-budget=6000 --window-size=1280,1000 "$@" 2>>"$tmp/chromium.log"
}
dom=$(browse --dump-dom "http://$addr/?node=node1") || fail "chromium failed: $(tail -5 "$tmp/chromium.log")"
echo "$dom" | grep -q '<body data-loaded="yes">' || fail "the page did not load its data: $dom"
echo "$dom" | grep -q '<b id="idle-count">1</b>' || fail "page totals: $(echo "$dom" | grep totals)"
echo "$dom" | grep -qE '<div class="gpu idle" title="node1 GPU 1[^"]*IDLE since[^"]*" data-gpu="node1:1">' ||
  fail "no idle cell for node1:1: $(echo "$dom" | grep -o '<div class="gpu[^>]*>' | head -8)"
echo "$dom" | grep -qE 'data-gpu="node1:0"[^>]*>80<' || fail "GPU 0's cell has no 80%"
echo "$dom" | grep -qE '<tr class="idle"><td class="num">'"$job"'</td><td>half-idle</td>' ||
  fail "no idle row for the job: $(echo "$dom" | grep -o '<tbody>.*</tbody>' | head -2)"
echo "$dom" | grep -q 'data-chart="node1:1"' || fail "no chart for node1:1"
artifacts=$bin/../test-artifacts
mkdir -p "$artifacts"
browse --screenshot="$artifacts/status-page.png" "http://$addr/?node=node1" >/dev/null ||
  fail "no screenshot"
[ -s "$artifacts/status-page.png" ] || fail "empty screenshot"

# GPU 1 works: the flag clears.
script node1 'count 4' "gpu 0 util=80 mem_used_mib=30000 mem_total_mib=81559 pids=$pid:30000" \
  'gpu 1 util=60 mem_used_mib=2000 mem_total_mib=81559' 'gpu 2 util=0' 'gpu 3 util=0'
wait_for "the flag to clear" is show "$job" 'j["usage"]["idle_gpus"] == []'
show "$job" '[h["reason"] for h in r["history"]]' | grep -q 'GPU node1:1 busy again' ||
  fail "no busy-again line"

touch "$work/stop"
"$bin/gsched" wait "$job" --timeout 30s >/dev/null 2>&1
is show "$job" 'j["state"] == "COMPLETED"' || fail "job did not complete: $(show "$job" j)"
check_usage() {
  "$bin/gsched" sacct -j "$job" --json | python3 -c '
import json, sys
u = json.load(sys.stdin)["jobs"][0]["usage"]
assert u["telemetry"], u
assert u["gpus_alloc"] == 2 and u["gpus_used"] == 2, u
assert u["gpu_alloc_ms"] > 0 and 0 < u["gpu_idle_ms"] < u["gpu_alloc_ms"], u
assert u["gpu_util_max_pct"] == 80, u
assert 0 < u["gpu_util_mean_pct"] < 80, u
assert u["gpu_mem_peak_mib"] == 30000, u
assert u["idle_flags"] == 1, u
' || fail "stored usage wrong: $("$bin/gsched" sacct -j "$job" --json)"
}
check_usage
line=$("$bin/gsched" sacct -j "$job" -n -P -o JobID,GPUUtilMax,GPUMem,GPUsUsed,TRESUsageInMax)
echo "$line" | grep -qE "^$job\|80%\|30000M\|2/2\|cpu=[0-9:]+,gres/gpumem=30000M,gres/gpuutil=80,mem=[0-9]+M$" ||
  fail "sacct columns: $line"
seff=$("$bin/gsched" seff "$job")
echo "$seff" | grep -q '^GPUs: 2 allocated, 2 used$' || fail "seff: $seff"
echo "$seff" | grep -qE '^GPU Utilization: [0-9.]+% mean, 80% max over' || fail "seff: $seff"
echo "$seff" | grep -qE '^CPU Efficiency: [0-9.]+% of' || fail "seff has no CPU efficiency: $seff"

# Stored: the same after gschedd restarts.
kill -TERM "$sched"
wait "$sched" 2>/dev/null
"$bin/gschedd" --config "$tmp/gsched.toml" 2>>"$tmp/gschedd.log" &
sched=$!
pids+=("$sched")
wait_for "gschedd back" nodes_up
check_usage

# The strict partition cancels a job whose GPU idles (grace 0: at the flag).
printf '#!/bin/sh\nsleep 60\n' > idle.sh
sjob=$(sbatch_json -J never-works -p strict --gpus-per-node=1 idle.sh)
"$bin/gsched" wait "$sjob" --timeout 30s >/dev/null 2>&1
is show "$sjob" 'j["state"] == "CANCELLED"' || fail "idle job not cancelled: $(show "$sjob" j)"
show "$sjob" 'j["reason"]' | grep -q 'cancelled by gsched: GPU node2:0 idle' ||
  fail "no reason: $(show "$sjob" 'j["reason"]')"
show "$sjob" '[h["reason"] for h in r["history"]]' | grep -q 'used 0 of its 1 GPUs' ||
  fail "no unused-GPUs line: $(show "$sjob" 'r["history"]')"

# The recycled partition requeues such a job instead (and it is cancelled here once seen).
rjob=$(sbatch_json -J requeued -p recycled --gpus-per-node=1 idle.sh)
requeued() { [ "$(show "$rjob" 'j["restart_count"] >= 1')" = True ]; }
wait_for "the idle job requeued" requeued
show "$rjob" '[h["reason"] for h in r["history"]]' | grep -q 'requeued by gsched: GPU node2:0 idle' ||
  fail "no requeue line: $(show "$rjob" 'r["history"]')"
"$bin/gsched" cancel "$rjob" >/dev/null
"$bin/gsched" wait "$rjob" --timeout 30s >/dev/null 2>&1

# The watched partition tells the owner in the job's stderr (its output file here).
printf '#!/bin/sh\ni=0\nwhile [ $i -lt 600 ] && [ ! -f %s/stop2 ]; do sleep 0.1; i=$((i+1)); done\n' \
  "$work" > wait.sh
njob=$(sbatch_json -J watched -p watched --gpus-per-node=1 wait.sh)
notified() { grep -q "^gsched: GPU node2:0 of job $njob has been idle (under 5% utilisation)" \
  "slurm-$njob.out"; }
wait_for "the notice in the job's output" notified
is show "$njob" 'j["state"] == "RUNNING"' || fail "notify ended the job: $(show "$njob" j)"
touch "$work/stop2"
"$bin/gsched" wait "$njob" --timeout 30s >/dev/null 2>&1

kill -TERM "${pids[@]}" 2>/dev/null
for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
if grep -lE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$tmp"/*.log; then
  fail "sanitizer report in a daemon log"
fi
echo "$name: ok"
