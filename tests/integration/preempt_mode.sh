#!/usr/bin/env bash
# preempt_mode.sh BIN_DIR SRC_DIR: Slurm's PreemptMode per QOS (qos.preempt_mode), fast, on a
# `gsched up` cluster of one worker with 1 GPU whose gschedd is restarted with three QOS:
# "keep" (tier 0, off), "scratch" (tier 0, cancel) and "urgent" (tier 1). A keep job on the
# GPU is never preempted: an urgent job waits for Resources beside it. A scratch job running
# `sleep 600` on the GPU is preempted by an urgent job: it ends CANCELLED, not requeued, its
# history saying by which job, while the urgent job runs; /metrics counts the preemption.
# sbatch --test-only of an urgent job says it would start now by preempting the scratch job.
# A scratch job holding the one matlab seat is preempted by an urgent job that needs the
# seat (and no GPU), which then runs.
# (preempt.sh covers the default, requeue, with a checkpointing gsched-train run.)
name="integration_preempt_mode"
. "$(dirname "$0")/lib.sh"

start_cluster --workers 1 --gpus-per-node 1 --heartbeat 1s --kill-grace 2s

cat >> "$state/gsched.toml" << 'EOF'
[[qos]]
name = "keep"
preempt_mode = "off"
[[qos]]
name = "scratch"
preempt_mode = "cancel"
[[qos]]
name = "urgent"
tier = 1
[[license]]
name = "matlab"
count = 1
EOF
restart_sched 1

{ echo "#!/bin/sh"; gate_wait keep; } > "$work/keep.sh"
{ echo "#!/bin/sh"; gate_wait urgent; } > "$work/urgent.sh"

# --- off: never a victim --------------------------------------------------------------------------
keep=$(sbatch_id -q keep --gres=gpu:1 keep.sh) || exit 1
wait_start "$keep"
u1=$(sbatch_id -q urgent --gres=gpu:1 --wrap=true) || exit 1
wait_for "the urgent job to be planned" 10 is "$u1" 'j["reason"] == "Resources"'
expect "$keep" 'j["state"] == "RUNNING" and not any("preempted" in e["reason"] for e in h)' \
  "a job of preempt_mode off left alone"
"$bin/gsched" scancel "$u1" > /dev/null 2>&1 || fail "scancel $u1"
gate keep
wait_end "$keep" || fail "the keep job failed"

# --- cancel: the victim ends CANCELLED, nothing requeued ------------------------------------------
victim=$(sbatch_id -q scratch --gres=gpu:1 --wrap="sleep 600") || exit 1
wait_start "$victim"
# --test-only weighs the preemption, and changes nothing
out=$("$bin/gsched" sbatch --test-only -q urgent --gres=gpu:1 --wrap=true 2>&1 > /dev/null) ||
  fail "sbatch --test-only: $out"
grep -q "sbatch: Job would start now, at .* by preempting jobs $victim on nodes node1" <<< "$out" ||
  fail "--test-only's estimate: $out"
expect "$victim" 'j["state"] == "RUNNING"' "the victim untouched by the estimate"
urgent=$(sbatch_id -q urgent --gres=gpu:1 urgent.sh) || exit 1
wait_start "$urgent"
wait_end "$victim" 5
expect "$victim" 'j["state"] == "CANCELLED" and j["restart_count"] == 0 and
  "PENDING" not in [e["state"] for e in h[1:]] and
  any("preempted by job '"$urgent"' (QOS urgent)" in e["reason"] for e in h)' \
  "cancelled by the preemption, not requeued"
expect "$urgent" 'j["state"] == "RUNNING"' "the urgent job to run"
grep -q "job=$victim by=$urgent .*mode=cancel job preempted" "$state/gschedd.log" ||
  fail "no log line for the preemption"
metrics=$(python3 -c 'import sys, urllib.request
print(urllib.request.urlopen("http://" + open(sys.argv[1]).read().strip() + "/metrics", timeout=5).read().decode())' \
  "$state/http.addr") || fail "no /metrics"
grep -q '^gsched_preemptions_total 1$' <<< "$metrics" || fail "metrics: $(grep preempt <<< "$metrics")"
gate urgent
wait_end "$urgent" || fail "the urgent job failed"
expect "$victim" 'j["state"] == "CANCELLED"' "still cancelled: not queued again"

# --- licenses: a job short of a seat preempts the lower-tier job holding it ---------------------
holder=$(sbatch_id -q scratch -L matlab --wrap="sleep 600") || exit 1
wait_start "$holder"
seat=$(sbatch_id -q urgent -L matlab --wrap=true) || exit 1
wait_end "$seat" 20 || fail "the urgent job needing the seat failed: $(jq "$seat" 'j')"
expect "$holder" 'j["state"] == "CANCELLED" and
  any("preempted by job '"$seat"' (QOS urgent)" in e["reason"] for e in h)' \
  "the seat's holder preempted"
check_logs
stop_cluster
echo "$name: passed"
