#!/usr/bin/env bash
# partitions.sh BIN_DIR SRC_DIR: partitions that list their nodes, on a `gsched up` cluster
# of three workers (partition a = node1,node2, the default; b = node3). gschedd keeps each
# partition's node mask and lends it to the planning pass, which must copy it before a
# reservation narrows it for one job: a job of b runs on node3 and another waits for it
# while a's nodes idle; --exclude node1 puts a job of a on node2; a job of a kept off a
# reservation of node1 waits, and a job in that reservation still gets node1 (a mask
# narrowed in place for the first would leave the second nothing, for good); once the
# reservation is gone the waiting job runs on node1, never on b's node.
name="integration_partitions"
. "$(dirname "$0")/lib.sh"

start_cluster --workers 3 --gpus-per-node 0 --share-cpus --partition 'a=node[1-2]:default' \
  --partition b=node3

node_up() { "$bin/gsched" nodes --json "$1" | python3 -c 'import json,sys; sys.exit(json.load(sys.stdin)[0]["state"] != "up")'; }
wait_for "three nodes up" 15 eval 'node_up node1 && node_up node2 && node_up node3'
on() { is "$1" "j[\"state\"] == \"RUNNING\" and j[\"allocation\"][0][\"node_name\"] == \"$2\""; }
waits() { is "$1" 'j["state"] == "PENDING" and j["reason"] != ""'; }

b1=$(sbatch_id -p b --exclusive --wrap "$(gate_wait b1)")
wait_for "b's job on node3" 15 on "$b1" node3
b2=$(sbatch_id -p b --exclusive --wrap 'true')
wait_for "b's second job to wait for node3" 15 waits "$b2"
expect "$b2" 'j["reason"] == "Resources"' "b's second job to wait, not to run on a's idle nodes"

a1=$(sbatch_id --exclusive --exclude node1 --wrap "$(gate_wait a1)")
wait_for "a's job with --exclude node1 on node2" 15 on "$a1" node2

out=$("$bin/gsched" scontrol create reservation ReservationName=r StartTime=now Duration=10 \
  Nodes=node1 Users=root 2>&1) || fail "create reservation: $out"
a2=$(sbatch_id --exclusive --wrap 'true')
wait_for "a's job outside the reservation to wait" 15 waits "$a2"
a3=$(sbatch_id --exclusive --reservation r --wrap "$(gate_wait a3)")
wait_for "a's job in the reservation on node1" 15 on "$a3" node1
expect "$a2" 'j["state"] == "PENDING"' "a's job outside the reservation to keep waiting"

gate a3
wait_for "the reservation's job to end" 15 is "$a3" 'j["state"] == "COMPLETED"'
out=$("$bin/gsched" scontrol delete ReservationName=r 2>&1) || fail "delete reservation: $out"
wait_for "a's waiting job to run" 15 is "$a2" 'j["state"] == "COMPLETED"'
expect "$a2" 'j["allocation"][0]["node_name"] == "node1"' "a's job on node1 (node2 busy, node3 b's)"
expect "$b2" 'j["state"] == "PENDING"' "b's second job still waiting for node3"

gate b1
gate a1
wait_for "b's second job to run on node3" 15 is "$b2" 'j["state"] == "COMPLETED"'
expect "$b2" 'j["allocation"][0]["node_name"] == "node3"' "b's second job on node3"
stop_cluster
check_logs
echo "$name: ok"
