#!/usr/bin/env bash
# relay.sh BIN_DIR SRC_DIR: the gsched CLI inside a job reaches gschedd through its node's
# worker (worker/relay.h), as on a real cluster where gschedd's socket is on another host.
# On a `gsched up` cluster of two workers, gschedd's socket is renamed once the cluster is
# up: the listening socket still works under its new name, which only this script knows, so
# anything inside a job that reaches gschedd does so through a worker's socket. A 2-node
# batch script then runs srun across both nodes, scontrol show job, squeue -j, a dependent
# sbatch and six squeues at once; GSCHED_SOCKET in its tasks names their own worker's socket. As root
# (with setpriv), a CLI of another uid on a worker's socket is refused while that uid has no
# job running on the node, and once it has one is served as that uid: it cannot cancel
# root's job but can submit and cancel its own. Finally a worker killed with
# -9 while srun streams through it ends that srun with an error (once it gave up
# reattaching: nothing answers at the worker's socket), and gschedd runs on.
name="relay"
. "$(dirname "$0")/lib.sh"

slurm_names sbatch srun scontrol squeue scancel

start_cluster --workers 2 --heartbeat 1s --kill-grace 1s

has() {
  grep -Eq -- "$2" "$1" 2>/dev/null || fail "$1 has no line matching '$2'; it holds: $(cat "$1" 2>&1)"
}

# --- each worker listens on its own socket, world-connectable like gschedd's -----------------
for n in node1 node2; do
  [ -S "$state/$n.sock" ] || fail "no CLI socket $state/$n.sock"
  [ "$(stat -c %a "$state/$n.sock")" = 666 ] || fail "$n.sock mode $(stat -c %a "$state/$n.sock")"
  grep -q "path=$state/$n.sock cli socket listening" "$state/$n.log" || fail "$n did not log its socket"
done

# --- from here on only this script knows where gschedd's socket is ---------------------------
mv "$state/gschedd.sock" "$tmp/hidden.sock" || fail "cannot rename gschedd's socket"
export GSCHED_SOCKET=$tmp/hidden.sock
"$bin/gsched" nodes > "$tmp/nodes.txt" 2>&1 || fail "gschedd does not answer on its new name: $(cat "$tmp/nodes.txt")"
[ -e "$state/gschedd.sock" ] && fail "gschedd.sock is still there"

# batch NAME SCRIPT-BODY: submits a 2-node batch script (one task per node), prints its id.
batch() {
  local id
  printf '#!/bin/bash\n#SBATCH -J %s\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=1\n#SBATCH -o %s/%s.out\n%s\n' \
    "$1" "$work" "$1" "$2" > "$work/$1.sh"
  id=$(sbatch --parsable "$work/$1.sh" 2>&1) || fail "sbatch $1 refused: $id"
  [[ $id =~ ^[0-9]+$ ]] || fail "sbatch $1 printed '$id'"
  echo "$id"
}

# --- srun, scontrol, squeue and sbatch inside a job, all through the workers ------------------
id=$(batch inside "echo \"BATCH node=\$SLURMD_NODENAME sock=\$GSCHED_SOCKET\"
srun -l sh -c 'echo \"TASK node=\$SLURMD_NODENAME sock=\$GSCHED_SOCKET\"'
echo \"RC_SRUN=\$?\"
scontrol show job \$SLURM_JOB_ID
echo \"RC_SCONTROL=\$?\"
squeue -j \$SLURM_JOB_ID
echo \"RC_SQUEUE=\$?\"
next=\$(sbatch --parsable --dependency=afterok:\$SLURM_JOB_ID -J after -o $work/after.out --wrap 'echo AFTER ran')
echo \"RC_SBATCH=\$? NEXT=\$next\"
for i in 1 2 3 4 5 6; do squeue -h -j \$SLURM_JOB_ID -o '%i %j' > $work/par.\$i & done
wait")
wait_end "$id" 30 || fail "job inside: $(jq "$id" 'j') output: $(cat "$work/inside.out")"
out=$work/inside.out
[ "$(job_state "$id")" = COMPLETED ] || fail "job inside: $(jq "$id" 'j') output: $(cat "$out")"
has "$out" "^BATCH node=(node[12]) sock=$state/\\1\\.sock\$"
for n in node1 node2; do has "$out" "^[01]: TASK node=$n sock=$state/$n\\.sock\$"; done
has "$out" '^RC_SRUN=0$'
has "$out" "^JobId=$id JobName=inside\$"
has "$out" 'JobState=RUNNING '
has "$out" '^RC_SCONTROL=0$'
has "$out" "^ +$id +[^ ]+ +inside +[^ ]+ +R +"
has "$out" '^RC_SQUEUE=0$'
has "$out" '^RC_SBATCH=0 NEXT=[0-9]+$'
for i in 1 2 3 4 5 6; do has "$work/par.$i" "^$id inside\$"; done # concurrent sessions
next=$(sed -n 's/^RC_SBATCH=0 NEXT=//p' "$out")
wait_end "$next" 30 || fail "the dependent job: $(jq "$next" 'j')"
[ "$(job_state "$next")" = COMPLETED ] || fail "the dependent job: $(jq "$next" 'j')"
has "$work/after.out" '^AFTER ran$'
for f in "$state"/*.log; do
  grep -E 'bad relayed frame|not relayed|not delivered' "$f" && fail "a relay complained in $f"
done

# --- a relayed CLI is served as the uid the kernel reports on the worker's socket -------------
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null &&
  setpriv --reuid=65534 --regid=65534 --clear-groups "$bin/gsched" --version >/dev/null 2>&1; then
  chmod o+x "$tmp" "$state" # the worker's socket, reachable by that user
  as_nobody() { (cd / && GSCHED_SOCKET=$state/node1.sock setpriv --reuid=65534 --regid=65534 --clear-groups "$bin/gsched" "$@"); }
  printf '#!/bin/bash\n#SBATCH -J rootjob\n#SBATCH -o /dev/null\n#SBATCH -w node2\n%s\n' "$(gate_wait rootjob)" > "$work/rootjob.sh"
  rootjob=$(sbatch --parsable "$work/rootjob.sh" 2>&1) || fail "sbatch rootjob: $rootjob"
  wait_start "$rootjob"
  # No job of its own on node1: node1 does not speak for it.
  as_nobody scancel "$rootjob" > "$tmp/cancel.txt" 2>&1 && fail "uid 65534 cancelled root's job"
  has "$tmp/cancel.txt" "uid 65534 has no running job on node1"
  as_nobody sbatch -o /dev/null --wrap true > "$tmp/sbatch.txt" 2>&1 && fail "uid 65534 submitted through node1 with no job there"
  has "$tmp/sbatch.txt" "no running job on node1"
  grep -q "node=node1 session=[0-9]* uid=65534 reason=no_job_on_node relayed cli refused" "$state/gschedd.log" ||
    fail "no log line for the refused relay"
  # A job of its own on node1 (submitted on gschedd's socket): now node1 relays for it.
  chmod o+rx "$gates"
  holder=$( (cd / && GSCHED_SOCKET=$tmp/hidden.sock setpriv --reuid=65534 --regid=65534 --clear-groups \
    "$bin/gsched" sbatch --parsable -w node1 -o /dev/null --wrap "$(gate_wait holder)") 2>&1) ||
    fail "uid 65534 cannot submit on gschedd's socket: $holder"
  wait_start "$holder"
  as_nobody scancel "$rootjob" > "$tmp/cancel.txt" 2>&1 && fail "uid 65534 cancelled root's job"
  has "$tmp/cancel.txt" "permission denied"
  [ "$(job_state "$rootjob")" = RUNNING ] || fail "root's job after uid 65534's scancel: $(jq "$rootjob" 'j')"
  own=$(as_nobody sbatch --parsable --dependency=afterok:"$rootjob" -o /dev/null --wrap true 2>&1) ||
    fail "uid 65534 cannot submit through the relay: $own"
  [ "$(jq "$own" 'j["user"]["uid"]')" = 65534 ] || fail "relayed job's user: $(jq "$own" 'j["user"]')"
  as_nobody scancel "$own" > "$tmp/cancel-own.txt" 2>&1 || fail "uid 65534 cannot cancel its own job: $(cat "$tmp/cancel-own.txt")"
  wait_end "$own" 10 || true
  [ "$(job_state "$own")" = CANCELLED ] || fail "own job after scancel: $(jq "$own" 'j')"
  gate rootjob
  gate holder
  wait_end "$rootjob" 30 || fail "root's job did not complete: $(jq "$rootjob" 'j')"
  wait_end "$holder" 30 || fail "uid 65534's job did not complete: $(jq "$holder" 'j')"
else
  echo "$name: not root (or no setpriv): the other-uid checks are skipped"
fi

# --- a worker killed under a streaming srun: that srun fails, gschedd runs on ---------------
id=$(batch killed "echo \"BATCH node=\$SLURMD_NODENAME\"
srun -l sh -c 'echo \$\$ >> $tmp/tasks.pids; i=0; while [ \$i -lt 300 ]; do echo tick; i=\$((i+1)); sleep 0.1; done'
echo \"RC_SRUN=\$?\" > $work/killed.rc")
out=$work/killed.out
wait_for "the streamed step's output" 20 grep -q '^[01]: tick$' "$out"
node=$(sed -n 's/^BATCH node=//p' "$out")
[[ $node =~ ^node[12]$ ]] || fail "killed job's batch node: '$node'"
kill -9 "$(cat "$state/$node.pid")" || fail "cannot kill $node's worker"
# srun tries to reattach (as after a gschedd restart), but nothing answers at its worker's
# socket any more: it gives up after 10 s.
wait_for "srun to end after its worker was killed" 30 test -s "$work/killed.rc"
has "$work/killed.rc" '^RC_SRUN=[1-9][0-9]*$'
has "$out" '^srun: lost the connection to gschedd; reattaching to StepId='
has "$out" '^srun: error: could not reattach to StepId=.*: nothing answers at the socket$'
has "$out" '^srun: error: '
pid_alive "$(cat "$state/gschedd.pid")" || fail "gschedd died with the worker"
"$bin/gsched" nodes > "$tmp/nodes.txt" 2>&1 || fail "gschedd does not answer: $(cat "$tmp/nodes.txt")"
wait_for "$node to be down" 20 sh -c "\"$bin/gsched\" nodes | grep -qE '^$node +down'"
check_logs
echo "$name: ok"
