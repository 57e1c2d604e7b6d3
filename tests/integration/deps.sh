#!/usr/bin/env bash
# deps.sh BIN_DIR SRC_DIR: Slurm's dependencies on array tasks on a `gsched up` cluster of
# one worker. An array A of three tasks, submitted held, whose task 1 fails: a job on A's
# task 2 (afterok:A_2) shows afterok:A_2(unfulfilled) in squeue's %E and scontrol's
# Dependency= while A waits, and runs once task 2 completed; one on task 1 waits with
# DependencyNeverSatisfied and afterok:A_1(failed); an array with aftercorr:A runs the
# tasks whose partner in A completed, and its task without a partner judges all of A;
# --kill-on-invalid-dep=yes cancels; scheduler.kill_invalid_depend = true cancels the
# others too, but not one that says no. A job, array or task that does not exist is
# refused at submit and by scontrol update, which moves a job to a task that completed.
name="integration_deps"
. "$(dirname "$0")/lib.sh"

start_cluster --workers 1 --gpus-per-node 0 --heartbeat 1s --kill-grace 1s

# squeue's %E of job $1 (one line: not an array element folded with others).
pending_deps() { "$bin/gsched" squeue -h -r -j "$1" -o "%E"; }

a=$(sbatch_id -H --array=0-2 -J tasks --wrap='[ "$SLURM_ARRAY_TASK_ID" != 1 ]')
b=$(sbatch_id -d "afterok:${a}_2" -J on2 --wrap=true)
c=$(sbatch_id -d "afterok:${a}_1" -J on1 --wrap=true)
d=$(sbatch_id --array=0-3 -d "aftercorr:$a" -J corr --wrap=true)
k=$(sbatch_id --kill-on-invalid-dep=yes -d "afterok:${a}_1" -J kill --wrap=true)

# --- while A waits: what is left, as Slurm shows it ---------------------------------------------
wait_for "job $b to wait on A's task 2" 10 is "$b" 'j["reason"] == "Dependency"'
[ "$(pending_deps "$b")" = "afterok:${a}_2(unfulfilled)" ] || fail "%E of $b: $(pending_deps "$b")"
out=$("$bin/gsched" scontrol show job "$b") || fail "scontrol show job $b"
grep -q "Dependency=afterok:${a}_2(unfulfilled)" <<< "$out" || fail "scontrol show job: $out"
out=$("$bin/gsched" squeue -h -j "$d" -r -o "%i %E") || fail "squeue of $d"
grep -qx "${d}_0 aftercorr:${a}(unfulfilled)" <<< "$out" || fail "squeue of the aftercorr array: $out"

# --- refusals: nothing queued -------------------------------------------------------------------
before=$(queue_count)
out=$("$bin/gsched" sbatch -d "afterok:${a}_9" --wrap=true 2>&1) && fail "task 9 accepted: $out"
grep -q "job array $a has no task 9" <<< "$out" || fail "refusal of task 9: $out"
out=$("$bin/gsched" sbatch -d "afterok:${b}_0" --wrap=true 2>&1) && fail "${b}_0 accepted: $out"
grep -q "job $b is not a job array" <<< "$out" || fail "refusal of a job's task: $out"
out=$("$bin/gsched" sbatch -d "aftercorr:${a}_1" --wrap=true 2>&1) && fail "aftercorr:A_1 accepted: $out"
grep -q -- "-d aftercorr:${a}_1: aftercorr pairs each task" <<< "$out" || fail "refusal of aftercorr:A_1: $out"
out=$("$bin/gsched" sbatch --kill-on-invalid-dep=maybe --wrap=true 2>&1) && fail "maybe accepted: $out"
grep -q -- "--kill-on-invalid-dep" <<< "$out" || fail "refusal of maybe: $out"
job_file bad.toml 'depends_on = ["afterok:'"$a"'_7"]
[run]
script = "true"'
out=$("$bin/gsched" submit "$work/bad.toml" 2>&1) && fail "a job file on task 7 was accepted: $out"
grep -q "bad.toml:1:14: depends_on: job array $a has no task 7" <<< "$out" || fail "job file refusal: $out"
[ "$(queue_count)" = "$before" ] || fail "a refused job was queued"

# --- A runs: task 1 fails -----------------------------------------------------------------------
"$bin/gsched" scontrol release "$a" || fail "release of array $a"
for t in 0 1 2; do wait_end "$((a + t))" || true; done
expect "$((a + 1))" 'j["state"] == "FAILED"'
wait_end "$b" || fail "afterok:${a}_2 did not run: $(jq "$b" 'j')"
wait_for "job $c to be never satisfied" 10 is "$c" 'j["reason"] == "DependencyNeverSatisfied"'
[ "$(pending_deps "$c")" = "afterok:${a}_1(failed)" ] || fail "%E of $c: $(pending_deps "$c")"
wait_for "job $k to be cancelled" 10 is "$k" 'j["state"] == "CANCELLED"'
expect "$k" 'j["reason"] == "DependencyNeverSatisfied"'
wait_end "$d" || fail "aftercorr task 0 did not run"
wait_end "$((d + 2))" || fail "aftercorr task 2 did not run"
wait_for "aftercorr task 1 to be never satisfied" 10 \
  is "$((d + 1))" 'j["reason"] == "DependencyNeverSatisfied"'
expect "$((d + 3))" 'j["reason"] == "DependencyNeverSatisfied"' "task 3 has no partner: all of A"

# --- scontrol update: a task that completed; refusals ---------------------------------------------
out=$("$bin/gsched" scontrol update JobId="$c" Dependency="afterok:${a}_5" 2>&1) && fail "update to task 5: $out"
grep -q "has no task 5" <<< "$out" || fail "update refusal: $out"
[ "$(pending_deps "$c")" = "afterok:${a}_1(failed)" ] || fail "a refused update changed $c"
"$bin/gsched" scontrol update JobId="$c" Dependency="afterany:${a}_1" || fail "update of $c"
wait_end "$c" || fail "afterany:${a}_1 did not run"

# --- the cluster's kill_invalid_depend, and a job that says no ------------------------------------
sed -i "s|^\[scheduler\]\$|[scheduler]\nkill_invalid_depend = true|" "$state/gsched.toml"
grep -q '^kill_invalid_depend = true' "$state/gsched.toml" || fail "no [scheduler] table to edit"
restart_sched 1
out=$("$bin/gsched" scontrol show config) || fail "scontrol show config: $out"
grep -qx "SchedulerParameters     = bf_licenses,kill_invalid_depend,max_switch_wait=300" <<< "$out" ||
  fail "show config after kill_invalid_depend: $(grep Scheduler <<< "$out")"
wait_for "the aftercorr tasks to be cancelled" 10 \
  is "$((d + 1))" 'j["state"] == "CANCELLED"'
wait_for "the aftercorr task 3 to be cancelled" 10 is "$((d + 3))" 'j["state"] == "CANCELLED"'
n=$(sbatch_id --kill-on-invalid-dep=no -d "afterok:${a}_1" -J stays --wrap=true)
y=$(sbatch_id -d "afterok:${a}_1" -J goes --wrap=true)
wait_for "job $y to be cancelled" 10 is "$y" 'j["state"] == "CANCELLED"'
expect "$n" 'j["state"] == "PENDING" and j["reason"] == "DependencyNeverSatisfied"'
out=$("$bin/gsched" sacct -n -X -j "$y" -o State%20) || fail "sacct of $y"
grep -q "CANCELLED" <<< "$out" || fail "sacct of $y: $out"
"$bin/gsched" scancel "$n" || fail "scancel $n"
check_logs
stop_cluster
