#!/usr/bin/env bash
# preempt.sh BIN_DIR SRC_DIR: QOS preemption end to end (issue 18), on a `gsched up`
# cluster of one worker with 2 GPUs whose gschedd is restarted with two QOS: "low" (tier
# 0) and "high" (tier 1). A gsched-train run in QOS low holds both GPUs; after its first
# checkpoint a job in QOS high arrives: gschedd preempts the run (its history says by
# which job), gsched-train checkpoints on the SIGTERM and exits 75, the run is requeued, the
# high job runs and completes, and the run starts again, resumes from its checkpoint and
# ends at the same final losses as an uninterrupted run. A job of the same tier is not
# preempted; a QOS limit keeps a job waiting with Slurm's reason; an unknown QOS and a time
# limit over the QOS's max_wall are refused at submit.
name="integration_preempt"
. "$(dirname "$0")/lib.sh"
export PATH="$bin:$PATH" # the job's environment is submit's: gsched-train is found there

start_cluster --workers 1 --gpus-per-node 2 --heartbeat 1s --kill-grace 10s

cat >> "$state/gsched.toml" << 'EOF'
[[qos]]
name = "low"
max_jobs_per_user = 1
[[qos]]
name = "high"
tier = 1
max_wall = "10m"
EOF
restart_sched 1

train_data "$tmp/data"
train_cfg "$work/cfg.toml" "$tmp/data" 300
sbatch() { # sbatch OPTIONS...: prints the job id
  local out
  out=$("$bin/gsched" sbatch --parsable "$@" 2>&1) || fail "sbatch $*: $out"
  echo "${out%%;*}"
}
final_loss() {
  python3 -c 'import json, sys
print([json.loads(l)["loss"] for l in open(sys.argv[1]) if json.loads(l)["kind"] == "train"][-1])' "$1"
}

# --- refused at submit --------------------------------------------------------------------------
out=$("$bin/gsched" sbatch -q nosuch --wrap=true 2>&1) && fail "qos nosuch accepted: $out"
case $out in *"no QOS 'nosuch'"*) ;; *) fail "qos nosuch: $out" ;; esac
out=$("$bin/gsched" sbatch -q high -t 20 --wrap=true 2>&1) && fail "20 min in high accepted: $out"
case $out in *"QOS 'high' allows jobs at most 10:00"*) ;; *) fail "max_wall: $out" ;; esac

# --- the uninterrupted run ----------------------------------------------------------------------
ref=$(sbatch -q low --gres=gpu:2 -o "$work/ref.out" --wrap="gsched-train train cfg.toml --out_dir=ref") || exit 1
wait_end "$ref" 240 || fail "the reference run failed: $(tail "$work/ref.out")"
grep -q "^done: 300 steps" "$work/ref.out" || fail "the reference run: $(tail "$work/ref.out")"

# --- preempted after its first checkpoint ---------------------------------------------------------
run=$(sbatch -q low --gres=gpu:2 -o "$work/run.out" \
  --wrap="exec gsched-train train cfg.toml --out_dir=run") || exit 1
wait_start "$run"
wait_for "the first checkpoint" 120 test -e "$work/run/checkpoints/ckpt-00000020.gstf"
# A second low job waits behind the QOS's one job per user, not for a victim.
other=$(sbatch -q low --hold --wrap=true) || exit 1
"$bin/gsched" scontrol release "$other" > /dev/null || fail "release $other"
wait_for "the QOS limit" 10 is "$other" 'j["reason"] == "QOSMaxJobsPerUserLimit"'
high=$(sbatch -q high --gres=gpu:2 -o /dev/null --wrap="echo high ran") || exit 1
wait_end "$high" 120 || fail "the high job failed: $(jq "$high" 'j')"
expect "$run" 'any("preempted by job '"$high"' (QOS high)" in e["reason"] for e in h)' \
  "the run preempted by $high"
grep -q "job=$run by=$high .*job preempted" "$state/gschedd.log" || fail "no log line for the preemption"
metrics=$(python3 -c 'import sys, urllib.request
print(urllib.request.urlopen("http://" + open(sys.argv[1]).read().strip() + "/metrics", timeout=5).read().decode())' \
  "$state/http.addr") || fail "no /metrics"
grep -q '^gsched_preemptions_total 1$' <<< "$metrics" || fail "metrics: $(grep preempt <<< "$metrics")"
wait_end "$run" 240 || fail "the resumed run failed: $(jq "$run" '[j, h]'); $(tail "$work/run.out")"
expect "$run" 'j["state"] == "COMPLETED" and j["restart_count"] == 1 and
  [e["state"] for e in h][-3:] == ["PENDING", "RUNNING", "COMPLETED"]' "requeued, then completed"
grep -q "job=$run rank=0 node=node1 exit=75 " "$state/gschedd.log" ||
  fail "gsched-train did not exit 75 on the preemption: $(grep "job=$run " "$state/gschedd.log")"
expect "$run" "[e['changed_at_ms'] for e in h if e['state'] == 'RUNNING'][-1] >= $(jq "$high" "j['end_time_ms']")" \
  "the run to start again after the high job"
resumed=$(sed -n 's/^resuming from .* at step \([0-9]*\)$/\1/p' "$work/run.out" | tail -1)
[ -n "$resumed" ] && [ "$resumed" -ge 20 ] && [ "$resumed" -lt 300 ] ||
  fail "the run did not resume from a checkpoint: $(head -30 "$work/run.out")"
grep -q "^done: 300 steps" "$work/run.out" || fail "the resumed run: $(tail "$work/run.out")"
a=$(final_loss "$work/ref/metrics.jsonl")
b=$(final_loss "$work/run/metrics.jsonl")
python3 -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(abs(a - b) > 1e-6 * abs(a))' "$a" "$b" ||
  fail "final loss $b after the preemption, $a uninterrupted"

# --- the same tier is not preempted ---------------------------------------------------------------
"$bin/gsched" scancel "$other" > /dev/null 2>&1
{ echo "#!/bin/sh"; gate_wait hold; } > "$work/hold.sh"
h1=$(sbatch -q high --gres=gpu:2 -o /dev/null hold.sh) || exit 1
wait_start "$h1"
h2=$(sbatch -q high --gres=gpu:2 -o /dev/null --wrap=true) || exit 1
wait_for "h2 to wait" 10 is "$h2" 'j["reason"] == "Resources"'
expect "$h1" 'j["state"] == "RUNNING" and not any("preempted" in e["reason"] for e in h)' \
  "a job of the same tier left alone"
gate hold
wait_end "$h2" 60 || fail "h2 failed"
check_logs
stop_cluster
echo "$name: passed"
