#!/usr/bin/env bash
# resv_gpus.sh BIN_DIR SRC_DIR: an advance reservation of some GPUs of a node (issue 18,
# `TRES=gres/gpu=N`), on a `gsched up` cluster of one worker with 4 GPUs. The reservation
# keeps 2 of them: a job without it that would run into it may use only the other 2 (a 4-GPU
# one waits, a 2-GPU one runs there), a job in it gets the kept 2, and the two jobs' GPUs do
# not meet. A split that does not divide over the nodes, and more GPUs than a node has, are
# refused, and so is one over a running job on the GPUs it would keep (not over one on the
# others). Two reservations of 2 GPUs share the node, each keeping its own (a fifth GPU is
# refused), and a job in each runs at once on GPUs apart. Three of 2 GPUs fit where no time
# has all three (an early and a late one, a long one across both); a fifth GPU beside the
# early and the long one is refused, and jobs in those two run on GPUs apart. Forty OVERLAP
# GPU reservations of the node are each made within a few seconds (their GPU choices are not
# exponential).
name="integration_resv_gpus"
. "$(dirname "$0")/lib.sh"

start_cluster --workers 1 --gpus-per-node 4 --share-cpus

node_up() { "$bin/gsched" nodes --json node1 | python3 -c 'import json,sys; sys.exit(json.load(sys.stdin)[0]["state"] != "up")'; }
wait_for "node1 up" 15 node_up
{ echo "#!/bin/sh"; gate_wait hold; } > "$work/hold.sh"
scontrol() { "$bin/gsched" scontrol "$@"; }

out=$(scontrol create reservation ReservationName=g StartTime=now Duration=10 Nodes=node1 \
  Users=root TRES=gres/gpu=8 2>&1) && fail "8 GPUs of a 4-GPU node: $out"
case $out in *"node node1 has 4 GPUs, fewer than the 8 per node"*) ;; *) fail "8 GPUs: $out" ;; esac
out=$(scontrol create reservation ReservationName=g StartTime=now Duration=10 Nodes=node1 \
  Users=root TRES=cpu=2 2>&1) && fail "TRES=cpu=2: $out"
scontrol create reservation ReservationName=g StartTime=now Duration=10 Nodes=node1 Users=root \
  TRES=gres/gpu=2 > /dev/null || fail "a reservation of 2 GPUs refused"
case $(scontrol show reservation g) in *"TRES=gres/gpu=2"*"State=ACTIVE"*) ;;
  *) fail "show: $(scontrol show reservation g)" ;; esac

out=$("$bin/gsched" sbatch --reservation=g --gpus-per-node=3 --wrap=true 2>&1) &&
  fail "3 GPUs in a reservation of 2: $out"
case $out in *"keeps 2 GPUs per node; the job asks for 3"*) ;; *) fail "3 GPUs: $out" ;; esac
big=$(sbatch_id --gpus-per-node=4 hold.sh) || exit 1      # unlimited, not in it: waits
other=$(sbatch_id --gpus-per-node=2 hold.sh) || exit 1    # the 2 GPUs it does not keep
mine=$(sbatch_id --reservation=g --gpus-per-node=2 hold.sh) || exit 1 # the 2 it keeps
wait_start "$other"
wait_start "$mine"
expect "$big" 'j["state"] == "PENDING" and j["reason"] == "Resources"' "the 4-GPU job to wait"
gpus() { jq "$1" 'sorted(j["allocation"][0]["gpus"])'; }
[ "$(gpus "$other" | tr -d ' ')" != "$(gpus "$mine" | tr -d ' ')" ] || fail "the same GPUs twice"
python3 -c 'import sys; a, b = eval(sys.argv[1]), eval(sys.argv[2]); sys.exit(1 if len(a) != 2 or len(b) != 2 or set(a) & set(b) else 0)' \
  "$(gpus "$other")" "$(gpus "$mine")" || fail "GPUs: other $(gpus "$other"), mine $(gpus "$mine")"
gate hold
wait_end "$other" || fail "job $other failed"
wait_end "$mine" || fail "job $mine failed"
expect "$big" 'j["state"] == "PENDING"' "the 4-GPU job to wait while the reservation lasts"
scontrol delete ReservationName=g || fail "delete refused"
wait_end "$big" || fail "the 4-GPU job failed once the reservation was gone"

# --- busy GPUs: refused over a job on the GPUs it would keep, not over one on the others -----
{ echo "#!/bin/sh"; gate_wait hold2; } > "$work/hold2.sh"
on_kept=$(sbatch_id --gpus-per-node=2 hold2.sh) || exit 1 # the lowest free pair: the one kept
wait_start "$on_kept"
beside=$(sbatch_id --gpus-per-node=2 hold2.sh) || exit 1
wait_start "$beside"
out=$(scontrol create reservation ReservationName=g2 StartTime=now Duration=10 Nodes=node1 \
  Users=root TRES=gres/gpu=2 2>&1) && fail "a GPU reservation over a job on its GPUs: $out"
case $out in *"node node1 is busy: job $on_kept runs there without a time limit"*) ;;
  *) fail "busy GPUs: $out" ;; esac
"$bin/gsched" cancel "$on_kept" > /dev/null || fail "cancel $on_kept"
wait_for "job $on_kept to end" 15 is "$on_kept" 'j["state"] == "CANCELLED"'
scontrol create reservation ReservationName=g2 StartTime=now Duration=10 Nodes=node1 Users=root \
  TRES=gres/gpu=2 > /dev/null || fail "refused beside a job on the GPUs it does not keep"
scontrol delete ReservationName=g2 || fail "delete g2 refused"
gate hold2
wait_end "$beside" || fail "job $beside failed"

# --- two GPU reservations side by side on node1: each keeps its own 2 -----------------------
scontrol create reservation ReservationName=left StartTime=now Duration=10 Nodes=node1 \
  Users=root TRES=gres/gpu=2 > /dev/null || fail "reservation left refused"
scontrol create reservation ReservationName=right StartTime=now Duration=10 Nodes=node1 \
  Users=root TRES=gres/gpu=2 > /dev/null || fail "a second 2-GPU reservation beside it refused"
out=$(scontrol create reservation ReservationName=more StartTime=now Duration=10 Nodes=node1 \
  Users=root TRES=gres/gpu=1 2>&1) && fail "a fifth GPU kept on a 4-GPU node: $out"
case $out in *"node node1 has 4 GPUs, fewer than reservation"*"(5)"*) ;; *) fail "fifth GPU: $out" ;; esac
# apart GATE R1 R2: a 2-GPU job in each of reservations R1 and R2 runs at once, on GPUs apart.
apart() {
  local a b
  { echo "#!/bin/sh"; gate_wait "$1"; } > "$work/$1.sh"
  a=$(sbatch_id --reservation="$2" --gpus-per-node=2 "$1.sh") || exit 1
  b=$(sbatch_id --reservation="$3" --gpus-per-node=2 "$1.sh") || exit 1
  wait_start "$a"
  wait_start "$b"
  python3 -c 'import sys; a, b = eval(sys.argv[1]), eval(sys.argv[2]); sys.exit(1 if len(a) != 2 or len(b) != 2 or set(a) & set(b) else 0)' \
    "$(gpus "$a")" "$(gpus "$b")" || fail "GPUs: $2 $(gpus "$a"), $3 $(gpus "$b")"
  gate "$1"
  wait_end "$a" && wait_end "$b" || fail "the jobs in $2 and $3 failed"
}
apart hold3 left right
scontrol delete ReservationName=left && scontrol delete ReservationName=right || fail "deletes"

# --- three of 2 GPUs that never all meet: early and late apart, long across both --------------
scontrol create reservation ReservationName=early StartTime=now Duration=10 Nodes=node1 \
  Users=root TRES=gres/gpu=2 > /dev/null || fail "reservation early refused"
scontrol create reservation ReservationName=late StartTime=now+20minutes Duration=10 \
  Nodes=node1 Users=root TRES=gres/gpu=2 > /dev/null || fail "reservation late refused"
scontrol create reservation ReservationName=long StartTime=now Duration=30 Nodes=node1 \
  Users=root TRES=gres/gpu=2 > /dev/null ||
  fail "long refused: it meets early and late, but never both at once (4 GPUs at most)"
out=$(scontrol create reservation ReservationName=more StartTime=now Duration=10 Nodes=node1 \
  Users=root TRES=gres/gpu=1 2>&1) && fail "a fifth GPU beside early and long: $out"
case $out in *"node node1 has 4 GPUs, fewer than reservation more"*"(5)"*) ;;
  *) fail "fifth GPU beside early and long: $out" ;; esac
apart hold4 early long
for r in early late long; do scontrol delete ReservationName=$r || fail "delete $r"; done

# --- many overlapping GPU reservations of one node: each choice stays quick -----------------
for i in $(seq 1 40); do
  timeout 10 "$bin/gsched" scontrol create reservation ReservationName=o$i StartTime=now \
    Duration=10 Nodes=node1 Users=root TRES=gres/gpu=2 Flags=OVERLAP > /dev/null ||
    fail "overlapping GPU reservation o$i refused or slow"
done
[ "$(scontrol show reservation | grep -c 'ReservationName=o')" = 40 ] || fail "not 40 reservations"
for i in $(seq 1 40); do scontrol delete ReservationName=o$i || fail "delete o$i"; done
check_logs
stop_cluster
echo "$name: passed"
