#!/usr/bin/env bash
# drain.sh BIN_DIR SRC_DIR: operators taking a node out of service and back (issue 18), on
# a `gsched up` cluster of two workers. `scontrol update NodeName=node1 State=DRAIN
# Reason=...` while a job runs there: the node is DRAINING (sinfo drng, the reason shown),
# the job runs on, a new job for node1 waits while one that may go anywhere starts on
# node2; once the job ends the node is DRAINED. The drain outlives a gschedd restart. A
# drain without a reason, a state typo, an unknown node and a non-root caller are refused,
# changing nothing. State=RESUME lets the waiting job start on node1.
name="integration_drain"
. "$(dirname "$0")/lib.sh"

# --share-cpus: each node offers both cores, so a drained node1 has room left for a job.
start_cluster --workers 2 --gpus-per-node 0 --share-cpus

node_field() { # node_field NODE FIELD: the field of `gsched nodes --json NODE`
  "$bin/gsched" nodes --json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0][sys.argv[1]])' "$2"
}
node_is() { [ "$(node_field "$1" state)" = "$2" ]; }
sinfo_state() { "$bin/gsched" sinfo -h -N -n "$1" -o "%t|%E"; }

wait_for "both nodes up" 15 eval 'node_is node1 up && node_is node2 up'

{ echo "#!/bin/sh"; gate_wait busy; } > "$work/busy.sh"
job_file any.toml '[run]
command = ["true"]'
# sbatch -w NODE: a job for that node alone (job files name no nodes).
sbatch_on() { # sbatch_on NODE SCRIPT-OR---wrap=CMD: prints the job id
  local out
  out=$("$bin/gsched" sbatch --parsable -w "$1" -o /dev/null "$2" 2>&1) || fail "sbatch -w $1 $2: $out"
  echo "${out%%;*}"
}
busy=$(sbatch_on node1 busy.sh) || exit 1
wait_start "$busy"

# --- refused, changing nothing -------------------------------------------------------------
out=$("$bin/gsched" scontrol update NodeName=node1 State=DRAIN 2>&1) && fail "a drain without a reason: $out"
case $out in *"specify a reason"*) ;; *) fail "drain without a reason: $out" ;; esac
out=$("$bin/gsched" scontrol update NodeName=node1 State=DRIAN Reason=x 2>&1) && fail "State=DRIAN: $out"
case $out in *"Invalid node state specified: DRIAN"*) ;; *) fail "State=DRIAN: $out" ;; esac
out=$("$bin/gsched" scontrol update NodeName=node1 Stat=DRAIN Reason=x 2>&1) && fail "Stat=: $out"
case $out in *"not supported: Stat=DRAIN"*) ;; *) fail "Stat=: $out" ;; esac
out=$("$bin/gsched" scontrol update NodeName=node9 State=DRAIN Reason=x 2>&1) && fail "node9: $out"
case $out in *"Invalid node name specified: node9"*) ;; *) fail "node9: $out" ;; esac
out=$("$bin/gsched" scontrol update NodeName=node2 State=RESUME 2>&1) && fail "resume of an undrained node: $out"
case $out in *"node node2 is not drained"*) ;; *) fail "resume node2: $out" ;; esac
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
  chmod 711 "$tmp" "$state" # the socket is 0666: let others through the directories
  out=$(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups \
    "$bin/gsched" scontrol update NodeName=node1 State=DRAIN Reason=mine 2>&1) && fail "nobody drained node1"
  case $out in *"only root may drain"*) ;; *) fail "drain by nobody: $out" ;; esac
fi
node_is node1 up || fail "a refused update changed node1: $(node_field node1 state)"

# --- drain with a job on it: DRAINING, the job runs on ----------------------------------------
"$bin/gsched" scontrol update NodeName=node1 State=DRAIN Reason="disk replacement" ||
  fail "drain refused"
node_is node1 draining || fail "node1 is $(node_field node1 state), not draining"
[ "$(node_field node1 reason)" = "disk replacement" ] || fail "reason: $(node_field node1 reason)"
[ "$(sinfo_state node1)" = "drng|disk replacement" ] || fail "sinfo: $(sinfo_state node1)"
grep -q 'node=node1 reason="disk replacement" node drained' "$state/gschedd.log" ||
  fail "no log line for the drain"
on1=$(sbatch_on node1 --wrap=true) || exit 1
any=$(submit any.toml)
wait_end "$any" || fail "the job that may go anywhere failed"
expect "$any" 'j["allocation"][0]["node_name"] == "node2"' "to run on node2"
expect "$on1" 'j["state"] == "PENDING" and j["reason"] == "Resources"' "node1's job to wait"
expect "$busy" 'j["state"] == "RUNNING"' "the job on node1 to run on"

# --- its job ends: DRAINED, and so after a gschedd restart ------------------------------------
gate busy
wait_end "$busy" || fail "the job on the draining node failed"
wait_for "node1 drained" 10 node_is node1 drained
expect "$on1" 'j["state"] == "PENDING"' "node1's job to wait on the drained node"
[ "$(sinfo_state node1)" = "drain|disk replacement" ] || fail "sinfo: $(sinfo_state node1)"
restart_sched 2
wait_for "node1 back, drained" 15 node_is node1 drained
[ "$(node_field node1 reason)" = "disk replacement" ] || fail "the reason after a restart: $(node_field node1 reason)"
expect "$on1" 'j["state"] == "PENDING"' "node1's job to wait after the restart"

# --- resume: node1's job starts there ----------------------------------------------------------
"$bin/gsched" scontrol update NodeName=node[1] State=RESUME || fail "resume refused"
node_is node1 up || fail "node1 is $(node_field node1 state) after resume"
wait_end "$on1" || fail "node1's job failed after the resume"
expect "$on1" 'j["allocation"][0]["node_name"] == "node1"' "to run on node1"
check_logs
stop_cluster
echo "$name: passed"
