#!/usr/bin/env bash
# licenses.sh BIN_DIR SRC_DIR: cluster-wide licenses ([[license]], sbatch -L) on a `gsched up`
# cluster of one worker whose gschedd is restarted with two: matlab (2) and fluent (1). A
# job naming a license the cluster lacks, or more than it has, is refused and nothing is
# queued. A job holding one matlab seat for 10 minutes keeps a job needing both pending,
# reason Licenses, expected to start when the first one's limit ends; a fluent job goes by
# it, and so does a matlab job limited to 5 minutes, while one limited to 20 waits
# (Priority: it would keep a seat the waiting job needs then); scontrol shows the counts
# held and the job's licenses, squeue's %W too; scontrol update Licenses= refuses what the
# cluster lacks and moves the 20-minute job to fluent, where it runs; when the first job
# ends the waiting one starts. A job file's resources.licenses is the same. Then a reservation
# keeping one matlab seat and no node: more than the cluster has is refused, and so is a
# second one keeping more beside it; a job outside it gets the other seat, the next waits
# (Licenses) while a job in it runs on its seat, and starts when the first outside ends.
name="integration_licenses"
. "$(dirname "$0")/lib.sh"

start_cluster --workers 1 --gpus-per-node 0 --heartbeat 1s --kill-grace 2s

cat >> "$state/gsched.toml" << 'EOF2'
[[license]]
name = "matlab"
count = 2
[[license]]
name = "fluent"
count = 1
EOF2
restart_sched 1
out=$("$bin/gsched" scontrol show config) || fail "scontrol show config: $out"
grep -q "^Configuration data as of " <<< "$out" || fail "show config's first line: $out"
grep -qx "Licenses                = matlab:2,fluent:1" <<< "$out" || fail "show config's Licenses: $out"
grep -qx "SchedulerParameters     = bf_licenses,max_switch_wait=300" <<< "$out" || fail "show config: $out"
grep -qx "scheduler.backfill_depth = 1" <<< "$out" || fail "show config's gsched keys: $out"

# --- refused at submit: nothing is queued ---------------------------------------------------------
before=$(queue_count)
out=$("$bin/gsched" sbatch -L ansys --wrap=true 2>&1) && fail "an unknown license was accepted: $out"
grep -q "no license 'ansys' (this cluster has matlab, fluent)" <<< "$out" || fail "refusal: $out"
out=$("$bin/gsched" sbatch -L matlab:3 --wrap=true 2>&1) && fail "3 of 2 accepted: $out"
grep -q "3 of 'matlab' asked for, the cluster has 2" <<< "$out" || fail "refusal: $out"
out=$("$bin/gsched" sbatch -L 'matlab|fluent' --wrap=true 2>&1) && fail "'|' accepted: $out"
grep -q -- "--licenses" <<< "$out" || fail "the refusal does not name the option: $out"
[ "$(queue_count)" = "$before" ] || fail "a refused job was queued"

# --- held while running; the next waits, another license goes by ----------------------------------
{ echo "#!/bin/sh"; gate_wait first; } > "$work/first.sh"
first=$(sbatch_id -L matlab:1 -t 10 first.sh) || exit 1
wait_start "$first"
started=$(jq "$first" 'j["start_time_ms"]')
second=$(sbatch_id -L matlab:2 --wrap=true) || exit 1
wait_for "the second matlab job to wait for licenses" 10 is "$second" \
  "j['state'] == 'PENDING' and j['reason'] == 'Licenses' and
   abs(j['expected_start_ms'] - $started - 600000) <= 1500"
other=$(sbatch_id --licenses=fluent --wrap=true) || exit 1
wait_end "$other" || fail "the fluent job failed"
short=$(sbatch_id -L matlab -t 5 --wrap=true) || exit 1
wait_end "$short" || fail "the 5-minute matlab job did not use the free seat meanwhile"
long=$(sbatch_id -L matlab -t 20 --wrap=true) || exit 1
wait_for "the 20-minute matlab job to wait behind the second" 10 is "$long" \
  'j["state"] == "PENDING" and j["reason"] == "Priority"'
expect "$second" 'j["state"] == "PENDING"' "still waiting for matlab"
lic=$("$bin/gsched" scontrol show licenses 2>&1) || fail "scontrol show licenses: $lic"
grep -q "LicenseName=matlab" <<< "$lic" && grep -q "Total=2 Used=1 Free=1 " <<< "$lic" &&
  grep -q "Total=1 Used=0 Free=1 " <<< "$lic" || fail "scontrol show licenses: $lic"
lic=$("$bin/gsched" scontrol -o show lic fluent 2>&1) || fail "scontrol show lic fluent: $lic"
[ "$lic" = "LicenseName=fluent Total=1 Used=0 Free=1 Reserved=0 Remote=no" ] ||
  fail "scontrol -o show lic fluent: $lic"
show=$("$bin/gsched" scontrol show job "$second" 2>&1) || fail "scontrol show job: $show"
grep -q "Licenses=matlab:2" <<< "$show" || fail "scontrol show job: $show"
out=$("$bin/gsched" squeue -h -j "$second,$long,$first" -o '%i %W' | sort) || fail "squeue %W"
[ "$out" = "$(printf '%s matlab:1\n%s matlab:2\n%s matlab:1' "$first" "$second" "$long" | sort)" ] ||
  fail "squeue %W: $out"
out=$("$bin/gsched" squeue -h -j "$other" -t all -O JobID,Licenses) || fail "squeue -O Licenses"
[ "$(echo $out)" = "$other fluent:1" ] || fail "squeue -O Licenses: $out"

# --- scontrol update Licenses=: refusals change nothing; the 20-minute job moves to fluent ----
out=$("$bin/gsched" scontrol update JobId="$long" Licenses=ansys 2>&1) &&
  fail "update to an unknown license accepted: $out"
grep -q "Licenses: no license 'ansys' (this cluster has matlab, fluent)" <<< "$out" ||
  fail "update refusal: $out"
out=$("$bin/gsched" scontrol update JobId="$long" Licenses=matlab:x 2>&1) &&
  fail "a bad count accepted: $out"
grep -q "Invalid Licenses value: matlab:x" <<< "$out" || fail "update refusal: $out"
out=$("$bin/gsched" scontrol update JobId="$first" Licenses=fluent 2>&1) &&
  fail "a running job's licenses changed: $out"
grep -q "only its TimeLimit, Name, Comment and WCKey can be changed" <<< "$out" || fail "running job's refusal: $out"
expect "$long" 'j["state"] == "PENDING" and j["licenses"] == {"matlab": 1}' "unchanged by refusals"
"$bin/gsched" scontrol update JobId="$long" Licenses=fluent || fail "scontrol update Licenses="
wait_end "$long" || fail "the job moved to fluent failed"
expect "$long" 'j["licenses"] == {"fluent": 1}' "its licenses after the update"

# --- the first ends: the waiting job starts -------------------------------------------------------
gate first
wait_end "$first" || fail "the first job failed"
wait_end "$second" || fail "the second matlab job failed"

# --- a job file's resources.licenses ---------------------------------------------------------------
job_file lic.toml '[resources]
licenses = { matlab = 2, fluent = 1 }
[run]
command = ["true"]'
id=$(submit "$work/lic.toml") || exit 1
wait_end "$id" || fail "the job file's job failed"
expect "$id" 'j["state"] == "COMPLETED" and j["licenses"] == {"matlab": 2, "fluent": 1}' \
  "the job file's licenses, and the job done"

# --- a reservation of licenses: one matlab seat kept for root's reservation "lab" ----------------
out=$("$bin/gsched" scontrol create reservation ReservationName=lab StartTime=now Duration=60 \
  Users=root Licenses=matlab:3 2>&1) && fail "3 of 2 kept: $out"
grep -q "Licenses: matlab: the reservations at that time would keep 3 with this one; the cluster has 2" \
  <<< "$out" || fail "refusal of 3 of 2: $out"
"$bin/gsched" scontrol create reservation ReservationName=lab StartTime=now Duration=60 \
  Users=root Licenses=matlab:1 > /dev/null || fail "create reservation Licenses=matlab:1"
out=$("$bin/gsched" scontrol create reservation ReservationName=more StartTime=now+10 \
  Duration=60 Users=root Licenses=matlab:2 2>&1) && fail "2 more kept beside lab's: $out"
grep -q "would keep 3 with this one" <<< "$out" || fail "refusal beside lab: $out"
restart_sched 1 # stored with its licenses
show=$("$bin/gsched" scontrol -o show reservation lab) || fail "show reservation lab"
grep -q " Nodes=(null) NodeCnt=0 Licenses=matlab:1 Users=root " <<< "$show" ||
  fail "show reservation lab after a restart: $show"
lic=$("$bin/gsched" scontrol -o show lic matlab 2>&1) || fail "scontrol show lic matlab: $lic"
[ "$lic" = "LicenseName=matlab Total=2 Used=0 Free=1 Reserved=1 Remote=no" ] ||
  fail "scontrol show lic matlab with lab: $lic"
{ echo "#!/bin/sh"; gate_wait outside; } > "$work/outside.sh"
out1=$(sbatch_id -L matlab -t 5 outside.sh) || exit 1
wait_start "$out1"
out2=$(sbatch_id -L matlab -t 5 --wrap=true) || exit 1
wait_for "a second job outside lab to wait for the seat lab keeps" 10 is "$out2" \
  'j["state"] == "PENDING" and j["reason"] == "Licenses"'
inside=$(sbatch_id -L matlab -t 5 --reservation=lab --wrap=true) || exit 1
wait_end "$inside" || fail "the job in lab did not get its seat: $(jq "$inside" 'j')"
expect "$out2" 'j["state"] == "PENDING"' "still waiting outside lab"
gate outside
wait_end "$out1" || fail "the first job outside lab"
wait_end "$out2" || fail "the second job outside lab, once the first ended"
"$bin/gsched" scontrol delete ReservationName=lab || fail "delete lab"
check_logs
stop_cluster
echo "$name: passed"
