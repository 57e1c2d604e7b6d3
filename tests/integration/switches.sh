#!/usr/bin/env bash
# switches.sh BIN_DIR SRC_DIR: sbatch --switches=N[@TIME] on a `gsched up` cluster of four
# workers under two [[switch]]es, leaf1 (node1, node2) and leaf2 (node3, node4). With node1
# and node3 held, a two-node job asking for one switch waits (Resources) where a job without
# it would take node2 and node4, scontrol show job says Switches=1@00:01:00, and it starts
# under leaf1 once node1 frees. Asked to wait 5 s only, such a job takes node2 and node4
# when its wait ends, with no other event to wake the scheduler. A job file's
# placement.switches is the same.
name="integration_switches"
. "$(dirname "$0")/lib.sh"

start_cluster --workers 4 --gpus-per-node 0 --heartbeat 1s --kill-grace 1s
cat >> "$state/gsched.toml" << 'EOF2'
[[switch]]
name = "leaf1"
nodes = "node[1-2]"
[[switch]]
name = "leaf2"
nodes = "node[3-4]"
EOF2
restart_sched 4
wait_for "four nodes up" 15 eval '[ "$("$bin/gsched" sinfo -h -N -t idle -o %N | wc -l)" = 4 ]'
slurm_names sbatch scontrol

hold() { # hold GATE NODE: a job holding NODE whole until gate GATE opens; its id
  printf '#!/bin/sh\n%s\n' "$(gate_wait "$1")" > "$work/hold-$1.sh"
  held=$(sbatch_id --exclusive -w "$2" -t 10 "$work/hold-$1.sh") || exit 1
  wait_start "$held"
  echo "$held"
}
nodes_of() { jq "$1" '",".join(a["node_name"] for a in j["allocation"])'; }

h1=$(hold first node1)
h3=$(hold third node3)
one=$(sbatch_id -N2 --switches=1@1:00 -t 5 --wrap true) || exit 1
wait_for "the one-switch job to wait" 10 is "$one" \
  'j["state"] == "PENDING" and j["reason"] == "Resources"'
out=$(scontrol show job "$one") || fail "scontrol show job: $out"
grep -q "^   Switches=1@00:01:00$" <<< "$out" || fail "scontrol show job: $out"
any=$(sbatch_id -N2 -t 5 --wrap true) || exit 1
wait_end "$any" || fail "the job without --switches did not run on node2 and node4"
[ "$(jq "$any" 'j["state"]')" = COMPLETED ] || fail "the job without --switches: $(jq "$any" 'j')"
expect "$one" 'j["state"] == "PENDING"' "still waiting for one switch"
gate first
wait_end "$h1" || fail "node1's holder"
wait_end "$one" || fail "the one-switch job: $(jq "$one" 'j')"
[ "$(nodes_of "$one")" = "node1,node2" ] || fail "the one-switch job ran on $(nodes_of "$one")"

# --- a short wait ends with nothing else happening ---------------------------------------------
h1=$(hold again node1)
short=$(sbatch_id -N2 --switches=1@0:05 -t 5 --wrap true) || exit 1
expect "$short" 'j["state"] == "PENDING"' "waiting for one switch for 5 s"
wait_end "$short" || fail "the 5-second job: $(jq "$short" 'j')"
[ "$(nodes_of "$short")" = "node2,node4" ] || fail "the 5-second job ran on $(nodes_of "$short")"
waited=$(jq "$short" 'j["start_time_ms"] - j["submit_time_ms"]')
[ "$waited" -ge 4500 ] || fail "the 5-second job started after $waited ms"

# --- a job file's [placement] switches --------------------------------------------------------
job_file sw.toml '[resources]
nodes = 2
time_limit = "5m"
[placement]
switches = 1
switch_wait = "1m"
[run]
command = ["true"]
stdout = "/dev/null"'
f=$(submit sw.toml) || exit 1
wait_for "the job file's one-switch job to wait" 10 is "$f" \
  'j["state"] == "PENDING" and j["spec"]["switches"] == 1 and j["spec"]["switch_wait_s"] == 60'
gate third
wait_end "$h3" || fail "node3's holder"
wait_end "$f" || fail "the job file's job: $(jq "$f" 'j')"
[ "$(nodes_of "$f")" = "node3,node4" ] || fail "the job file's job ran on $(nodes_of "$f")"
gate again
wait_end "$h1" || fail "node1's second holder"
check_logs
stop_cluster
echo "$name: passed"
